package migrate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestConvertedKeepsARCAttributes proves that a WARC takes its ARC's
// place with what the ARC had besides its bytes: permissions and extended
// attributes (an archive's labels and ACLs), as the in-place replacement
// gives a new version (package inplace).
func TestConvertedKeepsARCAttributes(t *testing.T) {
	dir := t.TempDir()
	originals, coll := filepath.Join(dir, "orig"), filepath.Join(dir, "coll")
	genCollection(t, originals, 2)
	copyTree(t, originals, coll)
	arc := filepath.Join(coll, "gen-00000.arc.gz")
	value := []byte("kept across the conversion")
	if err := syscall.Setxattr(arc, "user.x", value, 0); err != nil {
		t.Skipf("the file system refuses extended attributes: %v", err)
	}
	os.Chmod(arc, 0o640)
	c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work")}}
	if _, err := c.Run(context.Background(), coll, nil); err != nil {
		t.Fatal(err)
	}
	warc := filepath.Join(coll, "gen-00000.warc.gz")
	buf := make([]byte, 256)
	n, err := syscall.Getxattr(warc, "user.x", buf)
	if err != nil || !bytes.Equal(buf[:n], value) {
		t.Errorf("user.x = %q (%v), want %q", buf[:max(n, 0)], err, value)
	}
	if fi, err := os.Stat(warc); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want its ARC's -rw-r-----", fi.Mode(), err)
	}
}
