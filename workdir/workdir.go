// Package workdir is the layout of a job's work directory: the names of
// the files each stage writes and the next one reads, one set for
// warcdedup run, undo, assess and cluster (which keeps them per storage
// host, in hosts/NAME/, and per hash range); the lock that one job at a
// time holds on it; and its small files, written whole or not at all.
//
// Each stage's outputs are work files of their own: a stage that is done
// has them, so that an interrupted job resumes after it, and they go
// once the job is complete (unless --keep-work). The work directory keeps
// what undo, the next run and a preservation officer need afterwards: the
// rewrite log, the hash cache (each file's listing and facts as it is),
// the fixity list, the dependencies and the reports.
package workdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"warcdedup/atomicfile"
	"warcdedup/internal/fspath"
)

// The files of a work directory, by the stage that writes them.
const (
	StateFile   = "state.json"       // what was done, to resume (warcdedup run)
	RunLog      = "run.log"          // every run's messages, appended
	RunsDir     = "runs"             // each run's own records, in a directory named after its start
	CacheDir    = "cache"            // warcsum's per-file cache
	TmpDir      = "tmp"              // sort's temporary files, and other scratch files
	HashedFiles = "hashed-files.tsv" // the files the hash stage read, each with its stamp before

	// hash (stage 1)
	BeforeFile = "before.manifest" // warcsum of the collection before; removed once the job is complete
	FactsFile  = "facts.manifest"  // status and media type of its responses; removed once the job is complete (the cache keeps them)
	// MemberLinesDir holds the warcindex lines of each WACZ member as the
	// hash read it, and those derived for its rewritten copy: what a
	// package's rebuild makes its index from (wacz.LineStore). Emptied
	// by each hash stage.
	MemberLinesDir = "member-lines"
	// sort by digest
	ByDigestFile = "by-digest.manifest"       // before.manifest sorted for resolution
	SliceFile    = "by-digest-slice.manifest" // a job on a slice of the digests: by-digest.manifest with only its lines
	// join the index (with a crawl index)
	IndexOriginalsFile = "index-originals.manifest" // the index's originals of the crawl's digests
	JoinedFile         = "joined.manifest"          // by-digest.manifest and those originals, on digest
	// resolve and number (stages 2 and 3)
	NumberedFile = "numbered.manifest" // warccollres -p: classes and copy numbers, on digest
	// sort by file
	ByFileFile  = "by-file.manifest"       // the same, sorted on file and offset
	FactsByFile = "facts-by-file.manifest" // facts.manifest sorted on file and offset
	// rewrite (stage 4)
	LogFile   = "rewrite.log"    // warcrefs' log, appended across runs
	SavedFile = "saved.tsv"      // per record rewritten: file offset old-length new-length; removed once the job is complete (the log has them)
	ApartFile = "apart.manifest" // the duplicates the rewrite kept apart from their original (numbered, on file)
	// resolve the collisions (after a resolve that read nothing)
	CollideFile         = "collide.manifest"         // the digests kept apart, numbered again byte for byte, on digest
	CollideOrigins      = "collide-origins.tsv"      // each line kept apart: file, offset now, offset and length at the hash
	CollideByFile       = "collide-by-file.manifest" // collide.manifest on file and offset
	SavedCollisionsFile = "saved-collisions.tsv"     // as saved.tsv, of the second rewrite, at the hash stage's offsets
	ApartAgainFile      = "apart-again.manifest"     // what the second rewrite still kept apart (nothing, if the resolution is right)
	// hash again and verify (stage 5)
	AfterFile      = "after.manifest"  // warcsum of the collection after; removed once the job is complete (its lines are in CacheDir)
	AfterFilesFile = "after-files.tsv" // with an index: each file after the run, for the commit
	Violations     = "violations.txt"  // what verification found lost (nothing)
	// ResolvedOriginalsFile holds the committed originals the resolution
	// kept (with an index), as their records spell them: what
	// verification checks the crawl's revisits against.
	ResolvedOriginalsFile = "index-originals-resolved.manifest"
	// account
	FixityFile = "fixity.tsv"  // per replaced file: sizes and SHA-256 before and after
	DepsFile   = "deps.tsv"    // file, file holding originals it needs, count
	StatsFile  = "stats.json"  // the report's figures
	ReportFile = "report.html" // the report
	// commit (with a crawl index): the crawl's responses after the run, as
	// they are and on digest, which join the index as originals.
	CrawlOriginalsFile     = "crawl-originals.manifest"
	CrawlOriginalsByDigest = "crawl-originals-by-digest.manifest"

	// undo
	UndoManifest   = "undo.manifest"            // warcsum of the collection when the undo started
	UndoByCapture  = "undo-by-capture.manifest" // the same, sorted on URI and date
	UndoByDigest   = "undo-by-digest.manifest"  // and on digest (with --all, or a crawl's)
	UndoFixityFile = "undo-fixity.tsv"          // per file the undo replaced: sizes and SHA-256 before and after
	UndoStatsFile  = "undo.json"                // the undo's figures
	// A crawl's undo: the index's originals of the crawl's digests, and
	// those with the crawl's own lines, on digest.
	UndoIndexOriginals = "undo-index-originals.manifest"
	UndoJoined         = "undo-joined.manifest"
)

// A dry run with --convert-arc (assess --convert-arc) estimates what
// converting the ARC files first would do: the listing on file, on digest
// and saved.tsv as the converted collection's would be, which its account
// reads. (A run's conversion keeps its proofs and map where package
// migrate puts them: convert/ and conversion.map.)
const (
	ConvertedByFile   = "by-file-converted.manifest"
	ConvertedNumbered = "numbered-converted.manifest"
	ConvertedSaved    = "saved-converted.tsv"
)

// Dir is a job's work directory. One job at a time uses it: Open takes a
// lock that a second warcdedup on the same directory finds taken.
type Dir struct {
	Path string
	lock *os.File
}

// Default is where a collection's work directory goes when none is
// given: beside it, named after it ("/data/crawl-1" -> "/data/crawl-1.warcdedup").
func Default(collection string) string {
	abs, err := fspath.Abs(collection)
	if err != nil {
		abs = collection
	}
	return filepath.Clean(abs) + ".warcdedup"
}

// Open creates (if need be) and locks the work directory at path, and
// removes what a killed run left in it: the temporary files of the files
// it was writing, which no run holding the lock can be writing.
func Open(path string) (*Dir, error) {
	for _, d := range []string{path, filepath.Join(path, CacheDir), filepath.Join(path, TmpDir)} {
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
	d := &Dir{Path: path, lock: f}
	d.removeLeftovers()
	return d, nil
}

// removeLeftovers removes the temporary files of a run that was killed:
// every file of tmp (sort's), and the atomicfile temporary files
// (".tmp-*") beside the work files, the cache's entries and each run's
// records. Subdirectories with work directories of their own (assess
// --sample's, assess --cdx's) are left to their own opening.
func (d *Dir) removeLeftovers() {
	entries, _ := os.ReadDir(d.File(TmpDir))
	for _, e := range entries {
		os.RemoveAll(filepath.Join(d.File(TmpDir), e.Name()))
	}
	dirs := []string{d.Path, d.File(CacheDir), d.File(MemberLinesDir)}
	if runs, err := os.ReadDir(d.File(RunsDir)); err == nil {
		for _, r := range runs {
			if r.IsDir() {
				dirs = append(dirs, filepath.Join(d.File(RunsDir), r.Name()))
			}
		}
	}
	for _, dir := range dirs {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasPrefix(e.Name(), atomicfile.TempPrefix) {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// File is the path of one of the work directory's files.
func (d *Dir) File(name string) string { return filepath.Join(d.Path, name) }

// Close releases the lock. Sort's temporary files are removed: whatever
// stopped the job, nothing of it stays in $TMPDIR or here but its results.
func (d *Dir) Close() error {
	os.RemoveAll(d.File(TmpDir))
	os.MkdirAll(d.File(TmpDir), 0o755)
	return d.lock.Close()
}

// WriteFile writes a small file whole or not at all (synced, then
// renamed), its directory made if need be.
func WriteFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.CommitRenamed()
}

// WriteJSON writes v, indented, as WriteFile does.
func WriteJSON(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(name, append(data, '\n'))
}

// ReadJSON reads a JSON file into a T; an error names the file (a missing
// one is os.ErrNotExist).
func ReadJSON[T any](name string) (T, error) {
	var v T
	data, err := os.ReadFile(name)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}
