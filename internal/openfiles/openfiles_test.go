package openfiles

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCacheClosesEachFileOnce proves when a kept file's descriptor is
// closed: never while a reader holds it, by its last reader once it is
// evicted (the limit), dropped or left by Close, at once when none holds
// it; and a file kept after Close is its reader's to close.
func TestCacheClosesEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *os.File {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	closed := func(f *File) bool {
		_, err := f.Stat()
		return errors.Is(err, os.ErrClosed)
	}
	for _, tc := range []struct {
		name string
		// leave makes c let go of the file "a", held by a reader.
		leave func(c *Cache)
	}{
		{"evicted by another file", func(c *Cache) { c.Keep("b", "b", open("b")).Release() }},
		{"dropped", func(c *Cache) { c.Drop("a") }},
		{"left by Close", func(c *Cache) { c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(1)
			defer c.Close()
			a := c.Keep("a", "a", open("a"))
			if c.Take("a") != a {
				t.Fatal("Take did not give the file kept")
			}
			a.Release() // of two readers, one is done
			tc.leave(c)
			if closed(a) {
				t.Fatal("closed while a reader holds it")
			}
			if c.Take("a") != nil {
				t.Error("still kept after it was let go")
			}
			a.Release()
			if !closed(a) {
				t.Error("open after its last reader")
			}
		})
	}
	t.Run("kept twice at once", func(t *testing.T) {
		c := New(2)
		defer c.Close()
		first := c.Keep("a", "a", open("a"))
		second := open("a")
		if got := c.Keep("a", "a", second); got != first {
			t.Error("a second file kept under the key of one kept")
		}
		if _, err := second.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Error("the second file is left open")
		}
		first.Release()
		first.Release()
		if closed(first) || c.Len() != 1 {
			t.Error("a kept file with no reader was closed")
		}
	})
	t.Run("kept after Close", func(t *testing.T) {
		c := New(2)
		c.Close()
		f := c.Keep("a", "a", open("a"))
		if c.Len() != 0 {
			t.Error("kept after Close")
		}
		f.Release()
		if !closed(f) {
			t.Error("its reader did not close it")
		}
	})
}
