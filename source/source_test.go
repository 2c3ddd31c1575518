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
		"x/./a.warc": false, "x//a.warc": false, `x\a.warc`: false, "a\x00.warc": false,
	} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// TestWhere proves the lookup order: locations, then the URL template,
// then each root in turn; and that field 1 is unescaped.
func TestWhere(t *testing.T) {
	r1, r2 := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(r2, "b c.warc"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(r1, "a.warc"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(r2, "a.warc"), []byte("x"), 0o644)
	tests := []struct {
		name  string
		loc   Locator
		field string
		want  string
		err   string
	}{
		{"first root that has it", Locator{Roots: []string{r1, r2}}, "a.warc", filepath.Join(r1, "a.warc"), ""},
		{"escaped name found in the second root", Locator{Roots: []string{r1, r2}}, "b%20c.warc", filepath.Join(r2, "b c.warc"), ""},
		{"missing everywhere", Locator{Roots: []string{r1, r2}}, "z.warc", "", "file does not exist"},
		{"locations win", Locator{Roots: []string{r1}, Locations: map[string]string{"a.warc": "http://h/a"}}, "a.warc", "http://h/a", ""},
		{"URL template, path escaped", Locator{URLTemplate: "http://h:8/warcs/{file}"}, "d/b%20c.warc", "http://h:8/warcs/d/b%20c.warc", ""},
		{"unsafe name", Locator{Roots: []string{r1}}, "../a.warc", "", "leaves its root"},
		{"nowhere said", Locator{}, "a.warc", "", "no --root"},
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
