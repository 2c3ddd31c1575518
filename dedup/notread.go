package dedup

import (
	"os"
	"path/filepath"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/report"
)

// The files of a collection that a run does not read are counted by kind
// in its report and summary and named in run.log, never passed over in
// silence: a crawler's .open files, indexes, WACZ packages, WARC files
// in a compression the toolchain does not read, anything else.

// fileKind is a kind of file a run does not read.
type fileKind struct {
	kind, kinds, why string
	// match reports whether a base name, in lower case, is of the kind.
	match func(name string) bool
}

// fileKinds are the kinds, the first that matches a name its kind; the
// last takes any name.
var fileKinds = []fileKind{
	{"temporary file of a stopped run", "temporary files of stopped runs",
		"(.tmp-NAME-DIGITS: a new version of NAME a run was writing when it stopped; removed when NAME is next rewritten, or by undo)",
		func(n string) bool { _, ok := atomicfile.TempOf(n); return ok }},
	{"file still being written", "files still being written",
		"(.open: a crawler is still writing them; a run takes each once its writer renames it)",
		func(n string) bool { return strings.HasSuffix(n, ".open") }},
	{"index", "indexes", "(CDX, CDXJ or ZipNum: warcdedup run --cdx INDEX brings one up to date)",
		func(n string) bool {
			n = strings.TrimSuffix(n, ".gz")
			for _, ext := range []string{".cdx", ".cdxj", ".idx", ".loc", ".summary"} {
				if strings.HasSuffix(n, ext) {
					return true
				}
			}
			return false
		}},
	{"WACZ package", "WACZ packages", "(refused: not what its datapackage.json says, or signed without --unsign)",
		func(n string) bool { return strings.HasSuffix(n, ".wacz") }},
	{"WARC or ARC file in another compression", "WARC or ARC files in another compression",
		"(.lz4, .zst, .bz2, .xz: only plain and gzip WARC and ARC files are read)",
		func(n string) bool {
			for _, form := range []string{".warc.", ".arc."} {
				if strings.Contains(n, form) {
					return true
				}
			}
			return false
		}},
	{"other file", "other files", "(not WARC or ARC)", func(string) bool { return true }},
}

// kindOf is the kind of a file a run does not read, and its index in
// fileKinds.
func kindOf(path string) (*fileKind, int) {
	name := strings.ToLower(filepath.Base(path))
	for i := range fileKinds {
		if fileKinds[i].match(name) {
			return &fileKinds[i], i
		}
	}
	return &fileKinds[len(fileKinds)-1], len(fileKinds) - 1
}

// notRead counts the files not read by kind, with their bytes as they are
// now, in the order of fileKinds.
func notRead(inProgress, others []string) []report.FileGroup {
	groups := make([]report.FileGroup, len(fileKinds))
	add := func(path string) {
		k, i := kindOf(path)
		g := &groups[i]
		g.Kind, g.Kinds, g.Why = k.kind, k.kinds, k.why
		g.Files++
		if fi, err := os.Stat(path); err == nil {
			g.Bytes += fi.Size()
		}
	}
	for _, p := range inProgress {
		add(p)
	}
	for _, p := range others {
		add(p)
	}
	var out []report.FileGroup
	for _, g := range groups {
		if g.Files > 0 {
			out = append(out, g)
		}
	}
	return out
}

// notReadNow is a finished job's groups of files with those not read as
// they are now (the files read but not rewritable stay the job's).
func notReadNow(groups []report.FileGroup, inProgress, others []string) []report.FileGroup {
	var out []report.FileGroup
	for _, g := range groups {
		if g.Read {
			out = append(out, g)
		}
	}
	return append(notRead(inProgress, others), out...)
}
