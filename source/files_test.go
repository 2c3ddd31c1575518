package source

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestFiles proves that Files reads what Locator.Open reads, refuses what
// it refuses, and keeps no more files open than its limit.
func TestFiles(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "root")
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	for i, name := range []string{"a.warc", "b.warc", "d/c.warc"} {
		os.WriteFile(filepath.Join(root, name), []byte(strings.Repeat(string(rune('a'+i)), 100)), 0o644)
	}
	os.WriteFile(filepath.Join(top, "outside.warc"), []byte("secret"), 0o644)
	os.Symlink(filepath.Join(top, "outside.warc"), filepath.Join(root, "out.warc"))
	tests := []struct {
		name          string
		limit         int
		field         string
		offset, n     int64
		want, failure string
	}{
		{"a record of a file", 2, "a.warc", 10, 5, "aaaaa", ""},
		{"another record of the file kept open", 2, "a.warc", 95, 5, "aaaaa", ""},
		{"a second file", 2, "d/c.warc", 0, 3, "ccc", ""},
		{"a file past the limit: the least recently used is closed", 2, "b.warc", 1, 2, "bb", ""},
		{"the file closed is opened again", 2, "a.warc", 0, 2, "aa", ""},
		{"a record past the file's end", 2, "a.warc", 98, 5, "aa", "file ends 2 bytes into a 5-byte record"},
		{"a link out of the root", 2, "out.warc", 0, 3, "", "outside the root"},
		{"no file", 2, "none.warc", 0, 3, "", "does not exist"},
	}
	fs := (&Locator{Roots: []string{root}}).Files(2)
	defer fs.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := fs.Open(context.Background(), tt.field, tt.offset, tt.n)
			if err != nil {
				if tt.failure == "" || !strings.Contains(err.Error(), tt.failure) {
					t.Fatalf("Open: %v, want %q", err, tt.failure)
				}
				return
			}
			b, err := io.ReadAll(r)
			r.Close()
			if string(b) != tt.want {
				t.Errorf("read %q, want %q", b, tt.want)
			}
			if tt.failure != "" && (err == nil || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), tt.failure)) {
				t.Errorf("err %v, want %q", err, tt.failure)
			}
			if tt.failure == "" && err != nil {
				t.Errorf("err %v", err)
			}
		})
	}
	if n := fs.files.Len(); n != 2 {
		t.Errorf("%d files kept open, want the limit, 2", n)
	}
	if err := fs.Close(); err != nil || fs.files.Len() != 0 {
		t.Errorf("Close: %v, %d files still open", err, fs.files.Len())
	}
}

// TestFilesConcurrent reads one file from many goroutines at once (run
// with -race): they share its descriptor.
func TestFilesConcurrent(t *testing.T) {
	root := t.TempDir()
	content := []byte(strings.Repeat("0123456789", 1000))
	os.WriteFile(filepath.Join(root, "a.warc"), content, 0o644)
	// Three files, two kept open: files are evicted while others read them.
	for _, name := range []string{"b.warc", "c.warc"} {
		os.WriteFile(filepath.Join(root, name), content, 0o644)
	}
	fs := (&Locator{Roots: []string{root}}).Files(2)
	defer fs.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				off := int64((g*50 + i) % 9000)
				name := []string{"a.warc", "b.warc", "c.warc"}[(g+i)%3]
				r, err := fs.Open(context.Background(), name, off, 100)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(r)
				r.Close()
				if err != nil || string(b) != string(content[off:off+100]) {
					t.Errorf("offset %d: read %q, %v", off, b, err)
				}
			}
		}()
	}
	wg.Wait()
}

// TestFilesClosedByLastReader proves that no descriptor outlives its
// readers: a file evicted, or left by Close, while a record of it is read
// is closed when that record is; a file opened after Close is not kept.
func TestFilesClosedByLastReader(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a.warc", "b.warc"} {
		os.WriteFile(filepath.Join(root, name), []byte("0123456789"), 0o644)
	}
	open := func(fs *Files, name string) (*sharedRecord, *os.File) {
		r, err := fs.Open(context.Background(), name, 0, 5)
		if err != nil {
			t.Fatal(err)
		}
		s := r.(*sharedRecord)
		return s, s.of.File
	}
	closed := func(f *os.File) bool {
		_, err := f.Stat()
		return errors.Is(err, os.ErrClosed)
	}
	tests := []struct {
		name  string
		leave func(fs *Files) // what happens while a.warc is read
	}{
		{"evicted by another file", func(fs *Files) {
			r, _ := open(fs, "b.warc")
			r.Close()
		}},
		{"left by Close", func(fs *Files) { fs.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := (&Locator{Roots: []string{root}}).Files(1)
			defer fs.Close()
			r, f := open(fs, "a.warc")
			tt.leave(fs)
			if closed(f) {
				t.Fatalf("closed while a record of it is read")
			}
			io.ReadAll(r)
			r.Close()
			if !closed(f) {
				t.Errorf("still open after its last reader")
			}
		})
	}
	t.Run("opened after Close", func(t *testing.T) {
		fs := (&Locator{Roots: []string{root}}).Files(1)
		fs.Close()
		r, f := open(fs, "a.warc")
		r.Close()
		if !closed(f) || fs.files.Len() != 0 {
			t.Errorf("a file opened after Close was kept")
		}
	})
}
