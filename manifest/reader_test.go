package manifest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"warcdedup/digest"
	"warcdedup/manifest"
)

// readAll reads every line of text with r and returns the lines and the
// first error other than io.EOF.
func readAll(r *manifest.Reader) ([]manifest.Line, error) {
	var lines []manifest.Line
	for {
		l, err := r.Next()
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		lines = append(lines, l)
	}
}

func TestReader(t *testing.T) {
	var input strings.Builder
	for _, tt := range parseTests {
		input.WriteString(tt.text + "\n")
	}
	r := manifest.NewReader(strings.NewReader(input.String()), "m.txt")
	if n := r.LineNumber(); n != 0 {
		t.Errorf("LineNumber before Next = %d, want 0", n)
	}
	for i, tt := range parseTests {
		l, err := r.Next()
		if err != nil {
			t.Fatalf("Next at line %d: %v", i+1, err)
		}
		if l != tt.want {
			t.Errorf("line %d = %+v, want %+v", i+1, l, tt.want)
		}
		if n := r.LineNumber(); n != i+1 {
			t.Errorf("LineNumber = %d, want %d", n, i+1)
		}
	}
	for range 2 {
		if l, err := r.Next(); err != io.EOF {
			t.Fatalf("Next after the last line = %+v, %v; want io.EOF", l, err)
		}
	}
}

func TestReaderEmpty(t *testing.T) {
	r := manifest.NewReader(strings.NewReader(""), "empty")
	if l, err := r.Next(); err != io.EOF {
		t.Fatalf("Next of empty input = %+v, %v; want io.EOF", l, err)
	}
}

// TestReaderOneByteReads checks that lines split across reads are joined.
func TestReaderOneByteReads(t *testing.T) {
	var input strings.Builder
	for _, s := range validLines {
		input.WriteString(s + "\n")
	}
	r := manifest.NewReader(iotest.OneByteReader(strings.NewReader(input.String())), "m")
	lines, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(validLines) {
		t.Fatalf("read %d lines, want %d", len(lines), len(validLines))
	}
	for i, l := range lines {
		if got := l.String(); got != validLines[i] {
			t.Errorf("line %d = %q, want %q", i+1, got, validLines[i])
		}
	}
}

// TestReaderLongLine reads lines longer than the Reader's buffer.
func TestReaderLongLine(t *testing.T) {
	long := "http://x/" + strings.Repeat("a", 1<<20)
	lines := []string{
		"f 1 2 " + long + " d " + sha1Empty,
		"f 3 4 u d " + sha1Empty,
		"f 5 6 " + long + long + " d " + md5Empty + " 0 2 " + long + " d",
	}
	r := manifest.NewReader(strings.NewReader(strings.Join(lines, "\n")+"\n"), "m")
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(lines) {
		t.Fatalf("read %d lines, want %d", len(got), len(lines))
	}
	for i, l := range got {
		if l.String() != lines[i] {
			t.Errorf("line %d differs (len %d, want %d)", i+1, len(l.String()), len(lines[i]))
		}
	}
}

// TestReaderLineLimit checks the limit of 64 MiB on one line, LF not
// counted, at its edge.
func TestReaderLineLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 128 MiB")
	}
	const maxLine = 64 << 20
	line := func(n int) io.Reader { // a valid line of n bytes and its LF
		head, tail := "f 1 2 ", " d "+sha1Empty+"\n"
		return io.MultiReader(strings.NewReader(head),
			io.LimitReader(repeatReader('a'), int64(n-len(head)-len(tail)+1)),
			strings.NewReader(tail))
	}
	input := io.MultiReader(
		strings.NewReader("f 1 2 u d "+sha1Empty+"\n"),
		line(maxLine),
		line(maxLine+1),
	)
	r := manifest.NewReader(input, "big")
	for i := range 2 {
		if l, err := r.Next(); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		} else if i == 1 && len(l.String()) != maxLine {
			t.Fatalf("line %d has %d bytes, want %d", i+1, len(l.String()), maxLine)
		}
	}
	_, err := r.Next()
	var me *manifest.Error
	if !errors.As(err, &me) || me.Name != "big" || me.Line != 3 {
		t.Fatalf("Next of a line of %d bytes = %v, want *manifest.Error for big:3", maxLine+1, err)
	}
	if !strings.Contains(err.Error(), "longer") {
		t.Errorf("error %q does not say the line is too long", err)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestReaderErrors(t *testing.T) {
	const (
		l6  = "f 1 2 u d " + sha1Empty
		l7  = l6 + " 0"
		l10 = l6 + " 0 1 - -"
	)
	tests := []struct {
		name    string
		input   string
		fields  []int // RequireFields, if set
		good    int   // lines read before the error
		line    int   // line number of the error
		errText string
	}{
		{"bad first line", "f 1 2 u d\n", nil, 0, 1, "5 fields"},
		{"bad third line", l6 + "\n" + l7 + "\nf x 2 u d " + sha1Empty + "\n" + l6 + "\n", nil, 2, 3, "offset"},
		{"empty line", l6 + "\n\n" + l6 + "\n", nil, 1, 2, "fields"},
		{"CRLF line ends", l6 + "\r\n" + l6 + "\r\n", nil, 0, 1, "control"},
		{"last line without LF", l6 + "\n" + l7 + "\n" + l10, nil, 2, 3, "truncated"},
		{"only line without LF", l6, nil, 0, 1, "truncated"},
		{"cut short in the digest", l6 + "\n" + l6[:len(l6)-3], nil, 1, 2, "truncated"},
		{"cut short in ext", l6 + "\n" + l6 + " 1", nil, 1, 2, "truncated"},
		{"RequireFields 7 on 6", l7 + "\n" + l6 + "\n", []int{7}, 1, 2, "6 fields, want 7"},
		{"RequireFields 6 or 7 on 10", l6 + "\n" + l7 + "\n" + l10 + "\n", []int{6, 7}, 2, 3, "10 fields, want 6 or 7"},
		{"RequireFields 10 on 7", l10 + "\n" + l10 + "\n" + l7 + "\n", []int{10}, 2, 3, "7 fields, want 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := manifest.NewReader(strings.NewReader(tt.input), "in.manifest")
			if tt.fields != nil {
				r.RequireFields(tt.fields...)
			}
			lines, err := readAll(r)
			if err == nil {
				t.Fatalf("read %d lines without error, want an error at line %d", len(lines), tt.line)
			}
			if len(lines) != tt.good {
				t.Errorf("read %d lines before the error, want %d", len(lines), tt.good)
			}
			var me *manifest.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T) is not a *manifest.Error", err, err)
			}
			if me.Name != "in.manifest" || me.Line != tt.line {
				t.Errorf("error names %s:%d, want in.manifest:%d", me.Name, me.Line, tt.line)
			}
			if want := fmt.Sprintf("in.manifest:%d: ", tt.line); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q does not start with %q", err, want)
			}
			if !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("error %q does not mention %q", err, tt.errText)
			}
			if errors.Is(err, manifest.ErrOrder) {
				t.Errorf("error %q wraps ErrOrder", err)
			}
		})
	}
}

// TestRequireFieldsAccepts checks that RequireFields lets through every
// listed count.
func TestRequireFieldsAccepts(t *testing.T) {
	input := strings.Join(validLines, "\n") + "\n"
	r := manifest.NewReader(strings.NewReader(input), "m")
	r.RequireFields(6, 7, 10)
	lines, err := readAll(r)
	if err != nil || len(lines) != len(validLines) {
		t.Fatalf("read %d lines, %v; want %d, nil", len(lines), err, len(validLines))
	}
}

func TestReaderReadError(t *testing.T) {
	errDisk := errors.New("disk on fire")
	input := io.MultiReader(strings.NewReader("f 1 2 u d "+sha1Empty+"\nf 1 2"), iotest.ErrReader(errDisk))
	r := manifest.NewReader(input, "m")
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	if !errors.Is(err, errDisk) {
		t.Fatalf("Next = %v, want an error wrapping %v", err, errDisk)
	}
	var me *manifest.Error
	if !errors.As(err, &me) || me.Name != "m" || me.Line != 2 {
		t.Errorf("Next = %v, want a *manifest.Error for m:2", err)
	}
}

// TestRequireOrderPairs checks hand-made pairs of lines in and out of each
// order, one key at a time.
func TestRequireOrderPairs(t *testing.T) {
	const (
		d1 = "md5:d41d8cd98f00b204e9800998ecf8427e"
		d2 = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
	)
	tests := []struct {
		name         string
		order        *manifest.Order
		first, other string
		sorted       bool
	}{
		{"ByFile offset 9 before 10", manifest.ByFile, "a 9 1 u d " + d1, "a 10 1 u d " + d1, true},
		{"ByFile offset 10 before 9", manifest.ByFile, "a 10 1 u d " + d1, "a 9 1 u d " + d1, false},
		{"ByFile equal keys", manifest.ByFile, "a 9 1 u d " + d2, "a 9 2 t c " + d1, true},
		{"ByFile file before offset", manifest.ByFile, "a 99 1 u d " + d1, "b 1 1 u d " + d1, true},
		{"ByFile file byte order", manifest.ByFile, "B 1 1 u d " + d1, "a 1 1 u d " + d1, true},
		{"ByFile prefix first", manifest.ByFile, "a 2 1 u d " + d1, "a.gz 1 1 u d " + d1, true},
		{"ByFile high byte after ASCII", manifest.ByFile, "\xc3\xa9 1 1 u d " + d1, "z 1 1 u d " + d1, false},
		{"ByDigest digest first", manifest.ByDigest, "z 1 1 u 2020 " + d1, "a 1 1 u 2010 " + d2, true},
		{"ByDigest date before file", manifest.ByDigest, "z 1 1 u 2010 " + d1, "a 1 1 u 2020 " + d1, true},
		{"ByDigest date out of order", manifest.ByDigest, "a 1 1 u 2020 " + d1, "z 1 1 u 2010 " + d1, false},
		{"ByDigest offset 10 before 9", manifest.ByDigest, "a 10 1 u 2010 " + d1, "a 9 1 u 2010 " + d1, false},
		{"ByDigest ext before date", manifest.ByDigest, "a 1 1 u 2020 " + d1 + " 0", "a 1 1 u 2010 " + d1 + " 1", true},
		{"ByDigest ext 10 before 9", manifest.ByDigest, "a 1 1 u 2010 " + d1 + " 10", "a 1 1 u 2010 " + d1 + " 9", false},
		{"ByDigest digest before ext", manifest.ByDigest, "a 1 1 u 2010 " + d1 + " 5", "a 1 1 u 2010 " + d2 + " 0", true},
		{"ByDigest no field 7 is ext 0", manifest.ByDigest, "a 1 1 u 2010 " + d1, "a 1 1 u 2000 " + d1 + " 1", true},
		{"ByDigest revisit line before responses", manifest.ByDigest, "z 1 1 u 2030 " + d1 + " -1 0 u 2010", "a 1 1 u 2010 " + d1, true},
		{"ByDigest revisit line after a response", manifest.ByDigest, "a 1 1 u 2010 " + d1, "z 1 1 u 2030 " + d1 + " -1 0 u 2010", false},
		{"ByDigest digest-less revisit lines first", manifest.ByDigest, "z 1 1 u 2030 - -1 0 u 2010", "a 1 1 u 2010 " + d1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := manifest.NewReader(strings.NewReader(tt.first+"\n"+tt.other+"\n"), "pairs")
			r.RequireOrder(tt.order)
			_, err := readAll(r)
			if tt.sorted {
				if err != nil {
					t.Fatalf("lines in %s order rejected: %v", tt.order.Name, err)
				}
				return
			}
			if !errors.Is(err, manifest.ErrOrder) {
				t.Fatalf("lines out of %s order: error %v, want ErrOrder", tt.order.Name, err)
			}
			if !strings.Contains(err.Error(), tt.order.Command) {
				t.Errorf("error %q does not name the sort command %q", err, tt.order.Command)
			}
		})
	}
}

// genLines makes n random manifest lines with the given field counts. Every
// field is drawn from a small pool or a small alphabet, so that lines often
// tie on some keys, and numbers have different digit counts (9 and 10 sort
// differently as text and as numbers).
func genLines(rng *rand.Rand, n int, fieldCounts []int) []string {
	files := []string{
		"a", "a.warc", "a.warc.gz", "a-b.warc.gz", "a.warc.gz.1", "A.warc.gz", "b/a.warc.gz",
		"b.warc.gz", "caf\xc3\xa9.warc", "x%20y.warc", "x%25.warc", "~t.warc", "z", "zz", "\xff",
	}
	dates := []string{
		"2012-04-08T20:13:38Z", "2012-04-08T20:13:38.5Z", "2012-04-08T20:13:39Z", "2012-04-08T20:13:3Z",
		"2013-01-01T00:00:00Z", "1996-12-31T23:59:59Z", "20120408201338", "-",
	}
	var digests []string
	for _, a := range digest.Algorithms {
		for _, s := range []string{"", "0", "1"} {
			h := a.New()
			h.Write([]byte(s))
			digests = append(digests, a.Format(h.Sum(nil)))
		}
	}
	exts := []int{0, 1, 2, 9, 10, 11, 100, 2147483647}
	number := func() int64 {
		switch rng.IntN(3) {
		case 0:
			return []int64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 2147483647, 2147483648,
				9999999999, 10000000000, 9223372036854775807}[rng.IntN(15)]
		default: // a random number of 1 to 18 digits
			return rng.Int64N(int64Pow10(1 + rng.IntN(18)))
		}
	}
	text := func(alphabet string) string {
		b := make([]byte, 1+rng.IntN(4))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	var lines []string
	var prev [][]string
	for range n {
		f := []string{
			files[rng.IntN(len(files))],
			strconv.FormatInt(number(), 10),
			strconv.FormatInt(1+rng.Int64N(1e6), 10),
			"http://x/" + text("ab%/?"),
			dates[rng.IntN(len(dates))],
			digests[rng.IntN(len(digests))],
			strconv.Itoa(exts[rng.IntN(len(exts))]),
		}
		switch rng.IntN(8) {
		case 0:
			f[0] = text("aAz09-._/%~\x80\xff")
		case 1, 2:
			// Tie with an earlier line on file and offset, and maybe more.
			if len(prev) > 0 {
				p := prev[rng.IntN(len(prev))]
				k := 2 + rng.IntN(len(f)-1)
				copy(f[:k], p[:k])
			}
		}
		prev = append(prev, f)
		switch nf := fieldCounts[rng.IntN(len(fieldCounts))]; nf {
		case 6:
			f = f[:6]
		case 7:
		case 10:
			if c := rng.IntN(4); c == 0 {
				f = append(f, "1", "-", "-")
			} else {
				f = append(f, strconv.Itoa(1+c*c*c), "http://ref/"+text("ab"), dates[rng.IntN(len(dates)-1)])
			}
		default:
			panic("bad field count")
		}
		lines = append(lines, strings.Join(f, " "))
	}
	return lines
}

func int64Pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// sortKey is one -kN,N[n] option of a sort command.
type sortKey struct {
	field   int // 1-based
	numeric bool
}

// parseSortCommand splits an Order.Command into sort's arguments and its keys.
func parseSortCommand(t *testing.T, command string) (args []string, keys []sortKey) {
	t.Helper()
	rest, ok := strings.CutPrefix(command, "LC_ALL=C sort ")
	if !ok {
		t.Fatalf("sort command %q does not start with %q", command, "LC_ALL=C sort ")
	}
	args = strings.Fields(rest)
	for _, a := range args {
		var k sortKey
		var start, end int
		var opts string
		if n, _ := fmt.Sscanf(a, "-k%d,%d%s", &start, &end, &opts); n < 2 || start != end || (opts != "" && opts != "n") {
			t.Fatalf("sort command %q: cannot interpret %q", command, a)
		}
		k.field, k.numeric = start, opts == "n"
		keys = append(keys, k)
	}
	return args, keys
}

// keysDiffer reports whether lines a and b differ in one of the keys, by
// their text, as sort sees them: a missing numeric field is 0.
func keysDiffer(a, b string, keys []sortKey) bool {
	fa, fb := strings.Split(a, " "), strings.Split(b, " ")
	field := func(f []string, k sortKey) string {
		if k.field <= len(f) {
			return f[k.field-1]
		}
		if k.numeric {
			return "0"
		}
		return ""
	}
	for _, k := range keys {
		if field(fa, k) != field(fb, k) {
			return true
		}
	}
	return false
}

// runSort runs the real sort(1) with args on lines.
func runSort(t *testing.T, sortPath string, args []string, lines []string) []string {
	t.Helper()
	cmd := exec.Command(sortPath, args...)
	cmd.Env = append(cmd.Environ(), "LC_ALL=C")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sort %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	sorted := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(sorted) != len(lines) {
		t.Fatalf("sort returned %d lines, want %d", len(sorted), len(lines))
	}
	return sorted
}

// TestRequireOrderAgreesWithSort checks every Order against the real
// `LC_ALL=C sort` with the key options of its Command: Reader must accept
// sort's output, must reject it with ErrOrder at the right line once two
// adjacent lines that differ in the keys are swapped, and sort must find
// lines sorted with Order.Compare in order.
func TestRequireOrderAgreesWithSort(t *testing.T) {
	sortPath, err := exec.LookPath("sort")
	if err != nil {
		t.Skip("sort(1) not found:", err)
	}
	tests := []struct {
		order  *manifest.Order
		fields []int
	}{
		{manifest.ByDigest, []int{6}},
		{manifest.ByDigest, []int{6, 7, 10}},
		{manifest.ByDigest, []int{7}},
		{manifest.ByDigest, []int{10}},
		{manifest.ByDigest, []int{6, 7, 10}},
		{manifest.ByFile, []int{6}},
		{manifest.ByFile, []int{6, 7, 10}},
		{manifest.ByCapture, []int{6, 7, 10}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.order.Name, tt.fields), func(t *testing.T) {
			args, keys := parseSortCommand(t, tt.order.Command)
			swaps, ties := 0, 0
			for seed := range uint64(4) {
				rng := rand.New(rand.NewPCG(seed, uint64(len(tt.fields))))
				lines := genLines(rng, 300, tt.fields)

				// sort's order is accepted.
				sorted := runSort(t, sortPath, args, lines)
				r := manifest.NewReader(strings.NewReader(strings.Join(sorted, "\n")+"\n"), "sorted")
				r.RequireOrder(tt.order)
				if got, err := readAll(r); err != nil || len(got) != len(lines) {
					t.Fatalf("seed %d: Reader with RequireOrder(%s) on sort's output: read %d of %d lines: %v",
						seed, tt.order.Name, len(got), len(lines), err)
				}

				// Swapping two adjacent lines that differ in the keys is
				// caught at the second of them.
				for i := 0; i+1 < len(sorted); i++ {
					if !keysDiffer(sorted[i], sorted[i+1], keys) {
						ties++
						continue
					}
					swaps++
					swapped := slices.Clone(sorted)
					swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
					r := manifest.NewReader(strings.NewReader(strings.Join(swapped, "\n")+"\n"), "swapped")
					r.RequireOrder(tt.order)
					got, err := readAll(r)
					if !errors.Is(err, manifest.ErrOrder) {
						t.Fatalf("seed %d: lines %d and %d swapped:\n%q\n%q\nread %d lines, err %v; want ErrOrder",
							seed, i+1, i+2, swapped[i], swapped[i+1], len(got), err)
					}
					var me *manifest.Error
					if !errors.As(err, &me) || me.Name != "swapped" || me.Line != i+2 {
						t.Fatalf("seed %d: lines %d and %d swapped: error %v, want *manifest.Error at swapped:%d",
							seed, i+1, i+2, err, i+2)
					}
					if !strings.Contains(err.Error(), tt.order.Command) {
						t.Fatalf("error %q does not name the sort command %q", err, tt.order.Command)
					}
				}

				// Order.Compare's order is sort's order: sort -C -s (check
				// without the last-resort whole-line comparison) accepts it.
				parsed := make([]manifest.Line, len(lines))
				for i, s := range lines {
					if parsed[i], err = manifest.Parse([]byte(s)); err != nil {
						t.Fatalf("generated line %q: %v", s, err)
					}
				}
				slices.SortStableFunc(parsed, func(a, b manifest.Line) int { return tt.order.Compare(&a, &b) })
				var buf bytes.Buffer
				for _, l := range parsed {
					buf.Write(l.Append(nil))
				}
				check := exec.Command(sortPath, append([]string{"-C", "-s"}, args...)...)
				check.Env = append(check.Environ(), "LC_ALL=C")
				check.Stdin = &buf
				if out, err := check.CombinedOutput(); err != nil {
					t.Fatalf("seed %d: sort -C -s %s rejects lines sorted by Order.Compare: %v %s",
						seed, strings.Join(args, " "), err, out)
				}
			}
			// The test means something only if both cases occurred often.
			if swaps < 100 || ties < 10 {
				t.Fatalf("only %d adjacent pairs differ in the keys and %d tie; generate better input", swaps, ties)
			}
		})
	}
}

func TestWriter(t *testing.T) {
	var want []manifest.Line
	for _, tt := range parseTests {
		want = append(want, tt.want)
	}
	// Enough lines to pass through the Writer's buffer several times.
	long := manifest.Line{File: "f", Offset: 1, Length: 2, URI: "http://x/" + strings.Repeat("a", 100<<10),
		Date: "d", Digest: sha1Empty, Fields: 6}
	for range 10 {
		want = append(want, long)
	}
	var out bytes.Buffer
	w := manifest.NewWriter(&out)
	for i := range want {
		if err := w.Write(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var wantText strings.Builder
	for _, l := range want {
		wantText.WriteString(l.String() + "\n")
	}
	if out.String() != wantText.String() {
		t.Errorf("Writer wrote a different text than Line.String")
	}
	got, err := readAll(manifest.NewReader(&out, "written"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("read back %d lines that differ from the %d written", len(got), len(want))
	}
}

func TestWriterError(t *testing.T) {
	errFull := errors.New("disk full")
	w := manifest.NewWriter(failWriter{errFull})
	l := manifest.Line{File: "f", Offset: 1, Length: 2, URI: "u", Date: "d", Digest: sha1Empty, Fields: 6}
	err := w.Write(&l)
	if err == nil {
		err = w.Flush()
	}
	if !errors.Is(err, errFull) {
		t.Fatalf("Write and Flush to a failing writer = %v, want %v", err, errFull)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestReaderOrderAllocatesOnlyFields proves that a Reader checking the
// order allocates a line's string fields and nothing else (the line
// compared with the one above it went to the heap, 120 bytes a line).
func TestReaderOrderAllocatesOnlyFields(t *testing.T) {
	var b bytes.Buffer
	const n = 1000
	for i := range n {
		fmt.Fprintf(&b, "f.warc.gz %d 10 http://a/%d 20240101000000 md5:%032x\n", i+1, i, i)
	}
	data := b.Bytes()
	r := manifest.NewReader(bytes.NewReader(data), "m")
	allocs := testing.AllocsPerRun(5, func() {
		r = manifest.NewReader(bytes.NewReader(data), "m")
		r.RequireOrder(manifest.ByDigest)
		for {
			if _, err := r.Next(); err == io.EOF {
				return
			} else if err != nil {
				t.Fatal(err)
			}
		}
	})
	if per := allocs / n; per > 4.1 { // File, URI, Date, Digest; the reader's own few spread over n
		t.Errorf("%.2f allocations a line, want 4 (its strings)", per)
	}
}
