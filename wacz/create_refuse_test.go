package wacz

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateRefuses pins what Create says of WARC files it cannot
// package, and that it writes nothing then: its errors name the file.
func TestCreateRefuses(t *testing.T) {
	dir := t.TempDir()
	a := writeTemp(t, dir, "a.warc.gz", testWARC())
	sub := t.TempDir()
	again := writeTemp(t, sub, "a.warc.gz", testWARC())
	junk := writeTemp(t, dir, "junk.warc", []byte("not a WARC record\r\n\r\n"))
	for _, c := range []struct {
		name  string
		warcs []string
		want  string
		is    error
	}{
		{"two WARC files of one base name", []string{a, again}, "two WARC files named a.warc.gz", nil},
		{"a WARC file that is not there", []string{a, filepath.Join(dir, "gone.warc.gz")}, "gone.warc.gz", fs.ErrNotExist},
		{"a file that is no WARC", []string{a, junk}, "indexing archive/junk.warc: ", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out memFile
			_, err := Create(&out, CreateOptions{WARCs: c.warcs, TempDir: dir})
			if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if len(out.b) != 0 {
				t.Errorf("%d bytes written before the error", len(out.b))
			}
		})
	}
}
