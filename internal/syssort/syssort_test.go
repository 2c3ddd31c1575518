package syssort

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const byFile = "LC_ALL=C sort -k1,1 -k2,2n"

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSortAndMerge proves each way of running sort on the keys of a
// manifest order: byte order and numeric keys, several inputs or none, a
// merge to a file and one read as it comes; and that the output appears
// only whole (no temporary file left beside it).
func TestSortAndMerge(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a", "b 10\na 9\nB 1\n")
	sa := write(t, dir, "sa", "B 1\na 9\n")
	sb := write(t, dir, "sb", "a 10\nb 2\n")
	s := Sorter{TempDir: filepath.Join(dir, "tmp"), Parallel: 2}
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		run    func(out string) error
		inputs []string
		want   string
	}{
		{"sort, numeric second key", func(out string) error { return s.Sort(ctx, byFile, []string{a}, out) }, nil, "B 1\na 9\nb 10\n"},
		{"sort, no input", func(out string) error { return s.Sort(ctx, byFile, nil, out) }, nil, ""},
		{"merge of sorted inputs", func(out string) error { return s.Merge(ctx, byFile, []string{sa, sb}, out) }, nil, "B 1\na 9\na 10\nb 2\n"},
		{"merge read as it comes", func(out string) error {
			m, err := s.MergeStream(ctx, byFile, []string{sa, sb})
			if err != nil {
				return err
			}
			data, err := io.ReadAll(m)
			// Read again at the end, as a reader that stops at it
			// and one that drains the rest both do.
			if n, rerr := m.Read(make([]byte, 8)); err == nil && (n != 0 || rerr != io.EOF) {
				err = fmt.Errorf("read after the end: %d bytes, %v; want io.EOF", n, rerr)
			}
			if werr := m.Wait(); err == nil {
				err = werr
			}
			if err != nil {
				return err
			}
			return os.WriteFile(out, data, 0o644)
		}, nil, "B 1\na 9\na 10\nb 2\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := tt.run(out); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(out)
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestSortFails proves that a sort that fails names its input and leaves
// no output, not even a partial one.
func TestSortFails(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	err := Sorter{TempDir: dir}.Sort(context.Background(), byFile, []string{filepath.Join(dir, "missing")}, out)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("error %v, want one naming the input", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Error("output written")
	}
	m, err := Sorter{TempDir: dir}.MergeStream(context.Background(), byFile, []string{filepath.Join(dir, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, m); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("reading the merge: error %v, want one naming the input at its end", err)
	}
	if err := m.Wait(); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("merge error %v, want one naming the input", err)
	}
}
