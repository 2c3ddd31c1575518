package recompress

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"warcdedup/inplace"
	"warcdedup/internal/writertest"
)

// TestReplacementKeepsWhatFileHas proves that a file recompressed in place
// is replaced as the rewrite replaces one (package inplace): its extended
// attributes kept with its owner and mode, and never while another process
// has it open for writing.
func TestReplacementKeepsWhatFileHas(t *testing.T) {
	data := members(warcFile())
	t.Run("extended attributes kept", func(t *testing.T) {
		dir := t.TempDir()
		p := write(t, dir, "f.warc.gz", data)
		value := []byte("kept across the recompression")
		if err := syscall.Setxattr(p, "user.x", value, 0); err != nil {
			t.Skipf("the file system refuses extended attributes: %v", err)
		}
		if _, err := File(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		perRecord(t, got, len(warcFile()))
		buf := make([]byte, 256)
		n, err := syscall.Getxattr(p, "user.x", buf)
		if err != nil || !bytes.Equal(buf[:n], value) {
			t.Errorf("user.x = %q (%v), want %q", buf[:max(n, 0)], err, value)
		}
	})
	t.Run("a file open for writing refused", func(t *testing.T) {
		dir := t.TempDir()
		p := write(t, dir, "f.warc.gz", data)
		more := write(t, t.TempDir(), "more", []byte("appended by the writer"))
		w := writertest.Start(t, p, more)
		_, err := File(context.Background(), p, Options{})
		var re *RefusedError
		if !errors.As(err, &re) || !errors.Is(err, inplace.ErrOpenForWriting) {
			t.Fatalf("%v, want a refusal: open for writing", err)
		}
		if tmps := temporaries(t, dir); len(tmps) > 0 {
			t.Errorf("%v", tmps)
		}
		// With -o the file is only read: a writer does not matter.
		if _, err := File(context.Background(), p, Options{OutputDir: filepath.Join(dir, "out")}); err != nil {
			t.Errorf("-o: %v", err)
		}
		w.AppendNow(t)
		if got, _ := os.ReadFile(p); !bytes.Equal(got, append(bytes.Clone(data), "appended by the writer"...)) {
			t.Errorf("the file is not as the writer left it")
		}
	})
}
