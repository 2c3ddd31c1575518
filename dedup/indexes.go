package dedup

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/cdx"
	"warcdedup/internal/progress"
	"warcdedup/reindex"
	"warcdedup/rewritelog"
)

// indexesDir keeps, per CDX/CDXJ index the job updates, the index as it
// was before the job: every update starts from it, so a resumed job never
// applies the log twice, and the archive keeps what it had.
const indexesDir = "indexes"

// updateIndexes brings the CDX/CDXJ indexes of the collection up to date
// with this job's rewrites (warccdx's work): each index file is replaced,
// complete and checked, by its lines with the new offsets, lengths and
// revisit fields; gzip stays gzip.
func (j *Job) updateIndexes(ctx context.Context) (string, error) {
	moves, err := rewritelog.LoadFileFrom(j.wd.File(LogFile), j.state.LogSizeAtHash)
	if errors.Is(err, os.ErrNotExist) {
		// Nothing rewritten, ever: every line stays.
		moves, err = rewritelog.Load(rewritelog.NewReader(strings.NewReader(""), LogFile), time.Time{})
	}
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(j.wd.File(indexesDir), 0o755); err != nil {
		return "", err
	}
	show := j.show.Start("update indexes", "files", int64(len(j.opt.CDX)))
	defer show.Done("")
	var lines, changed, problems int64
	for _, index := range j.opt.CDX {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		u := indexUpdate{index: index, keep: j.wd.File(filepath.Join(indexesDir, keptName(index))), moves: moves, roots: j.opt.Collections,
			report: func(err error) { j.show.Print("warcdedup: error: %s: %v", index, err) }}
		st, err := u.run()
		if err != nil {
			return "", fmt.Errorf("%s: %w", index, err)
		}
		lines += st.Lines
		changed += st.Changed
		problems += st.Problems
		show.Add(1)
	}
	if problems > 0 {
		j.indexProblems = problems
	}
	return fmt.Sprintf("%s lines in %d indexes, %s changed, %s problems", progress.Count(lines), len(j.opt.CDX),
		progress.Count(changed), progress.Count(problems)), nil
}

// keptName is the name an index's copy from before the job has in the work
// directory: its base name and a hash of its path, so that indexes of the
// same name in different directories do not meet.
func keptName(index string) string {
	abs, err := filepath.Abs(index)
	if err != nil {
		abs = index
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:6]) + "-" + filepath.Base(index)
}

// indexUpdate is the update of one index file.
type indexUpdate struct {
	index, keep string
	moves       *rewritelog.Moves
	roots       []string
	report      func(error)
}

type indexStats struct{ Lines, Changed, Problems int64 }

// run keeps the index as it was (once), then writes the updated index
// from that copy over the index file.
func (u *indexUpdate) run() (indexStats, error) {
	if _, err := os.Stat(u.keep); errors.Is(err, os.ErrNotExist) {
		if err := copyFile(u.index, u.keep); err != nil {
			return indexStats{}, err
		}
	}
	in, err := os.Open(u.keep)
	if err != nil {
		return indexStats{}, err
	}
	defer in.Close()
	gz, err := isGzipFile(in)
	if err != nil {
		return indexStats{}, err
	}
	var src io.Reader = in
	if gz {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return indexStats{}, err
		}
		src = zr
	}
	fi, err := os.Stat(u.index)
	if err != nil {
		return indexStats{}, err
	}
	out, err := atomicfile.Create(u.index, fi.Mode().Perm())
	if err != nil {
		return indexStats{}, err
	}
	defer out.Abort()
	var w io.Writer = out
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(out)
		w = zw
	}
	job := &reindex.Job{Updater: reindex.Updater{Moves: u.moves, Records: &reindex.Files{Roots: u.roots}}, Out: cdx.NewWriter(w), Report: u.report}
	if err := job.Index(src, u.index); err != nil {
		return indexStats{}, err
	}
	job.Finish()
	if err := job.Out.Flush(); err != nil {
		return indexStats{}, err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return indexStats{}, err
		}
	}
	if err := out.CommitRenamed(); err != nil {
		return indexStats{}, err
	}
	return indexStats{Lines: job.Stats.Lines, Changed: job.Stats.Moved + job.Stats.Revisits + job.Stats.Restored, Problems: job.Problems}, nil
}

func isGzipFile(f *os.File) (bool, error) {
	var b [2]byte
	n, err := f.ReadAt(b[:], 0)
	if err != nil && err != io.EOF {
		return false, err
	}
	return n == 2 && b[0] == 0x1f && b[1] == 0x8b, nil
}

// copyFile copies a file to a new one, complete or not at all.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := atomicfile.Create(to, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	if err := out.CommitRenamed(); err != nil {
		return err
	}
	return nil
}
