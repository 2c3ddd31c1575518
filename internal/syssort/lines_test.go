package syssort

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/gzfile"
)

// TestSortLines proves that lines come back in byte order, whole, however they
// are sorted (in memory, or by the system sort through files, to a file
// or as a stream), from several inputs at once, long lines included, and
// that nothing is left in the temporary directory.
func TestSortLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var lines []string
	for i := range 3000 {
		n := rng.IntN(40)
		if i%500 == 0 {
			n = 200 << 10 // longer than a read buffer
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('!' + rng.IntN(90))
		}
		if i%7 == 0 {
			b = append(b, fmt.Sprintf(" %s x", Num(nil, rng.Int64N(1<<40)))...)
		}
		lines = append(lines, string(b))
	}
	want := slices.Clone(lines)
	slices.Sort(want)
	for _, tc := range []struct {
		name     string
		inMemory int
		stream   bool
		compress bool // the inputs spilled gzip, fed to sort decompressed
	}{
		{"in memory, to a file", 0, false, false},
		{"in memory, as a stream", 0, true, false},
		{"system sort, to a file", -1, false, false},
		{"system sort, as a stream", -1, true, false},
		{"inputs on disk, sorted in memory", 64 << 10, false, false},
		{"system sort, compressed inputs, to a file", -1, false, true},
		{"system sort, compressed inputs, as a stream", -1, true, true},
		{"compressed inputs on disk, sorted in memory", 64 << 10, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := Sorter{TempDir: dir, InMemory: tc.inMemory}
			if tc.compress {
				o.Compress = "gzip"
			}
			if tc.inMemory == 0 {
				o.InMemory = 16 << 20
			}
			var inputs []*File
			for part := range 3 {
				f, _ := o.Create("test")
				for i := part; i < len(lines); i += 3 {
					if err := f.Line([]byte(lines[i])); err != nil {
						t.Fatal(err)
					}
				}
				inputs = append(inputs, f)
			}
			for _, f := range inputs {
				if f.name == "" {
					continue
				}
				f.close()
				if gz, err := gzfile.IsGzip(f.name); err != nil || gz != tc.compress {
					t.Fatalf("%s: gzip %v (%v), want %v", f.name, gz, err, tc.compress)
				}
			}
			if tc.inMemory > 0 {
				o.InMemory = 1 << 30 // the inputs spilled; their sort is small enough
			}
			var got []string
			var l *Lines
			var err error
			if tc.stream {
				l, err = o.Sorted(context.Background(), inputs...)
			} else {
				var out *File
				out, err = o.SortLines(context.Background(), "test-sorted", inputs...)
				if err == nil {
					defer out.Remove()
					l, err = out.Open()
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			for l.Next() {
				got = append(got, string(l.Bytes()))
			}
			if err := l.Err(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d lines back, want %d, or out of order", len(got), len(want))
			}
			for _, f := range inputs {
				f.Remove()
			}
		})
	}
}

// TestSortedStoppedEarly proves that a sort read only in part can be closed
// without an error and without waiting for sort to write the rest.
func TestSortedStoppedEarly(t *testing.T) {
	o := Sorter{TempDir: t.TempDir(), InMemory: -1}
	f, _ := o.Create("test")
	line := bytes.Repeat([]byte("x"), 1000)
	for range 20000 {
		f.Line(line)
	}
	defer f.Remove()
	l, err := o.Sorted(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Next() {
		t.Fatal(l.Err())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSortLinesFails proves that a sort that fails says so, with sort's words.
func TestSortLinesFails(t *testing.T) {
	o := Sorter{TempDir: t.TempDir(), InMemory: -1, Memory: "no-such-size"}
	f, _ := o.Create("test")
	f.Line([]byte("a"))
	defer f.Remove()
	_, err := o.SortLines(context.Background(), "test", f)
	if err == nil || !strings.Contains(err.Error(), "sort") {
		t.Fatalf("error %v, want sort's", err)
	}
	if entries, _ := os.ReadDir(o.TempDir); len(entries) != 1 {
		t.Errorf("%d files in the temporary directory, want the input's alone", len(entries))
	}
}

// TestNum proves that numbers sort as their fields do and read back.
func TestNum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ns []int64
	for range 1000 {
		ns = append(ns, rng.Int64N(1<<62))
	}
	ns = append(ns, 0, 1, 15, 16, 1<<62)
	slices.Sort(ns)
	var prev []byte
	for _, n := range ns {
		b := Num(nil, n)
		if bytes.Compare(prev, b) > 0 {
			t.Fatalf("%d sorts before the number before it", n)
		}
		if m, err := ParseNum(b); m != n || err != nil {
			t.Fatalf("%d reads back as %d, %v", n, m, err)
		}
		prev = b
	}
	if _, err := ParseNum([]byte("12")); err == nil {
		t.Error("a short number reads")
	}
}

// TestInMemoryOrderIsSorts proves that lines sorted in memory come back in
// the order the system sort gives them, lines holding bytes below the
// line feed included (a tab, a control byte), which sort puts after the
// shorter lines they begin.
func TestInMemoryOrderIsSorts(t *testing.T) {
	lines := []string{"a\tb", "a", "a b", "a\x01", "", "ab", "a\t", "b\x00c", "b"}
	sorted := func(inMemory int) []string {
		o := Sorter{TempDir: t.TempDir(), InMemory: inMemory}
		f, _ := o.Create("test")
		for _, l := range lines {
			if err := f.Line([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		defer f.Remove()
		l, err := o.Sorted(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for l.Next() {
			got = append(got, string(l.Bytes()))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	mem, sys := sorted(1<<20), sorted(-1)
	if !slices.Equal(mem, sys) {
		t.Fatalf("in memory %q, the system sort %q", mem, sys)
	}
}

// TestSortHeldInMemory proves that Files each still in memory, together
// beyond InMemory, are sorted here, whole and in order, with no sort
// process (one would fail: its buffer size is not one) and no file
// written, by Sorted and by SortLines, whose File reads as often as asked
// and takes more lines.
func TestSortHeldInMemory(t *testing.T) {
	for _, sortLines := range []bool{false, true} {
		t.Run(fmt.Sprintf("SortLines %v", sortLines), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			o := Sorter{TempDir: t.TempDir(), InMemory: 32 << 10, Memory: "no-such-size"}
			var want []string
			var inputs []*File
			for range 3 {
				f, _ := o.Create("test")
				defer f.Remove()
				for range 1000 {
					l := fmt.Sprintf("%s %d", Num(nil, rng.Int64N(1<<40)), rng.IntN(1000)) // 20-odd bytes: a file stays under 32 KiB, three above
					if err := f.Line([]byte(l)); err != nil {
						t.Fatal(err)
					}
					want = append(want, l)
				}
				if f.name != "" {
					t.Fatalf("an input of %d lines spilled; the test wants it in memory", f.Lines)
				}
				inputs = append(inputs, f)
			}
			slices.Sort(want)
			read := func(l *Lines, err error) []string {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for l.Next() {
					got = append(got, string(l.Bytes()))
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				return got
			}
			if !sortLines {
				if got := read(o.Sorted(context.Background(), inputs...)); !slices.Equal(got, want) {
					t.Fatalf("%d lines back, want %d, or out of order", len(got), len(want))
				}
			} else {
				out, err := o.SortLines(context.Background(), "test-sorted", inputs...)
				if err != nil {
					t.Fatal(err)
				}
				defer out.Remove()
				for range 2 {
					if got := read(out.Open()); !slices.Equal(got, want) {
						t.Fatalf("%d lines back, want %d, or out of order", len(got), len(want))
					}
				}
			}
			if entries, _ := os.ReadDir(o.TempDir); len(entries) != 0 {
				t.Errorf("%d files in the temporary directory, want none", len(entries))
			}
			if sortLines {
				// A line more: the File, beyond InMemory, goes to disk
				// with its lines as sorted, then the new one.
				out, err := o.SortLines(context.Background(), "test-sorted", inputs...)
				if err != nil {
					t.Fatal(err)
				}
				defer out.Remove()
				if err := out.Line([]byte("0 last")); err != nil {
					t.Fatal(err)
				}
				if out.name == "" {
					t.Error("the File of a line more stays in memory")
				}
				if got := read(out.Open()); !slices.Equal(got, append(want, "0 last")) {
					t.Errorf("%d lines back, want %d, or out of order", len(got), len(want)+1)
				}
			}
		})
	}
}

// TestBudget proves that Files sharing a Budget stay in memory while
// together they hold less, one of them beyond InMemory; that the File
// whose line would pass it goes to disk and gives back what it held,
// which another File then takes; and that Remove gives back too.
func TestBudget(t *testing.T) {
	budget := NewBudget(100)
	a := Sorter{TempDir: t.TempDir(), InMemory: 10, Budget: budget}
	b := a
	line := []byte("123456789") // 10 bytes with its line feed
	big, _ := a.Create("big")
	defer big.Remove()
	for range 6 {
		big.Line(line)
	}
	small, _ := b.Create("small")
	defer small.Remove()
	for range 4 {
		small.Line(line)
	}
	if big.name != "" || small.name != "" {
		t.Fatalf("60 and 40 bytes of a budget of 100 on disk (%v, %v), want both in memory", big.name != "", small.name != "")
	}
	big.Line(line)
	if big.name == "" || big.held != 0 {
		t.Fatalf("the File whose line passes the budget: on disk %v, holding %d; want on disk, holding nothing", big.name != "", big.held)
	}
	for range 6 {
		small.Line(line)
	}
	if small.name != "" || small.held != 100 {
		t.Fatalf("the other File, of what the first gave back: on disk %v, holding %d; want in memory, 100", small.name != "", small.held)
	}
	small.Remove()
	other, _ := a.Create("other")
	defer other.Remove()
	for range 10 {
		other.Line(line)
	}
	if other.name != "" {
		t.Error("a File of what Remove gave back went to disk")
	}
	for f, want := range map[*File]int64{big: 7, other: 10} {
		l, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for l.Next() {
			if !bytes.Equal(l.Bytes(), line[:9]) {
				t.Fatalf("%s: line %q", f.pattern, l.Bytes())
			}
			n++
		}
		l.Close()
		if n != want {
			t.Errorf("%s: %d lines back, want %d", f.pattern, n, want)
		}
	}
}

// TestSortInMemoryCancelled: lines held in memory are sorted without a
// process, so the cancellation a sort process would have ended on must
// end the call itself (a Slurm task cancelled mid-verify stops, and
// its monitor sees it fail, rather than finishing the stage).
func TestSortInMemoryCancelled(t *testing.T) {
	o := Sorter{TempDir: t.TempDir(), InMemory: 32 << 10}
	f, _ := o.Create("test")
	defer f.Remove()
	for _, l := range []string{"b", "a"} {
		if err := f.Line([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"Sorted", func() error { _, err := o.Sorted(ctx, f); return err }},
		{"SortLines", func() error { _, err := o.SortLines(ctx, "out", f); return err }},
	} {
		if err := c.run(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", c.name, err)
		}
	}
}

// TestSortedFileWrittenTakesBudget: a File SortLines sorted in memory
// points into its input's bytes, and holds none of the Budget; written to,
// its lines become its own, and take from the Budget as any line does, or
// go to disk where it has no room (they were copied outside the Budget),
// all of them still there and in order.
func TestSortedFileWrittenTakesBudget(t *testing.T) {
	tests := []struct {
		name     string
		budget   int64
		wantDisk bool
	}{
		{"room for the copy", 100, false},
		{"no room for the copy", 60, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := NewBudget(tt.budget)
			s := Sorter{TempDir: t.TempDir(), Budget: budget}
			in, _ := s.Create("in")
			defer in.Remove()
			for _, l := range []string{"c1234567", "a1234567", "b1234567"} { // 27 bytes
				in.Line([]byte(l))
			}
			out, err := s.SortLines(context.Background(), "out", in)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Remove()
			if out.name != "" || out.sorted == nil {
				t.Fatal("3 lines of a budget of 60 not sorted in memory")
			}
			if err := out.Line([]byte("d1234567")); err != nil {
				t.Fatal(err)
			}
			if onDisk := out.name != ""; onDisk != tt.wantDisk {
				t.Fatalf("written to: on disk %v, want %v", onDisk, tt.wantDisk)
			}
			if !tt.wantDisk && out.held != 36 {
				t.Errorf("in memory holding %d of the budget, want 36 (its 4 lines)", out.held)
			}
			if left := budget.left.Load(); left != tt.budget-27-out.held {
				t.Errorf("budget left %d, want %d", left, tt.budget-27-out.held)
			}
			l, err := out.Open()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for l.Next() {
				got = append(got, string(l.Bytes()))
			}
			l.Close()
			if want := []string{"a1234567", "b1234567", "c1234567", "d1234567"}; !slices.Equal(got, want) {
				t.Errorf("lines %q, want %q", got, want)
			}
		})
	}
}

// TestSortLinesOnCores: lines sorted on several cores (halves sorted at
// the same time, merged) are in the order one sort gives them, for
// counts below, at and above the parallel threshold, odd and even, with
// equal lines and lines that begin others (ordered as sort(1) does,
// without their line feed).
func TestSortLinesOnCores(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, parallelLines - 1, parallelLines, 3*parallelLines + 1} {
		for _, cores := range []int{1, 2, 3, 8} {
			t.Run(fmt.Sprintf("%d lines on %d cores", n, cores), func(t *testing.T) {
				lines := make([][]byte, n)
				for i := range lines {
					l := fmt.Appendf(nil, "%x", rng.IntN(n/4+1))
					if rng.IntN(3) == 0 {
						l = append(l, '\t') // below the line feed: sorts after the line it begins
					}
					lines[i] = append(l, '\n')
				}
				want := slices.Clone(lines)
				slices.SortFunc(want, compareLines)
				got := sortLines(slices.Clone(lines), cores)
				if len(got) != len(want) {
					t.Fatalf("%d lines, want %d", len(got), len(want))
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("line %d %q, want %q", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// BenchmarkSortLines sorts in memory lines like those of verify's join by
// capture on the bench collection (some 60,000 lines of 150 bytes, URI
// first) on one core and on two.
func BenchmarkSortLines(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	lines := make([][]byte, 60000)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, "https://www.example.edu/path/to/page-%d.html?utm_source=feed&n=%d 2024-06-01T00:00:%02dZ r sha1:%032d a\n",
			rng.IntN(1<<20), i, i%60, rng.Int64())
	}
	for _, cores := range []int{1, 2} {
		b.Run(fmt.Sprintf("%d cores", cores), func(b *testing.B) {
			work := make([][]byte, len(lines))
			for b.Loop() {
				copy(work, lines)
				sortLines(work, cores)
			}
		})
	}
}
