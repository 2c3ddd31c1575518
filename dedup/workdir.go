// Package dedup is the whole deduplication job on a collection, as the
// operator's command warcdedup runs it: hash, sort, resolve and number,
// sort again, rewrite in place, hash again and prove nothing was lost, then
// account for it. Each stage calls the package that owns it (warcsum,
// collres, refs, verify) and the system sort. A work directory keeps every
// stage's output, so that an interrupted job resumes where it stopped, and
// what a preservation officer needs afterwards: the manifests, the rewrite
// log, a fixity list, the dependencies between files, and the report.
package dedup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"warcdedup/atomicfile"
)

// WorkDir is a job's work directory. One job at a time uses it: Open takes
// a lock that a second warcdedup on the same directory finds taken.
type WorkDir struct {
	Path string
	lock *os.File
}

// The files of a work directory.
const (
	StateFile    = "state.json"             // what was done, to resume
	HashedFiles  = "hashed-files.tsv"       // the files the hash stage read, each with its stamp before
	BeforeFile   = "before.manifest"        // warcsum of the collection before
	FactsFile    = "facts.manifest"         // status and media type of its responses
	ByDigestFile = "by-digest.manifest"     // before.manifest sorted for resolution
	FactsByFile  = "facts-by-file.manifest" // facts.manifest sorted on file and offset
	JoinedFile   = "joined.manifest"        // with an index: by-digest.manifest and the index's originals of its digests
	NumberedFile = "numbered.manifest"      // warccollres -p: classes and copy numbers, on digest
	ByFileFile   = "by-file.manifest"       // the same, sorted on file and offset
	LogFile      = "rewrite.log"            // warcrefs' log, appended across runs
	SavedFile    = "saved.tsv"              // per record rewritten: file offset old-length new-length
	AfterFile    = "after.manifest"         // warcsum of the collection after
	Violations   = "violations.txt"         // what verification found lost (nothing)
	FixityFile   = "fixity.tsv"             // per replaced file: sizes and SHA-256 before and after
	DepsFile     = "deps.tsv"               // file, file holding originals it needs, count
	StatsFile    = "stats.json"             // the report's figures
	ReportFile   = "report.html"            // the report
	RunLog       = "run.log"                // every run's messages, appended
	RunsDir      = "runs"                   // each run's own records, in a directory named after its start
	cacheDir     = "cache"                  // warcsum's per-file cache
	tmpDir       = "tmp"                    // sort's temporary files
)

// DefaultWorkDir is where a collection's work directory goes when none is
// given: beside it, named after it ("/data/crawl-1" -> "/data/crawl-1.warcdedup").
func DefaultWorkDir(collection string) string {
	abs, err := filepath.Abs(collection)
	if err != nil {
		abs = collection
	}
	return filepath.Clean(abs) + ".warcdedup"
}

// OpenWorkDir creates (if need be) and locks the work directory at path,
// and removes what a killed run left in it: the temporary files of the
// files it was writing, which no run holding the lock can be writing.
func OpenWorkDir(path string) (*WorkDir, error) {
	for _, d := range []string{path, filepath.Join(path, cacheDir), filepath.Join(path, tmpDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("the work directory %s cannot be made: %w (name one on a file system you may write with --work-dir)", path, err)
		}
	}
	f, err := os.OpenFile(filepath.Join(path, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: another warcdedup is using this work directory", path)
		}
		return nil, fmt.Errorf("%s: locking the work directory: %w", path, err)
	}
	w := &WorkDir{Path: path, lock: f}
	w.removeLeftovers()
	return w, nil
}

// removeLeftovers removes the temporary files of a run that was killed:
// every file of tmp (sort's), and the atomicfile temporary files
// (".tmp-*") beside the work files, the cache's entries and each run's
// records. Subdirectories with work directories of their own (assess
// --sample's, assess --cdx's) are left to their own opening.
func (w *WorkDir) removeLeftovers() {
	entries, _ := os.ReadDir(w.File(tmpDir))
	for _, e := range entries {
		os.RemoveAll(filepath.Join(w.File(tmpDir), e.Name()))
	}
	dirs := []string{w.Path, w.File(cacheDir)}
	if runs, err := os.ReadDir(w.File(RunsDir)); err == nil {
		for _, r := range runs {
			if r.IsDir() {
				dirs = append(dirs, filepath.Join(w.File(RunsDir), r.Name()))
			}
		}
	}
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasPrefix(e.Name(), atomicfile.TempPrefix) {
				os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
}

// File is the path of one of the work directory's files.
func (w *WorkDir) File(name string) string { return filepath.Join(w.Path, name) }

// Close releases the lock. Sort's temporary files are removed: whatever
// stopped the job, nothing of it stays in $TMPDIR or here but its results.
func (w *WorkDir) Close() error {
	os.RemoveAll(w.File(tmpDir))
	os.MkdirAll(w.File(tmpDir), 0o755)
	return w.lock.Close()
}

// State is what a job has done so far, kept in state.json.
type State struct {
	// Params are what the job's outputs depend on: a job with other
	// parameters starts again from the first stage.
	Params Params `json:"params"`
	// Done lists the stages finished, in order.
	Done []string `json:"done"`
	// Complete is set when a real (not dry) run finished every stage.
	Complete bool `json:"complete"`
	// LogSizeAtHash is the size of the rewrite log when the hash stage
	// started: the manifests give offsets in the files as they were then,
	// so the rewrite moves them only by the entries logged since (this
	// job's).
	LogSizeAtHash int64 `json:"log_size_at_hash"`
	// Stamps of the collection's files when the job completed: a later
	// run finding them all unchanged has nothing to do.
	Stamps map[string]string `json:"stamps,omitempty"`
}

// Params are the parameters of a job that its outputs depend on.
type Params struct {
	Collections []string `json:"collections"`
	Algorithm   string   `json:"algorithm"`
	Policy      string   `json:"policy"`
	DryRun      bool     `json:"dry_run"`
	Index       string   `json:"index,omitempty"` // a crawl index's directory
	Crawl       string   `json:"crawl,omitempty"` // the crawl's name in it
	// Files identifies the subset of files a job was restricted to
	// (Options.Files; "" for all): a job on a sample is another job.
	Files string `json:"files,omitempty"`
}

func (p Params) equal(q Params) bool {
	if len(p.Collections) != len(q.Collections) {
		return false
	}
	for i := range p.Collections {
		if p.Collections[i] != q.Collections[i] {
			return false
		}
	}
	return p.Algorithm == q.Algorithm && p.Policy == q.Policy && p.DryRun == q.DryRun && p.Index == q.Index && p.Crawl == q.Crawl &&
		p.Files == q.Files
}

// filesKey identifies a set of file names: the SHA-256 of the names in
// order, "" for no restriction.
func filesKey(files map[string]bool) string {
	if files == nil {
		return ""
	}
	names := make([]string, 0, len(files))
	for name, in := range files {
		if in {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		h.Write([]byte(name))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readState reads state.json; a missing file is a new job.
func (w *WorkDir) readState() (*State, error) {
	s, err := readStateFile(w.File(StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return &State{}, nil
	}
	return s, err
}

// readStateFile reads a state.json.
func readStateFile(name string) (*State, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// writeState replaces state.json atomically.
func (w *WorkDir) writeState(s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(w.File(StateFile), append(data, '\n'))
}

// writeFile writes a small file atomically.
func writeFile(name string, data []byte) error {
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	if err := f.CommitRenamed(); err != nil {
		return err
	}
	return nil
}

// done reports whether a stage is finished.
func (s *State) done(stage string) bool {
	for _, d := range s.Done {
		if d == stage {
			return true
		}
	}
	return false
}
