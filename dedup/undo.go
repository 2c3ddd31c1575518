package dedup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/digest"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/refs"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
)

// The files an undo adds to the work directory.
const (
	UndoManifest   = "undo.manifest"            // warcsum of the collection when the undo started
	UndoByCapture  = "undo-by-capture.manifest" // the same, sorted on URI and date
	UndoByDigest   = "undo-by-digest.manifest"  // and on digest (with All)
	UndoFixityFile = "undo-fixity.tsv"          // per file the undo replaced: sizes and SHA-256 before and after
	UndoStatsFile  = "undo.json"                // the undo's figures
)

// UndoOptions are what to undo and how.
type UndoOptions struct {
	// Paths are collections, directories or files in them: the revisits
	// in those files are restored.
	Paths []string
	// WorkDir is the job's work directory; "" finds it beside the
	// collection that holds the first path (COLLECTION.warcdedup).
	WorkDir string
	// All also makes other tools' revisits whole records.
	All        bool
	HardLinks  bool
	Jobs       int
	SortMemory string
	Display    *progress.Display
}

// UndoResult is what an undo did.
type UndoResult struct {
	WorkDir     string
	Collections []string
	Files       int // files with revisits to restore
	Stats       refs.RestoreStats
	Took        time.Duration
	NothingToDo bool     // no revisit of this toolchain's left in those files
	Refused     []string // files left untouched, and why
	Exit        int
	ExitReason  []string
}

// Undo turns the revisits this toolchain wrote in the files named back into
// the records they replaced (refs.Restorer), in place: it hashes the
// collection as it is now (known files from the cache), sorts that manifest
// on URI and date to find each original, restores, and writes a fixity
// list of the files it replaced. Run again after an interruption, it
// restores what is left.
func Undo(ctx context.Context, opt UndoOptions) (*UndoResult, error) {
	start := time.Now()
	if len(opt.Paths) == 0 {
		return nil, errors.New("nothing named to undo")
	}
	var err error
	if opt.WorkDir == "" {
		if opt.WorkDir, err = findWorkDir(opt.Paths[0]); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(opt.WorkDir, StateFile)); err != nil {
		return nil, fmt.Errorf("%s is no work directory of warcdedup run (%v)", opt.WorkDir, err)
	}
	wd, err := OpenWorkDir(opt.WorkDir)
	if err != nil {
		return nil, err
	}
	defer wd.Close()
	state, err := wd.readState()
	if err != nil {
		return nil, err
	}
	collections := state.Params.Collections
	files, err := filesIn(opt.Paths, collections)
	if err != nil {
		return nil, err
	}
	runLog, err := os.OpenFile(wd.File(RunLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer runLog.Close()
	show := opt.Display
	if show == nil {
		show = progress.NewPlain(io.Discard, "warcdedup")
	}
	show.Tee(runLog)
	defer show.Tee(nil)
	res := &UndoResult{WorkDir: wd.Path, Collections: collections}

	// Which files hold revisits to restore.
	var written *rewritelog.Moves
	if written, err = rewritelog.LoadFile(wd.File(LogFile), time.Time{}); err != nil {
		if !errors.Is(err, os.ErrNotExist) || !opt.All {
			return nil, fmt.Errorf("the rewrite log says which revisits this toolchain wrote: %w", err)
		}
		written = nil
	}
	var todo []string
	if opt.All {
		todo = files
	} else {
		logged, err := refs.Files(written)
		if err != nil {
			return nil, err
		}
		todo = intersect(logged, files)
	}
	res.Files = len(todo)
	if len(todo) == 0 {
		res.NothingToDo = true
		res.Took = time.Since(start)
		return res, nil
	}
	show.Note("warcdedup: undoing the deduplication of %d files of %s, work directory %s", len(todo), strings.Join(collections, ", "), wd.Path)

	// The collection as it is now, and where each capture is.
	algo, err := digest.ParseLabel(state.Params.Algorithm)
	if err != nil {
		algo = digest.SHA1
	}
	j := &Job{opt: Options{Collections: collections, Algorithm: algo, Jobs: max(opt.Jobs, 1), SortMemory: opt.SortMemory}, wd: wd, show: show}
	log, err := refs.OpenLog(wd.File(LogFile))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	from := log.Size()
	log.Since(from) // the manifest is of the files as they are now
	if _, err := j.sum(ctx, UndoManifest, "", "hash"); err != nil {
		return nil, fmt.Errorf("hash: %w", err)
	}
	if err := j.sortFile(ctx, UndoManifest, UndoByCapture, manifest.ByCapture.Command); err != nil {
		return nil, fmt.Errorf("sort: %w", err)
	}
	captures, err := manifest.OpenTableBy(wd.File(UndoByCapture), manifest.CaptureKey)
	if err != nil {
		return nil, err
	}
	defer captures.Close()
	var tables []*manifest.Table
	if opt.All {
		if err := j.sortFile(ctx, UndoManifest, UndoByDigest, manifest.ByDigest.Command); err != nil {
			return nil, fmt.Errorf("sort: %w", err)
		}
		t, err := manifest.OpenTable(wd.File(UndoByDigest))
		if err != nil {
			return nil, err
		}
		defer t.Close()
		tables = append(tables, t)
	}
	originals, err := refs.NewOriginals(j.locator(), log, tables...)
	if err != nil {
		return nil, err
	}

	// Restore.
	var total int64
	for _, in := range j.inputsOf(todo) {
		total += in
	}
	stage := show.Start("restore", "bytes", total)
	var prog refs.Progress
	r := refs.Restorer{Roots: collections, Captures: captures, Originals: originals, Written: written, All: opt.All,
		HardLinks: opt.HardLinks, Jobs: j.opt.Jobs, Progress: &prog,
		Refused: func(err error) {
			res.Refused = append(res.Refused, err.Error())
			show.Print("warcdedup: error: %v", err)
		},
		Warn: func(err error) { show.Note("warcdedup: warning: %v", err) }}
	stop := follow(&prog.Bytes, stage)
	res.Stats, err = r.Run(ctx, todo, log)
	stop()
	stage.Done(fmt.Sprintf("%s records restored in %s files", progress.Count(res.Stats.Records+res.Stats.Foreign), progress.Count(res.Stats.Restored)))
	if cerr := log.Close(); err == nil {
		err = cerr
	}
	// The collection changed: a later run starts a new job on it, from
	// its first stage (the manifests kept describe the files before).
	*state = State{Params: state.Params}
	if serr := wd.writeState(state); err == nil {
		err = serr
	}
	if _, ferr := writeFixity(wd.File(LogFile), from, wd.File(UndoFixityFile)); err == nil {
		err = ferr
	}
	res.Took = time.Since(start)
	if res.Stats.Refused > 0 {
		res.Exit = 1
		res.ExitReason = append([]string{fmt.Sprintf("%s files refused and left untouched", progress.Count(res.Stats.Refused))}, first(res.Refused, 10)...)
	}
	if werr := writeJSON(wd.File(UndoStatsFile), res); err == nil {
		err = werr
	}
	return res, err
}

// inputsOf returns the sizes of the named files (escaped field-1 names).
func (j *Job) inputsOf(names []string) []int64 {
	var sizes []int64
	loc := j.locator()
	for _, n := range names {
		local, err := loc.Resolve(n)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(local.Path()); err == nil {
			sizes = append(sizes, fi.Size())
		}
	}
	return sizes
}

// FindWorkDir is findWorkDir, for the commands that look a file up in its job (warcdedup show).
func FindWorkDir(path string) (string, error) { return findWorkDir(path) }

// findWorkDir finds the work directory beside the collection that holds
// path: the first COLLECTION.warcdedup, from path up, whose job was on
// COLLECTION.
func findWorkDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		wd := DefaultWorkDir(d)
		if st, err := readStateFile(filepath.Join(wd, StateFile)); err == nil && slices.Contains(st.Params.Collections, d) {
			return wd, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("%s: no work directory of warcdedup run beside it or a directory above it (give --work-dir)", path)
		}
	}
}

// filesIn lists the WARC and ARC files at the paths (collections,
// directories or files in them) by their names relative to their
// collection, escaped as manifest field 1, sorted.
func filesIn(paths, collections []string) ([]string, error) {
	var names []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		var root string
		for _, c := range collections {
			if abs == c || strings.HasPrefix(abs, c+string(filepath.Separator)) {
				root = c
			}
		}
		if root == "" {
			return nil, fmt.Errorf("%s is in none of the job's collections (%s)", p, strings.Join(collections, ", "))
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			rel, _ := filepath.Rel(root, abs)
			names = append(names, manifest.EscapeFile(filepath.ToSlash(rel)))
			continue
		}
		inputs, err := warcsum.Collect([]string{abs}, true)
		if err != nil {
			return nil, err
		}
		for _, in := range inputs {
			rel, _ := filepath.Rel(root, filepath.Join(abs, filepath.FromSlash(in.Name)))
			names = append(names, manifest.EscapeFile(filepath.ToSlash(rel)))
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// intersect returns the names of a that are in b.
func intersect(a, b []string) []string {
	in := map[string]bool{}
	for _, n := range b {
		in[n] = true
	}
	var out []string
	for _, n := range a {
		if in[n] {
			out = append(out, n)
		}
	}
	return out
}
