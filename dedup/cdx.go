package dedup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/collock"
	"warcdedup/convmap"
	"warcdedup/fixity"
	"warcdedup/internal/fspath"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/migrate"
	"warcdedup/reindex"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// indexesDir keeps, per index that --cdx names (run and undo), what the
// work directory knows of it, in NAME.json (indexState), and a copy of it
// as it was before its last update, in NAME.before/.
//
// An index holds the rewrite log up to some byte of it: an index the work
// directory does not know holds it up to where the job began (run: the
// log's size when the hash stage ran; undo: when the undo began), as the
// user says by naming it; one it updated, whose files are still those it
// wrote (size and SHA-256), up to where that update read. So an update
// applies exactly the entries the index lacks, whatever ran in between (an
// undo without --cdx, a killed run, a rerun), and never one twice. Before
// the new files replace the old ones the state records them as Next: after
// a crash, files equal to Next hold the log up to Next's end.
const indexesDir = "indexes"

// cdxState is what the work directory knows of one index.
type cdxState struct {
	Index string `json:"index"`
	// Current is the version the job last saw or wrote.
	Current *cdxVersion `json:"current,omitempty"`
	// Next is the version an update was replacing it with.
	Next *cdxVersion `json:"next,omitempty"`
}

// cdxVersion is an index's files and the byte of the log it holds the
// log up to.
type cdxVersion struct {
	Files []reindex.FileSum `json:"files"`
	LogTo int64             `json:"log_to"`
}

func (v *cdxVersion) is(files []reindex.FileSum) bool {
	if v == nil || len(v.Files) != len(files) {
		return false
	}
	for i, f := range files {
		g := v.Files[i]
		if g.Size != f.Size || g.SHA256 != f.SHA256 || absOf(g.Path) != absOf(f.Path) {
			return false
		}
	}
	return true
}

func absOf(p string) string {
	if a, err := fspath.Abs(p); err == nil {
		return a
	}
	return p
}

// keptName is the name an index has in indexesDir: its base name after a
// hash of its path, so that indexes of the same name in different
// directories do not meet.
func keptName(index string) string {
	sum := sha256.Sum256([]byte(absOf(index)))
	return hex.EncodeToString(sum[:6]) + "-" + filepath.Base(index)
}

// cdxUpdate brings the indexes of a job (run or undo) up to date with
// the rewrite log, each all or nothing (reindex.InPlace).
type cdxUpdate struct {
	wd    *workdir.Dir
	base  int64    // where an index the work directory does not know holds the log up to
	roots []string // the collections
	show  *progress.Display
	known *reindex.FileSet

	// Problems counts what was reported; Refused names each index left
	// untouched and why.
	Problems       int64
	Refused        []string
	Lines, Changed int64
	Indexes        int
}

// CheckCDX finds out the form of each index --cdx names, for a run or
// an undo to check before it starts: a file that is missing, a ZipNum
// whose summary or block files cannot be found, or an index named twice
// should stop the job before anything is rewritten.
func CheckCDX(indexes []string) error {
	seen := map[string]string{}
	for _, index := range indexes {
		ix, err := reindex.Locate(index)
		if err != nil {
			return fmt.Errorf("--cdx %s: %w", index, err)
		}
		for _, f := range ix.Files() {
			if prev, dup := seen[absOf(f)]; dup {
				return fmt.Errorf("--cdx %s and %s are one index (%s): name it once", prev, index, ix.Path)
			}
			seen[absOf(f)] = index
		}
	}
	return nil
}

// run updates each index.
func (u *cdxUpdate) run(ctx context.Context, indexes []string) error {
	if err := os.MkdirAll(u.wd.File(indexesDir), 0o755); err != nil {
		return err
	}
	var names []string
	for _, c := range u.roots {
		inputs, err := warcsum.Collect([]string{c}, true)
		if err != nil {
			return err
		}
		for _, in := range inputs {
			names = append(names, in.Name)
		}
	}
	u.known = reindex.NewFileSet(names)
	stage := u.show.Start("update indexes", "files", int64(len(indexes)))
	defer stage.Done("")
	for _, index := range indexes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := u.one(index); err != nil {
			var refused *reindex.RefusedError
			if !errors.As(err, &refused) && !errors.Is(err, errIndexRefused) {
				return fmt.Errorf("%s: %w", index, err)
			}
			u.Refused = append(u.Refused, err.Error())
			u.show.Print("warcdedup: error: %v", err)
		}
		u.Indexes++
		stage.Add(1)
	}
	return nil
}

// converted tells whether the job converted ARC files (the work
// directory's conversion map).
func (u *cdxUpdate) converted() bool {
	_, err := os.Stat(u.wd.File(migrate.MapFile))
	return err == nil
}

// conversion is the work directory's conversion map, loaded for one index
// (it counts the lines and records each index has), or nil without one.
func (u *cdxUpdate) conversion() (*reindex.Conversion, error) {
	m, err := convmap.LoadFile(u.wd.File(migrate.MapFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &reindex.Conversion{Map: m}, nil
}

// errIndexRefused wraps an index the update leaves untouched for a reason
// of its own (its form, its log position).
var errIndexRefused = errors.New("left untouched")

// one updates one index.
func (u *cdxUpdate) one(index string) error {
	ix, err := reindex.Locate(index)
	if err != nil {
		return fmt.Errorf("%w: %w", errIndexRefused, err)
	}
	if _, finished, err := reindex.FinishPending(ix); err != nil {
		return err
	} else if finished {
		u.show.Note("warcdedup: %s: completed its replacement, which an interruption had stopped", ix.Path)
	}
	pass, err := u.start(ix)
	if err != nil || pass == nil {
		return err
	}
	return u.rewrite(pass)
}

// cdxPass is one index's update: its state, the copy kept of it, and
// the part of the rewrite log to apply.
type cdxPass struct {
	ix        *reindex.Index
	statePath string
	st        cdxState
	kept      *keptCDX
	from      int64 // the log's offset the index holds the entries up to
	logPath   string
	logSize   int64
}

// start keeps a copy of the index and finds from its state which log
// entries it holds; nil if it is up to date.
func (u *cdxUpdate) start(ix *reindex.Index) (*cdxPass, error) {
	name := keptName(ix.Path)
	pass := &cdxPass{ix: ix, statePath: u.wd.File(filepath.Join(indexesDir, name+".json")), logPath: u.wd.File(workdir.LogFile)}
	var err error
	pass.st, err = workdir.ReadJSON[cdxState](pass.statePath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	st := &pass.st
	st.Index = absOf(ix.Path)

	// The index as it is now, kept, and which log entries it holds.
	kept, files, err := keepCDX(ix, u.wd.File(filepath.Join(indexesDir, name+".before")))
	if err != nil {
		return nil, err
	}
	pass.kept = kept
	pass.from = u.base
	switch {
	case st.Next.is(files):
		st.Current, pass.from = st.Next, st.Next.LogTo
	case st.Current.is(files):
		pass.from = st.Current.LogTo
	default:
		st.Current = &cdxVersion{Files: files, LogTo: u.base}
	}
	st.Next = nil
	if fi, err := os.Stat(pass.logPath); err == nil {
		pass.logSize = fi.Size()
	} else if !errors.Is(err, os.ErrNotExist) {
		kept.drop()
		return nil, err
	}
	switch {
	case pass.from > pass.logSize:
		kept.drop()
		return nil, fmt.Errorf("%w: %s holds the rewrite log up to byte %d, the log %s has %d bytes: the log is not the one the index was updated with", errIndexRefused, ix.Path, pass.from, pass.logPath, pass.logSize)
	case pass.from == pass.logSize && st.Current.is(files) && st.Current.LogTo == pass.logSize && !u.converted():
		kept.drop()
		u.show.Note("warcdedup: %s: up to date", ix.Path)
		return nil, workdir.WriteJSON(pass.statePath, st)
	}
	if err := kept.promote(); err != nil {
		return nil, err
	}
	if err := workdir.WriteJSON(pass.statePath, st); err != nil {
		return nil, err
	}
	return pass, nil
}

// updater is the reindex.Updater of the log's entries from pass.from on,
// followed on disk, its lookups sorted in the work directory.
func (u *cdxUpdate) updater(pass *cdxPass) (reindex.Updater, error) {
	updater := reindex.Updater{Records: &reindex.Files{Roots: u.roots}, Sort: syssort.Sorter{TempDir: u.wd.File(workdir.TmpDir), Compress: syssort.Compressor()}}
	var err error
	updater.Log, err = rewritelog.OpenCatalog(pass.logPath, pass.from, time.Time{})
	if errors.Is(err, os.ErrNotExist) {
		updater.Log = nil
		updater.Moves, err = rewritelog.Load(rewritelog.NewReader(strings.NewReader(""), workdir.LogFile), time.Time{})
	}
	return updater, err
}

// rewrite applies the log's entries (and the conversion, if any) to the
// index in place, its state saved before the commit and after.
func (u *cdxUpdate) rewrite(pass *cdxPass) error {
	updater, err := u.updater(pass)
	if err != nil {
		return err
	}
	// The ARC files converted in place (run --convert-arc): their lines
	// become their WARC files' before the log applies. A line that names
	// the WARC already is left as it is, so an index updated before is
	// not changed again.
	conv, err := u.conversion()
	if err != nil {
		return err
	}
	ix, st := pass.ix, &pass.st
	shown := 0
	p := &reindex.InPlace{
		Updater:    updater,
		Conversion: conv,
		Known:      u.known.Knows,
		Report: func(err error) {
			if shown++; shown <= 10 {
				u.show.Print("warcdedup: error: %v", err)
			}
		},
		BeforeCommit: func(files []reindex.FileSum) error {
			st.Next = &cdxVersion{Files: files, LogTo: pass.logSize}
			return workdir.WriteJSON(pass.statePath, st)
		},
	}
	err = p.Rewrite(pass.kept.Index, ix)
	u.Problems += p.Problems
	if shown > 10 {
		u.show.Print("warcdedup: error: %s: and %d more problems", ix.Path, shown-10)
	}
	if err != nil {
		return err
	}
	u.Lines += p.Stats.Lines
	u.Changed += p.Changed()
	st.Current, st.Next = &cdxVersion{Files: p.Written, LogTo: pass.logSize}, nil
	if err := workdir.WriteJSON(pass.statePath, st); err != nil {
		return err
	}
	if ix.Form == reindex.ZipNum {
		u.show.Note("warcdedup: %s: %s lines, %s changed; %s blocks, %s rewritten", ix.Path,
			progress.Count(p.Stats.Lines), progress.Count(p.Changed()), progress.Count(p.Blocks), progress.Count(p.BlocksRewritten))
	}
	return nil
}

// keepCDX copies the index's files into dir+".new" and returns the
// copy as it will be once renamed to dir (keep.promote), and the files'
// sizes and SHA-256, the summary last (as reindex lists what it writes).
func keepCDX(ix *reindex.Index, dir string) (*keptCDX, []reindex.FileSum, error) {
	k := &keptCDX{dir: dir, tmp: dir + ".new", Index: &reindex.Index{Form: ix.Form}}
	os.RemoveAll(k.tmp)
	if err := os.MkdirAll(k.tmp, 0o755); err != nil {
		return nil, nil, err
	}
	var sums []reindex.FileSum
	for i, f := range ix.Files() {
		name := fmt.Sprintf("%d-%s", i, filepath.Base(f))
		sum, size, err := copyFile(f, filepath.Join(k.tmp, name))
		if err != nil {
			return nil, nil, err
		}
		sums = append(sums, reindex.FileSum{Path: f, Size: size, SHA256: sum})
		path := filepath.Join(dir, name)
		if i == 0 {
			k.Path = path
		} else {
			k.Parts = append(k.Parts, reindex.Part{Name: ix.Parts[i-1].Name, Path: path})
		}
	}
	slices.SortStableFunc(sums, func(a, b reindex.FileSum) int {
		switch {
		case a.Path == ix.Path && b.Path != ix.Path:
			return 1
		case b.Path == ix.Path && a.Path != ix.Path:
			return -1
		}
		return 0
	})
	return k, sums, nil
}

// keptCDX is the copy of an index kept before its update.
type keptCDX struct {
	*reindex.Index
	dir, tmp string
}

// promote makes the copy the one kept, in place of an earlier update's.
func (k *keptCDX) promote() error {
	if err := atomicfile.SyncDir(k.tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(k.dir); err != nil {
		return err
	}
	return os.Rename(k.tmp, k.dir)
}

// drop removes the copy: the index needs no update.
func (k *keptCDX) drop() { os.RemoveAll(k.tmp) }

// copyFile copies a file and returns its SHA-256 and size.
func copyFile(from, to string) (string, int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return "", 0, err
	}
	h := fixity.New(fixity.SHA256)
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return h.Sum(fixity.SHA256), n, err
}

// updateCDX is run's stage: the indexes brought up to date with this
// job's rewrites.
func (r *run) updateCDX(ctx context.Context) (string, error) {
	u := &cdxUpdate{wd: r.wd, base: r.state.LogSizeAtHash, roots: r.opt.Collections, show: r.show}
	if err := u.run(ctx, r.opt.CDX); err != nil {
		return "", err
	}
	r.indexRefused = u.Refused
	note := fmt.Sprintf("%s lines in %d indexes, %s changed", progress.Count(u.Lines), u.Indexes, progress.Count(u.Changed))
	if len(u.Refused) > 0 {
		note += fmt.Sprintf("; %d indexes left untouched (%s problems)", len(u.Refused), progress.Count(u.Problems))
	}
	return note, nil
}

// UpdateCDXSince brings the CDX indexes named up to date with the rewrite
// log from its size from on (roots: the collections the log's files are
// in), shown on show: what run --cdx and undo --cdx do (cdx.go).
func UpdateCDXSince(ctx context.Context, wd *workdir.Dir, indexes, roots []string, from int64, show *progress.Display) (*CDXResult, error) {
	u := &cdxUpdate{wd: wd, base: from, roots: roots, show: show}
	if err := u.run(ctx, indexes); err != nil {
		return nil, err
	}
	return &CDXResult{Indexes: u.Indexes, Refused: len(u.Refused), Lines: u.Lines, Changed: u.Changed, Problems: u.Problems, Reasons: u.Refused}, nil
}

// CDXResult is what UpdateCDX did.
type CDXResult struct {
	Indexes, Refused int
	Lines, Changed   int64
	Problems         int64
	Reasons          []string
}

// UpdateCDX brings indexes up to date with the rewrite log of the
// complete job in workDir (what run --cdx does when the job has nothing
// left to do): an index the work directory does not know is taken to be
// of the files before that job.
func UpdateCDX(ctx context.Context, workDir string, indexes []string, show *progress.Display) (*CDXResult, error) {
	wd, err := workdir.Open(workDir)
	if err != nil {
		return nil, err
	}
	defer wd.Close()
	state, err := readState(wd)
	if err != nil {
		return nil, err
	}
	// Another job on the collection would change what the indexes
	// index while they are brought up to date.
	locks, err := collock.LockJob(state.Params.Collections, indexes)
	if err != nil {
		return nil, err
	}
	defer locks.Release()
	if show == nil {
		show = progress.NewPlain(io.Discard, "warcdedup")
	}
	return UpdateCDXSince(ctx, wd, indexes, state.Params.Collections, state.LogSizeAtHash, show)
}
