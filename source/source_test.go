package source

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckName proves which names may be used under a root.
func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{
		"a.warc.gz": true, "2012/05/a.warc": true, "a..b.warc": true,
		"": false, "/etc/passwd": false, "../a.warc": false, "x/../../a.warc": false,
		"x/./a.warc": false, "x//a.warc": false, "a\x00.warc": false,
		// A backslash is a byte of the name on POSIX, not a separator.
		`x\a.warc`: filepath.Separator == '/', `..\a.warc`: filepath.Separator == '/',
	} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// TestWhere proves the lookup order: locations, then each root in turn,
// then the URL template; and that field 1 is unescaped.
func TestWhere(t *testing.T) {
	r1, r2 := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(r2, "b c.warc"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(r1, "a.warc"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(r2, "a.warc"), []byte("x"), 0o644)
	tests := []struct {
		name  string
		loc   *Locator
		field string
		want  string
		err   string
	}{
		{"first root that has it", &Locator{Roots: []string{r1, r2}}, "a.warc", filepath.Join(r1, "a.warc"), ""},
		{"escaped name found in the second root", &Locator{Roots: []string{r1, r2}}, "b%20c.warc", filepath.Join(r2, "b c.warc"), ""},
		{"missing everywhere", &Locator{Roots: []string{r1, r2}}, "z.warc", "", "file does not exist"},
		{"locations win", &Locator{Roots: []string{r1}, Locations: map[string]string{"a.warc": "http://h/a"}}, "a.warc", "http://h/a", ""},
		{"URL template, path escaped", &Locator{URLTemplate: "http://h:8/warcs/{file}"}, "d/b%20c.warc", "http://h:8/warcs/d/b%20c.warc", ""},
		{"a root before the URL template", &Locator{Roots: []string{r1}, URLTemplate: "http://h:8/{file}"}, "a.warc", filepath.Join(r1, "a.warc"), ""},
		{"the URL template when no root has it", &Locator{Roots: []string{r1}, URLTemplate: "http://h:8/{file}"}, "z.warc", "http://h:8/z.warc", ""},
		{"unsafe name", &Locator{Roots: []string{r1}}, "../a.warc", "", "leaves its root"},
		{"nowhere said", &Locator{}, "a.warc", "", "no --root"},
		{"crawl prefix to its directory", &Locator{Roots: []string{r1}, Prefixes: map[string]string{"jan": r2}}, "jan/b%20c.warc", filepath.Join(r2, "b c.warc"), ""},
		{"crawl prefix to its URL", &Locator{Prefixes: map[string]string{"jan": "http://h/jan/"}}, "jan/d/b%20c.warc", "http://h/jan/d/b%20c.warc", ""},
		{"a prefix is no root: the rest must be beneath it", &Locator{Roots: []string{r1}, Prefixes: map[string]string{"jan": r2}}, "jan/z.warc", "", "no such file"},
		{"a name without a known prefix goes to the roots", &Locator{Roots: []string{r1}, Prefixes: map[string]string{"jan": r2}}, "a.warc", filepath.Join(r1, "a.warc"), ""},
		{"a prefix cannot climb out", &Locator{Prefixes: map[string]string{"jan": r2}}, "jan/../a.warc", "", "leaves its root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.loc.Where(tt.field)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestResolveBeneathRoot proves that symbolic links are followed only while
// they stay beneath the root: a linked directory or file leading out of it
// is refused, one staying inside resolves to its real path, and a root that
// is itself a link is the user's choice.
func TestResolveBeneathRoot(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "real")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(outside, "x.warc"), []byte("outside"), 0o644)
	os.WriteFile(filepath.Join(root, "real", "y.warc"), []byte("inside"), 0o644)
	os.Symlink(outside, filepath.Join(root, "escape"))                            // directory link out
	os.Symlink(filepath.Join(outside, "x.warc"), filepath.Join(root, "out.warc")) // file link out
	os.Symlink("real/y.warc", filepath.Join(root, "in.warc"))                     // file link in
	os.Symlink("real", filepath.Join(root, "alias"))                              // directory link in
	os.Symlink(root, filepath.Join(top, "root-link"))                             // the root itself a link
	realRoot, _ := filepath.EvalSymlinks(root)
	tests := []struct {
		name, root, field, want, err string
	}{
		{"directory link out of the root", root, "escape/x.warc", "", "outside the root"},
		{"file link out of the root", root, "out.warc", "", "outside the root"},
		{"file link inside", root, "in.warc", "real/y.warc", ""},
		{"directory link inside", root, "alias/y.warc", "real/y.warc", ""},
		{"root given as a link", filepath.Join(top, "root-link"), "real/y.warc", "real/y.warc", ""},
		{"missing", root, "none.warc", "", "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Locator{Roots: []string{tt.root}}
			got, err := l.Resolve(tt.field)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Resolve = %+v, %v; want an error saying %q", got, err, tt.err)
				}
				if _, err := l.Open(context.Background(), tt.field, 0, 3); err == nil {
					t.Errorf("Open read a file Resolve refuses")
				}
				return
			}
			if err != nil || got.Rel != tt.want || got.Root != realRoot {
				t.Fatalf("Resolve = %+v, %v; want %s beneath %s", got, err, tt.want, realRoot)
			}
			r, err := l.Open(context.Background(), tt.field, 0, 6)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if b, _ := io.ReadAll(r); string(b) != "inside" {
				t.Errorf("read %q", b)
			}
		})
	}
}

// TestOpenLocalShortFile proves that a file shorter than the manifest says
// gives io.ErrUnexpectedEOF, not a quiet short read.
func TestOpenLocalShortFile(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.warc"), []byte("0123456789"), 0o644)
	l := Locator{Roots: []string{root}}
	r, err := l.Open(context.Background(), "a.warc", 5, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if string(b) != "56789" || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "offset 5") {
		t.Errorf("read %q, err %v", b, err)
	}
}

// TestReadLocations proves the locations file format.
func TestReadLocations(t *testing.T) {
	m, err := ReadLocations(strings.NewReader("# c\n\na.warc /data/a.warc\nb%20c.warc http://h/b\n"), "locs")
	if err != nil || len(m) != 2 || m["a.warc"] != "/data/a.warc" || m["b c.warc"] != "http://h/b" {
		t.Errorf("%v %v", m, err)
	}
	for _, bad := range []string{"a.warc\n", "a.warc x\na.warc y\n"} {
		if _, err := ReadLocations(strings.NewReader(bad), "locs"); err == nil || !strings.Contains(err.Error(), "locs:") {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

// TestLinkSwappedInAfterResolve proves that remembering what Resolve found
// weakens nothing: a directory replaced by a link out of the root after
// its file was first opened is refused on the next open, and a file gone
// since is reported missing.
func TestLinkSwappedInAfterResolve(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(root, "d"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "d", "x.warc"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(root, "gone.warc"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(outside, "x.warc"), []byte("secret"), 0o644)
	l := &Locator{Roots: []string{root}}
	for _, field := range []string{"d/x.warc", "gone.warc"} {
		r, err := l.Open(context.Background(), field, 0, 6)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "gone.warc"))
	tests := []struct{ name, field string }{
		{"directory swapped for a link out of the root", "d/x.warc"},
		{"file removed", "gone.warc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := l.Open(context.Background(), tt.field, 0, 6)
			if err == nil {
				b, _ := io.ReadAll(r)
				r.Close()
				t.Fatalf("read %q, want a refusal", b)
			}
		})
	}
}
