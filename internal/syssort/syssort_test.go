package syssort

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/gzfile"
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

// TestCompressedTemporaries sorts more lines than sort's buffer holds,
// with its temporary files compressed: by a program that logs its calls
// (sort runs it to compress each temporary file, with -d to read it
// back), and by Compressor's; the output is sorted either way.
func TestCompressedTemporaries(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&text, "file-%d %d some padding to make the lines longer than they need be\n", (i*7919)%1000, (i*104729)%200000)
	}
	in := write(t, dir, "in", text.String())
	calls := filepath.Join(dir, "calls")
	logging := write(t, dir, "logging-gzip", "#!/bin/sh\necho \"$@\" >> "+calls+"\nexec gzip \"$@\"\n")
	if err := os.Chmod(logging, 0o755); err != nil {
		t.Fatal(err)
	}
	if Compressor() == "" {
		t.Fatal("none of zstd, lz4, gzip is installed")
	}
	for _, tc := range []struct{ name, program string }{{"a program that logs its calls", logging}, {"Compressor's", Compressor()}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out")
			s := Sorter{TempDir: filepath.Join(dir, "tmp"), Memory: "1M", Compress: tc.program}
			if err := s.Sort(context.Background(), byFile, []string{in}, out); err != nil {
				t.Fatal(err)
			}
			check := exec.Command("sort", "-c", "-k1,1", "-k2,2n", out)
			check.Env = append(os.Environ(), "LC_ALL=C")
			if msg, err := check.CombinedOutput(); err != nil {
				t.Fatalf("the output is not sorted: %v %s", err, msg)
			}
			if fi, err := os.Stat(out); err != nil || fi.Size() != int64(text.Len()) {
				t.Fatalf("the output: %v, %d bytes, want %d", err, fi.Size(), text.Len())
			}
		})
	}
	log, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("sort never ran the compress program: %v", err)
	}
	if !strings.Contains(string(log), "-d") {
		t.Errorf("sort compressed its temporary files but never read them back (-d): %q", log)
	}
}

// TestGzipInputs sorts and merges inputs kept gzip-compressed beside plain
// ones (sort reads them decompressed through pipes), and refuses, leaving
// no output, a gzip input cut short that sort alone would take whole.
func TestGzipInputs(t *testing.T) {
	dir := t.TempDir()
	gz := func(name, text string) string {
		var b strings.Builder
		z := gzfile.NewWriter(&b)
		z.Write([]byte(text))
		z.Close()
		return write(t, dir, name, b.String())
	}
	big := strings.Repeat("z 1 padding padding padding\n", 50000)
	whole := gz("whole.gz", big)
	data, _ := os.ReadFile(whole)
	cut := write(t, dir, "cut.gz", string(data[:len(data)/2]))
	s := Sorter{TempDir: filepath.Join(dir, "tmp")}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		merge   bool
		inputs  []string
		want    string
		wantErr bool
	}{
		{"sort: a gzip input and a plain one", false, []string{gz("a.gz", "b 10\na 9\n"), write(t, dir, "b", "B 1\n")}, "B 1\na 9\nb 10\n", false},
		{"merge: two sorted gzip inputs", true, []string{gz("sa.gz", "B 1\na 9\n"), gz("sb.gz", "a 10\nb 2\n")}, "B 1\na 9\na 10\nb 2\n", false},
		{"sort: a large gzip input", false, []string{whole}, big, false},
		{"sort: a gzip input cut short", false, []string{cut}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out")
			os.Remove(out)
			var err error
			if tc.merge {
				err = s.Merge(ctx, byFile, tc.inputs, out)
			} else {
				err = s.Sort(ctx, byFile, tc.inputs, out)
			}
			got, _ := os.ReadFile(out)
			if tc.wantErr {
				if err == nil || got != nil {
					t.Fatalf("error %v, output %d bytes; want an error and no output", err, len(got))
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("%v: %d bytes, want %d", err, len(got), len(tc.want))
			}
		})
	}
}

// TestShare: n sorts run at once hold together what one would, whatever
// form --sort-memory takes.
func TestShare(t *testing.T) {
	for _, c := range []struct {
		name         string
		memory       string
		parallel, n  int
		wantMemory   string
		wantParallel int
	}{
		{"default buffer halved", "", 2, 2, "33554432b", 1},
		{"gibibytes", "1G", 4, 2, "536870912b", 2},
		{"plain number is KiB", "1000", 0, 2, "512000b", 0},
		{"bytes", "1001b", 1, 2, "500b", 1},
		{"percent", "25%", 8, 2, "12%", 4},
		{"percent never below one", "1%", 2, 3, "1%", 1},
		{"one sort keeps all", "1G", 2, 1, "1G", 2},
		{"what sort would refuse is left for it to name", "lots", 2, 2, "lots", 1},
		{"a size past 64 bits is left for sort", "99999999999T", 2, 2, "99999999999T", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Sorter{Memory: c.memory, Parallel: c.parallel}.Share(c.n)
			if got.Memory != c.wantMemory || got.Parallel != c.wantParallel {
				t.Errorf("Share(%d) of %q, %d threads: %q, %d threads; want %q, %d", c.n, c.memory, c.parallel, got.Memory, got.Parallel, c.wantMemory, c.wantParallel)
			}
		})
	}
}
