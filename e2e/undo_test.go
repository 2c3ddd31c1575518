package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestCorpusUndo deduplicates the real crawler files (payload policy, the
// most revisits) and undoes it with warcdedup undo: every file comes back
// as it was, record for record, its uncompressed bytes equal (damaged gzip
// files as far as they read, and to the same error).
func TestCorpusUndo(t *testing.T) {
	needCorpus(t)
	work := t.TempDir()
	names := copyCorpus(t, filepath.Join(work, "coll"))
	copyTree(t, filepath.Join(work, "coll"), filepath.Join(work, "orig"))
	r := runDedup(t, work, "coll", "keep", "--policy", "payload")
	if len(r.log) == 0 {
		t.Fatalf("nothing rewritten:\n%s", r.stderr)
	}
	_, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll")
	t.Log(stderr)
	if code != 0 || !strings.Contains(stderr, "restored: ") {
		t.Fatalf("warcdedup undo: exit %d\n%s", code, stderr)
	}
	changed := 0
	for _, name := range names {
		got, err := os.ReadFile(filepath.Join(work, "coll", name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(work, "orig", name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(got, want) {
			continue
		}
		changed++
		g, gerr := inflateAll(got)
		w, werr := inflateAll(want)
		if !bytes.Equal(g, w) || errString(gerr) != errString(werr) {
			t.Errorf("%s: not as it was after undo: %d bytes uncompressed (%v), want %d (%v); first difference at %d",
				name, len(g), gerr, len(w), werr, firstDifference(g, w))
		}
	}
	if files := len(r.byFile); changed > files {
		t.Errorf("%d files differ in their stored bytes, only %d were rewritten", changed, files)
	}
	// Nothing left to undo.
	_, stderr, code = sh(t, work, "warcdedup undo --work-dir keep coll")
	if code != 0 || !strings.Contains(stderr, "nothing to undo") {
		t.Errorf("a second undo: exit %d\n%s", code, stderr)
	}
}

// inflateAll decompresses every gzip member of data (data itself if it is
// no gzip), as far as it reads.
func inflateAll(data []byte) ([]byte, error) {
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(zr)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return out, err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
