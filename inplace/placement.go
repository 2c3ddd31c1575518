package inplace

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"warcdedup/atomicfile"
	"warcdedup/source"
)

// Placement says where the files are and where their new versions go:
// what a run over files (the rewrite, the restore) gives each Version.
type Placement struct {
	Locator *source.Locator
	// InPlace: each file is replaced; else its new version goes under
	// OutputDir, with the same relative name.
	InPlace   bool
	OutputDir string
	DryRun    bool // everything is checked and measured, nothing written
	// HardLinks lets a file with more than one name be replaced: the name
	// given gets the new version, the others keep the old bytes (and the
	// disk space). By default such a file is refused.
	HardLinks bool
	// SHA256 makes each replacement take the SHA-256 of the new version
	// too (Replaced.SHA256), from the reads of its check: for a crawl
	// index's commit, which records files by their SHA-256. The log's
	// fixity takes another hash (fixity.Default).
	SHA256 bool
	// WantSums, if set, makes the replacement of each file it says yes to
	// (by its name in the collection) take the new version's SHA-256 and
	// CRC-32 (Replaced.SHA256, Replaced.CRC32) from the reads of its
	// check: a WACZ member's staged copy, which its package's rebuild
	// stores with both and names in datapackage.json by the SHA-256,
	// without reading it once more for them.
	WantSums func(name string) bool
	// Sections, if set, says which files (by their name in the
	// collection) are a stretch of another file rather than a file of
	// their own: a WARC member stored in its WACZ package. Such a file is
	// read where it lies, and its new version put at the Section's
	// NewPath, which must not exist (see Section). In place only.
	Sections func(name string) (Section, bool)
	// Create makes the temporary file of a new version
	// (atomicfile.CreateIn if nil); tests replace it to simulate failing
	// disks.
	Create func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error)
	// Files is what the run's workers share about where they write: one
	// for the run (NewFiles).
	Files *Files
	// Warn, if set, receives what the run should know and is no refusal:
	// that the file system cannot exchange names (see Version.Replace).
	Warn func(error)
}

// Files is what a run's workers share about the files they write, by
// where each new version goes: the real path of the file replaced, or the
// path of the new file under the output directory. A manifest can name
// one file twice (another spelling of field 1, a symbolic link beside its
// target, overlapping roots).
type Files struct {
	mu sync.Mutex
	// writing counts the workers writing a new version there: the
	// temporary file one is writing must not be removed by the other as
	// the leftover of an interrupted run.
	writing map[string]int
	// written holds field 1 of the task that put (or is putting) a new
	// version there. Another name of the file is refused: its lines would
	// be read from a version they do not describe, and the log, written in
	// manifest order, would list the two rewrites in the wrong order.
	// One entry per file rewritten in the run, as the log's index holds.
	written map[string]string
	// noExchange: the run was told the file system cannot exchange names.
	noExchange sync.Once
}

// NewFiles returns the Files of a run.
func NewFiles() *Files {
	return &Files{writing: map[string]int{}, written: map[string]string{}}
}

// enter notes a worker writing path; it reports whether it is the only one.
func (rf *Files) enter(path string) bool {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.writing[path]++
	return rf.writing[path] == 1
}

func (rf *Files) leave(path string) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.writing[path]--; rf.writing[path] <= 0 {
		delete(rf.writing, path)
	}
}

// writtenBy returns the name a new version at path was put under in this
// run, if any.
func (rf *Files) writtenBy(path string) (string, bool) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	name, ok := rf.written[path]
	return name, ok
}

// write notes that name puts a new version at path; undo, if not nil,
// forgets it again.
func (rf *Files) write(path, name string) (undo func()) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if other, ok := rf.written[path]; ok {
		if other == name {
			return func() {}
		}
		return nil
	}
	rf.written[path] = name
	return func() {
		rf.mu.Lock()
		defer rf.mu.Unlock()
		delete(rf.written, path)
	}
}

// ErrNamedTwice: the manifest names the file under two names (field 1),
// and it was rewritten under the other one in this run.
var ErrNamedTwice = errors.New("the file was rewritten earlier in this run under another name")

// Section is a file that is Size bytes at Offset of the file at Path (a
// WARC member stored in its WACZ package): its Version reads it there,
// guards the file at Path against writers from its open to the put of the
// new version (Target), and links the new version, checked byte for byte
// against the stretch, under NewPath, where nothing may be (a file there
// is never replaced: the new version is refused). Path itself is never
// written: what the new version is for (a package written anew around
// it) is its caller's.
type Section struct {
	Path         string
	Offset, Size int64
	NewPath      string
	// SHA256, if not "", is the stretch's SHA-256 (hex) as known without
	// reading it (a WACZ member's, as datapackage.json gives it), in the
	// versions of the file at Path that Vouched accepts (nil: none): one
	// whose every such sum was checked against its bytes (the hash
	// stage's comparison of the package's members with its
	// datapackage.json). When the file opened is such a version, guarded
	// from its open to the put of the new version, the log takes it for
	// the stretch's old sum instead of hashing the stretch again (the
	// copied bytes are still compared with it byte for byte).
	SHA256  string
	Vouched func(fi os.FileInfo) error
}

// SectionInfo is the FileInfo of a Section of the file fi describes: its
// size the section's, all else (device, inode, modification and change
// time) the file's. It names the version of the section read, as the
// rewrite hands it over (Replaced.Old), for whatever is keyed by a
// file's version (a cache entry, derived index lines): one that the file
// at Path changes with.
func SectionInfo(fi os.FileInfo, size int64) os.FileInfo {
	return sectionInfo{FileInfo: fi, size: size}
}

type sectionInfo struct {
	os.FileInfo
	size int64
}

func (s sectionInfo) Size() int64 { return s.size }

// checkLinks refuses a file rewritten in place that has other names
// (hard links), unless HardLinks allows it: the other names would keep
// the old bytes, and the space.
func (pl *Placement) checkLinks(path string, info os.FileInfo) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && pl.InPlace && !pl.HardLinks {
		return fmt.Errorf("%s has %d hard links: replacing one name would save nothing, as the other names keep the old bytes (allow it with --hard-links)", path, st.Nlink)
	}
	return nil
}
