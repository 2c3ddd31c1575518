// Package rewritetest holds what the tests of the rewrite (package refs)
// and of undo (package restore) share: generated collections and their
// manifests, snapshots of directories compared file by file, and the
// Originals of a manifest.
package rewritetest

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/scripts/gen"
	"warcdedup/source"
	"warcdedup/warcsum"
)

// Coll is a generated collection and the manifests warcrefs reads for it.
type Coll struct {
	Dir string
	Res *gen.Result
	// All is the whole numbered manifest: the originals manifest.
	All []manifest.Line
	// Dups are the copy > 1 lines of its WARC files, sorted by file and
	// offset: what warcrefs is given.
	Dups []manifest.Line
	// ARCDups are the copy > 1 lines of its ARC files.
	ARCDups []manifest.Line
	// Lines is the whole numbered manifest sorted by file and offset:
	// what the pipeline gives warcrefs (it rewrites only the duplicates).
	Lines []manifest.Line
}

func isARCName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".arc") || strings.HasSuffix(n, ".arc.gz")
}

// Generate writes a collection into a new temporary directory.
func Generate(t testing.TB, cfg gen.Config) *Coll {
	t.Helper()
	dir := t.TempDir()
	res, err := gen.Write(dir, cfg)
	if err != nil {
		t.Fatalf("gen.Write: %v", err)
	}
	c := &Coll{Dir: dir, Res: res, All: res.Expected}
	for _, l := range res.Expected {
		if l.Copy <= 1 {
			continue
		}
		if isARCName(l.File) {
			c.ARCDups = append(c.ARCDups, l)
		} else {
			c.Dups = append(c.Dups, l)
		}
	}
	SortByFile(c.Dups)
	SortByFile(c.ARCDups)
	c.Lines = slices.Clone(res.Expected)
	SortByFile(c.Lines)
	if len(c.Dups) == 0 {
		t.Fatalf("the collection has no duplicates in WARC files: %s", res.Summary())
	}
	return c
}

// SortByFile sorts lines by file and offset, as warcrefs reads them.
func SortByFile(lines []manifest.Line) {
	slices.SortStableFunc(lines, func(a, b manifest.Line) int { return manifest.ByFile.Compare(&a, &b) })
}

// ManifestText writes lines in manifest form.
func ManifestText(lines []manifest.Line) []byte {
	var b []byte
	for i := range lines {
		b = lines[i].Append(b)
	}
	return b
}

// ParseManifest reads a manifest's lines.
func ParseManifest(t testing.TB, text []byte) []manifest.Line {
	t.Helper()
	var lines []manifest.Line
	r := manifest.NewReader(bytes.NewReader(text), "manifest")
	for {
		l, err := r.Next()
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
}

// Originals makes the Originals of a numbered manifest (any order),
// reading originals under roots.
func Originals(t testing.TB, all []manifest.Line, roots ...string) *originals.Originals {
	t.Helper()
	sorted := slices.Clone(all)
	slices.SortStableFunc(sorted, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) })
	text := ManifestText(sorted)
	tab, err := manifest.NewTable(bytes.NewReader(text), int64(len(text)), "originals.manifest")
	if err != nil {
		t.Fatal(err)
	}
	o, err := originals.New(&source.Locator{Roots: roots}, tab)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Captures makes the manifest table of lines sorted on URI and date, as
// undo looks originals up in it.
func Captures(t testing.TB, lines []manifest.Line) *manifest.Table {
	t.Helper()
	byCapture := slices.Clone(lines)
	slices.SortStableFunc(byCapture, func(a, b manifest.Line) int { return manifest.ByCapture.Compare(&a, &b) })
	text := ManifestText(byCapture)
	captures, err := manifest.NewTableBy(bytes.NewReader(text), int64(len(text)), "captures.manifest", manifest.CaptureKey)
	if err != nil {
		t.Fatal(err)
	}
	return captures
}

// Snapshot reads every file under dir, temporary files included, by path
// relative to dir.
func Snapshot(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// SameFiles reports every difference between two snapshots.
func SameFiles(t testing.TB, what string, got, want map[string][]byte) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: %s is missing", what, name)
		case !bytes.Equal(g, w):
			t.Errorf("%s: %s differs (%d bytes, want %d; first difference at %d)", what, name, len(g), len(w), FirstDiff(g, w))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: unexpected file %s", what, name)
		}
	}
}

// FirstDiff is the offset of the first byte in which a and b differ.
func FirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TempFiles lists the files under dir whose name starts with the
// temporary prefix.
func TempFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), atomicfile.TempPrefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// CopyDir copies the regular files under src into dst.
func CopyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// WarcsumDir hashes every archive under dir as `warcsum -r`.
func WarcsumDir(t testing.TB, dir string) []byte {
	t.Helper()
	inputs, err := warcsum.Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	r := warcsum.Runner{Jobs: 2}
	r.OnFileError = func(in warcsum.Input, err error) { t.Errorf("warcsum %s: %v", in.Name, err) }
	var out bytes.Buffer
	if _, err := r.Run(inputs, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
