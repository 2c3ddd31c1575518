package collres

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"warcdedup/digest"
	"warcdedup/internal/corpustest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/source"
	"warcdedup/warcsum"
)

const collisionsDir = "../../shared/collisions"

// collection writes files into a directory and returns it.
type collection map[string][]byte

func (c collection) write(t *testing.T) string {
	dir := t.TempDir()
	for name, data := range c {
		warctest.WriteFile(t, dir, name, data)
	}
	return dir
}

// hashDir runs warcsum over dir and returns the manifest sorted for
// warccollres, as the pipeline's `sort` would.
func hashDir(t *testing.T, dir string, algo digest.Algorithm) []manifest.Line {
	t.Helper()
	inputs, err := warcsum.Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := warcsum.Runner{Options: warcsum.Options{Algorithm: algo}, Jobs: 2}
	if _, err := r.Run(inputs, &out); err != nil {
		t.Fatal(err)
	}
	return sortLines(t, out.Bytes(), manifest.ByDigest)
}

func sortLines(t *testing.T, text []byte, o *manifest.Order) []manifest.Line {
	t.Helper()
	var lines []manifest.Line
	for _, s := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		if s == "" {
			continue
		}
		l, err := manifest.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	sortByOrder(lines, o)
	return lines
}

func sortByOrder(lines []manifest.Line, o *manifest.Order) {
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && o.Compare(&lines[j-1], &lines[j]) > 0; j-- {
			lines[j-1], lines[j] = lines[j], lines[j-1]
		}
	}
}

func format(lines []manifest.Line) []byte {
	var b []byte
	for i := range lines {
		b = lines[i].Append(b)
	}
	return b
}

// resolve runs a Resolver over lines and returns its output and warnings.
func resolve(t *testing.T, res Resolver, lines []manifest.Line) ([]manifest.Line, Stats, []error) {
	t.Helper()
	var warnings []error
	res.Warn = func(err error) { warnings = append(warnings, err) }
	res.Stale = res.Warn
	var out bytes.Buffer
	st, err := res.Run(context.Background(), manifest.NewReader(bytes.NewReader(format(lines)), "test.manifest"), &out)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := sortLines(t, out.Bytes(), manifest.ByDigest)
	return got, st, warnings
}

// byURI indexes resolved lines by URI.
func byURI(lines []manifest.Line) map[string]manifest.Line {
	m := map[string]manifest.Line{}
	for _, l := range lines {
		m[l.URI] = l
	}
	return m
}

func sha1Base32(s string) string {
	sum := sha1.Sum([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])
}

func readPair(t *testing.T, a, b string) (string, string) {
	t.Helper()
	x, err := os.ReadFile(filepath.Join(collisionsDir, a))
	if err != nil {
		corpustest.Missing(t, "shared collisions absent: %v", err)
	}
	y, err := os.ReadFile(filepath.Join(collisionsDir, b))
	if err != nil {
		t.Fatal(err)
	}
	return string(x), string(y)
}

// TestCollisions proves that real colliding payloads end in different ext
// classes and are never numbered as copies of each other, while identical
// payloads at other URLs, files and dates are numbered 1, 2, 3 from the
// earliest.
func TestCollisions(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		algo digest.Algorithm
	}{
		{"md5 Wang et al.", "wang1.bin", "wang2.bin", digest.MD5},
		{"md5 fastcoll", "fastcoll1.bin", "fastcoll2.bin", digest.MD5},
		{"md5 single block", "single-ipc1.bin", "single-ipc2.bin", digest.MD5},
		{"sha1 SHAmbles", "sha-mbles-1.bin", "sha-mbles-2.bin", digest.SHA1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, y := readPair(t, tt.a, tt.b)
			// A common suffix keeps the collision (Merkle-Damgard).
			suffix := strings.Repeat("same page body\n", 100)
			x, y = x+suffix, y+suffix
			dir := collection{
				"a.warc.gz": warctest.Gzip(
					warctest.Response("http://a/x", "2020-01-01T00:00:00Z", x),
					warctest.Response("http://a/y", "2020-01-02T00:00:00Z", y)),
				"b.warc": []byte(warctest.Response("http://b/x-again", "2020-01-03T00:00:00Z", x) +
					warctest.Response("http://b/y-again", "2020-01-04T00:00:00Z", y)),
				"c/d.warc.gz": warctest.Gzip(warctest.Response("http://c/x-third", "2020-01-05T00:00:00Z", x)),
			}.write(t)
			lines := hashDir(t, dir, tt.algo)
			if len(lines) != 5 || lines[0].Digest != lines[4].Digest {
				t.Fatalf("want 5 lines sharing one %s digest, got %v", tt.algo, lines)
			}
			got, st, warnings := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true, Jobs: 2}, lines)
			m := byURI(got)
			want := map[string][3]any{ // ext, copy, refuri
				"http://a/x":       {0, 1, "-"},
				"http://b/x-again": {0, 2, "http://a/x"},
				"http://c/x-third": {0, 3, "http://a/x"},
				"http://a/y":       {1, 1, "-"},
				"http://b/y-again": {1, 2, "http://a/y"},
			}
			for uri, w := range want {
				l := m[uri]
				if l.Class != w[0] || l.Copy != w[1] || l.RefURI != w[2] {
					t.Errorf("%s: ext %d copy %d ref %s, want %v", uri, l.Class, l.Copy, l.RefURI, w)
				}
			}
			if st.Collisions != 1 || st.Stale != 0 || st.Clusters != 1 || st.Fetched != 6 {
				t.Errorf("stats %+v: want 1 collision, 1 cluster, 6 fetches (5 + the colliding one again), no stale", st)
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0].Error(), "hash collision") {
				t.Errorf("warnings %v, want one collision report", warnings)
			}
		})
	}
}

// TestPins proves that a response an existing revisit refers to is never
// numbered as a duplicate, whether the revisit line carries the digest (it
// sorts first in its cluster) or names none in the manifest's algorithm
// (it sorts before every cluster), and that revisit lines pass through.
func TestPins(t *testing.T) {
	body := strings.Repeat("logo bytes ", 40)
	sha1Body := "sha1:" + sha1Base32(body)
	revisit := func(digestHeader string) string {
		extra := []string{"WARC-Refers-To-Target-URI: http://p/2", "WARC-Refers-To-Date: 2021-01-02T00:00:00Z"}
		if digestHeader != "" {
			extra = append(extra, "WARC-Payload-Digest: "+digestHeader)
		}
		return warctest.Record("revisit", "http://p/4", "2021-01-04T00:00:00Z", "HTTP/1.1 200 OK\r\n\r\n", extra...)
	}
	tests := []struct {
		name    string
		header  string
		digest  string // of the revisit line
		pinned  int64
		fetched int64
	}{
		{"revisit line with the digest", sha1Body, sha1Body, 1, 3},
		{"revisit line in another algorithm", "md5:" + strings.Repeat("0", 32), manifest.NoDigest, 1, 3},
		{"revisit line without digest", "", manifest.NoDigest, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := collection{
				"a.warc": []byte(warctest.Response("http://p/1", "2021-01-01T00:00:00Z", body) +
					warctest.Response("http://p/2", "2021-01-02T00:00:00Z", body) +
					warctest.Response("http://p/3", "2021-01-03T00:00:00Z", body) + revisit(tt.header)),
			}.write(t)
			lines := hashDir(t, dir, digest.SHA1)
			got, st, warnings := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true}, lines)
			if len(warnings) != 0 {
				t.Fatalf("warnings %v", warnings)
			}
			m := byURI(got)
			want := map[string][2]any{ // copy, refuri
				"http://p/1": {1, "-"},
				"http://p/2": {1, "-"}, // the revisit's original stays a response
				"http://p/3": {2, "http://p/1"},
				"http://p/4": {0, "http://p/2"},
			}
			for uri, w := range want {
				l := m[uri]
				if l.Copy != w[0] || l.RefURI != w[1] {
					t.Errorf("%s: %q, want copy %v ref %v", uri, l.String(), w[0], w[1])
				}
			}
			if l := m["http://p/4"]; !l.IsRevisit() || l.Digest != tt.digest {
				t.Errorf("revisit line %q not passed through with digest %s", l.String(), tt.digest)
			}
			if st.Pinned != tt.pinned || st.Fetched != tt.fetched || st.Revisits != 1 {
				t.Errorf("stats %+v, want %d pinned, %d fetched, 1 revisit line", st, tt.pinned, tt.fetched)
			}
		})
	}
	t.Run("one response and revisit lines: nothing fetched", func(t *testing.T) {
		dir := collection{"a.warc": []byte(warctest.Response("http://p/2", "2021-01-02T00:00:00Z", body) + revisit(sha1Body))}.write(t)
		got, st, _ := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true}, hashDir(t, dir, digest.SHA1))
		if st.Fetched != 0 || len(got) != 2 || byURI(got)["http://p/2"].Copy != 1 {
			t.Errorf("stats %+v, lines %v: want the response kept unfetched and the revisit line", st, got)
		}
	})
}

// TestPolicies proves which byte-identical captures share a class under
// each policy: replay keeps apart those a replay tool would serve
// differently (status, type, encoding, container format), uri those of
// other URIs, payload none.
func TestPolicies(t *testing.T) {
	body := strings.Repeat("same bytes ", 40)
	resp := func(uri, date string, head string) string {
		return warctest.Record("response", uri, date, head+"\r\n"+body, "Content-Type: application/http; msgtype=response")
	}
	dir := collection{
		"a.warc": []byte(
			resp("http://x/1", "2021-01-01T00:00:00Z", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n") +
				resp("http://x/2", "2021-01-02T00:00:00Z", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n") +
				resp("http://x/1", "2021-01-03T00:00:00Z", "HTTP/1.1 200 OK\r\ncontent-type:  TEXT/plain\r\nServer: other\r\n") +
				resp("http://x/1", "2021-01-04T00:00:00Z", "HTTP/1.1 203 Non-Authoritative\r\nContent-Type: text/plain\r\n") +
				resp("http://x/2", "2021-01-05T00:00:00Z", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n") +
				resp("http://x/1", "2021-01-06T00:00:00Z", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n") +
				resp("http://x/2", "2021-01-07T00:00:00Z", "HTTP/1.1 203 Non-Authoritative\r\nContent-Type: text/plain\r\n")),
	}.write(t)
	lines := hashDir(t, dir, digest.SHA1)
	tests := []struct {
		policy policy.Policy
		// copy and refdate day by capture day 1..7
		want [7]string
	}{
		{policy.Payload, [7]string{"1 -", "2 01", "3 01", "4 01", "5 01", "6 01", "7 01"}},
		{policy.Replay, [7]string{"1 -", "2 01", "3 01", "1 -", "1 -", "1 -", "2 04"}},
		{policy.URI, [7]string{"1 -", "1 -", "2 01", "3 01", "2 02", "4 01", "3 02"}},
	}
	for _, tt := range tests {
		t.Run(tt.policy.String(), func(t *testing.T) {
			got, _, _ := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true, Policy: tt.policy}, lines)
			for _, l := range got {
				day := l.Date[8:10]
				ref := "-"
				if l.Copy > 1 {
					ref = l.RefDate[8:10]
				}
				want := tt.want[int(day[1]-'1')]
				if g := fmt.Sprintf("%d %s", l.Copy, ref); g != want {
					t.Errorf("day %s (%s): copy and ref day %q, want %q", day, l.URI, g, want)
				}
			}
		})
	}
}

// TestStale proves that a line whose record no longer matches it is left
// out, reported with file and offset, and never becomes an original: the
// next valid line of its cluster does.
func TestStale(t *testing.T) {
	body := strings.Repeat("payload ", 50)
	first := warctest.Response("http://s/1", "2021-01-01T00:00:00Z", body)
	second := warctest.Response("http://s/2", "2021-01-02T00:00:00Z", body)
	third := warctest.Response("http://s/3", "2021-01-03T00:00:00Z", body)
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string, lines []manifest.Line) []manifest.Line
		reason error
	}{
		{"payload changed after warcsum", func(t *testing.T, dir string, lines []manifest.Line) []manifest.Line {
			p := filepath.Join(dir, "one.warc")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(data, []byte("payload"), []byte("PAYLOAD"), 1), 0o644)
			return lines
		}, manifest.ErrDigestMismatch},
		{"file truncated", func(t *testing.T, dir string, lines []manifest.Line) []manifest.Line {
			p := filepath.Join(dir, "one.warc")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, data[:len(data)-100], 0o644)
			return lines
		}, nil},
		{"file missing", func(t *testing.T, dir string, lines []manifest.Line) []manifest.Line {
			os.Remove(filepath.Join(dir, "one.warc"))
			return lines
		}, os.ErrNotExist},
		{"offset inside a record", func(t *testing.T, dir string, lines []manifest.Line) []manifest.Line {
			for i := range lines {
				if lines[i].File == "one.warc" {
					lines[i].Offset += 10
				}
			}
			return lines
		}, manifest.ErrNotARecord},
		{"length longer than the record", func(t *testing.T, dir string, lines []manifest.Line) []manifest.Line {
			os.WriteFile(filepath.Join(dir, "one.warc"), []byte(first+first), 0o644)
			for i := range lines {
				if lines[i].File == "one.warc" {
					lines[i].Length += 10
				}
			}
			return lines
		}, manifest.ErrNotARecord},
		{"URI of the line differs", func(t *testing.T, dir string, lines []manifest.Line) []manifest.Line {
			for i := range lines {
				if lines[i].File == "one.warc" {
					lines[i].URI = "http://s/other"
				}
			}
			return lines
		}, manifest.ErrFieldsChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := collection{
				"one.warc":   []byte(first),
				"two.warc":   []byte(second),
				"three.warc": []byte(third),
			}.write(t)
			lines := tt.damage(t, dir, hashDir(t, dir, digest.SHA1))
			sortByOrder(lines, manifest.ByDigest)
			got, st, warnings := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true}, lines)
			if st.Stale != 1 || len(got) != 2 {
				t.Fatalf("stale %d, %d lines out; want 1 stale and 2 lines", st.Stale, len(got))
			}
			var se *StaleError
			if len(warnings) != 1 || !errors.As(warnings[0], &se) || se.File != "one.warc" {
				t.Fatalf("warnings %v, want one *StaleError for one.warc", warnings)
			}
			if tt.reason != nil && !errors.Is(warnings[0], tt.reason) {
				t.Errorf("warning %v does not wrap %v", warnings[0], tt.reason)
			}
			m := byURI(got)
			if l := m["http://s/2"]; l.Copy != 1 {
				t.Errorf("the next valid line should be the original: %q", l.String())
			}
			if l := m["http://s/3"]; l.Copy != 2 || l.RefURI != "http://s/2" {
				t.Errorf("the third line should refer to the second: %q", l.String())
			}
		})
	}
}

// TestInputErrors proves that unsorted, malformed or wrongly-sized input
// stops the run with the line number, and that an unsafe file name is
// refused.
func TestInputErrors(t *testing.T) {
	l1 := "a.warc 0 10 http://a/ 2020-01-01T00:00:00Z sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
	l2 := "a.warc 20 10 http://b/ 2020-01-01T00:00:00Z sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\n"
	tests := []struct {
		name, input, want string
	}{
		{"unsorted", l2 + l1, "test.manifest:2: line out of order: not sorted by digest, ext, date, file, offset; sort the input with LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n"},
		{"numbered line", strings.TrimSuffix(l1, "\n") + " 0 1 - -\n", "test.manifest:1: a numbered line (copy 1)"},
		{"malformed", l1 + "a.warc 0 10 http://a/\n", "test.manifest:2: 4 fields"},
		{"seven fields", strings.TrimSuffix(l1, "\n") + " 0\n", "test.manifest:1: 7 fields, want 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			res := Resolver{Source: &source.Locator{Roots: []string{t.TempDir()}}}
			_, err := res.Run(context.Background(), manifest.NewReader(strings.NewReader(tt.input), "test.manifest"), &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("name leaving the root", func(t *testing.T) {
		lines := []manifest.Line{
			{File: "../etc/x.warc", Offset: 0, Length: 10, URI: "u", Date: "d", Digest: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Fields: 6},
			{File: "../etc/x.warc", Offset: 10, Length: 10, URI: "u", Date: "d", Digest: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Fields: 6},
		}
		_, st, warnings := resolve(t, Resolver{Source: &source.Locator{Roots: []string{t.TempDir()}}}, lines)
		if st.Stale != 2 || !errors.Is(warnings[0], source.ErrUnsafeName) {
			t.Errorf("stale %d, warnings %v: want both refused as unsafe", st.Stale, warnings)
		}
	})
}

// TestLargeClassesSpill proves that classes above ClassMemory are compared
// from a temporary file with the same result, and that the output does not
// depend on the number of jobs.
func TestLargeClassesSpill(t *testing.T) {
	files := collection{}
	for i := range 6 {
		var recs []string
		for j := range 5 {
			body := fmt.Sprintf("%d", j%3) + strings.Repeat("x", 5000+j%3)
			recs = append(recs, warctest.Response(fmt.Sprintf("http://f%d/%d", i, j), fmt.Sprintf("2020-0%d-0%dT00:00:00Z", i+1, j+1), body))
		}
		files[fmt.Sprintf("f%d.warc.gz", i)] = warctest.Gzip(recs...)
	}
	dir := files.write(t)
	lines := hashDir(t, dir, digest.SHA1)
	var want []byte
	for _, c := range []struct{ jobs, memory int }{{1, 0}, {4, 0}, {2, 100}, {3, 1}} {
		got, st, warnings := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true, Jobs: c.jobs, ClassMemory: int64(c.memory)}, lines)
		if len(warnings) != 0 || st.Stale != 0 || st.Clusters != 3 || len(got) != 30 {
			t.Fatalf("jobs %d memory %d: stats %+v warnings %v", c.jobs, c.memory, st, warnings)
		}
		if want == nil {
			want = format(got)
		} else if !bytes.Equal(format(got), want) {
			t.Errorf("jobs %d memory %d: output differs", c.jobs, c.memory)
		}
	}
}

// TestStaleOffsetBeforeRecord proves that a line whose offset points at the
// line ends before a record (plain file) is stale, not the record after them.
func TestStaleOffsetBeforeRecord(t *testing.T) {
	body := strings.Repeat("x", 300)
	dir := collection{
		"a.warc": []byte(warctest.Response("http://a/", "2020-01-01T00:00:00Z", body) + "\r\n" + warctest.Response("http://b/", "2020-01-02T00:00:00Z", body)),
		"c.warc": []byte(warctest.Response("http://c/", "2020-01-03T00:00:00Z", body)),
	}.write(t)
	lines := hashDir(t, dir, digest.SHA1)
	for i := range lines {
		if lines[i].URI == "http://b/" {
			lines[i].Offset -= 2 // the extra CRLF before the record
			lines[i].Length += 2
		}
	}
	sortByOrder(lines, manifest.ByDigest)
	got, st, _ := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}}, lines)
	if st.Stale != 1 || len(got) != 2 {
		t.Errorf("stale %d, %d lines: want the shifted line stale", st.Stale, len(got))
	}
}

// TestCancelledRunReturns proves that a cancelled run (Ctrl-C, or a fatal
// error elsewhere) returns instead of waiting for tasks never started.
func TestCancelledRunReturns(t *testing.T) {
	var in strings.Builder
	for i := range 200 {
		d := "sha1:" + strings.Repeat("A", 32-len(fmt.Sprint(i/2))) + strings.Map(func(r rune) rune { return 'A' + (r - '0') }, fmt.Sprint(i/2))
		fmt.Fprintf(&in, "f.warc %d 10 http://x/%d 2020-01-01T00:00:00Z %s\n", i*10, i, d)
	}
	// The race this guards against strands a task only some of the time:
	// repeat the cancelled run.
	for range 30 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() {
			res := Resolver{Source: &source.Locator{Roots: []string{t.TempDir()}}, Jobs: 2}
			_, err := res.Run(ctx, manifest.NewReader(strings.NewReader(in.String()), "m"), io.Discard)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
}

// TestRunLeavesResolverAsGiven runs one Resolver twice: Run counts its
// progress where the caller asked (Resolver.Progress) or nowhere, and
// leaves the Resolver's fields as they were given, so that the same value
// runs again as configured.
func TestRunLeavesResolverAsGiven(t *testing.T) {
	body := "the same payload, twice"
	dir := collection{"a.warc": []byte(warctest.Response("http://p/1", "2021-01-01T00:00:00Z", body) +
		warctest.Response("http://p/2", "2021-01-02T00:00:00Z", body))}.write(t)
	lines := hashDir(t, dir, digest.SHA1)
	for _, tc := range []struct {
		name string
		prog *Progress
	}{{"no progress asked for", nil}, {"progress asked for", new(Progress)}} {
		t.Run(tc.name, func(t *testing.T) {
			res := &Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true, Progress: tc.prog}
			for run := 1; run <= 2; run++ {
				var out bytes.Buffer
				st, err := res.Run(context.Background(), manifest.NewReader(bytes.NewReader(format(lines)), "test.manifest"), &out)
				if err != nil || st.Fetched != 2 {
					t.Fatalf("run %d: %v, stats %+v", run, err, st)
				}
				if res.Progress != tc.prog {
					t.Fatalf("run %d: Run set the Resolver's Progress to %p, given %p", run, res.Progress, tc.prog)
				}
				if tc.prog != nil && tc.prog.Fetched.Load() != int64(2*run) {
					t.Errorf("run %d: the progress given counts %d fetched, want %d", run, tc.prog.Fetched.Load(), 2*run)
				}
			}
		})
	}
}

// TestFromManifestNumbersAsComparing proves that numbering from the
// manifest alone (FromManifest, resolved on one goroutine) writes the
// lines the comparing resolve writes, byte for byte and in the same
// order, with the same counts but the reads, wherever the payloads agree
// with their digests: more single-response digests than a batch holds, a
// cluster longer than a group's read-ahead, revisit lines that pin their
// targets with and without a digest, and a record listed twice.
func TestFromManifestNumbersAsComparing(t *testing.T) {
	var file strings.Builder
	for i := range 300 {
		file.WriteString(warctest.Response(fmt.Sprintf("http://single/%d", i), "2021-01-01T00:00:00Z", fmt.Sprintf("payload %d of its own", i)))
	}
	for i := range 40 {
		file.WriteString(warctest.Response(fmt.Sprintf("http://long/%d", i%7), fmt.Sprintf("2021-02-%02dT00:00:%02dZ", 1+i%28, i), "a payload crawled forty times"))
	}
	logo := strings.Repeat("logo bytes ", 40)
	for i := range 3 {
		file.WriteString(warctest.Response(fmt.Sprintf("http://logo/%d", i), fmt.Sprintf("2021-03-0%dT00:00:00Z", i+1), logo))
	}
	file.WriteString(warctest.Record("revisit", "http://logo/9", "2021-03-09T00:00:00Z", "HTTP/1.1 200 OK\r\n\r\n",
		"WARC-Refers-To-Target-URI: http://logo/1", "WARC-Refers-To-Date: 2021-03-02T00:00:00Z", "WARC-Payload-Digest: sha1:"+sha1Base32(logo)))
	file.WriteString(warctest.Record("revisit", "http://long/9", "2021-03-09T00:00:00Z", "HTTP/1.1 200 OK\r\n\r\n",
		"WARC-Refers-To-Target-URI: http://long/3", "WARC-Refers-To-Date: 2021-02-04T00:00:03Z"))
	dir := collection{"a.warc": []byte(file.String())}.write(t)
	lines := hashDir(t, dir, digest.SHA1)
	// The same record listed twice (a line repeated), in the long cluster.
	for i, l := range lines {
		if l.URI == "http://long/5" {
			lines = slices.Insert(lines, i, l)
			break
		}
	}
	run := func(res Resolver) ([]byte, Stats) {
		t.Helper()
		var out bytes.Buffer
		res.Warn = func(error) {}
		st, err := res.Run(context.Background(), manifest.NewReader(bytes.NewReader(format(lines)), "test.manifest"), &out)
		if err != nil {
			t.Fatal(err)
		}
		return out.Bytes(), st
	}
	comparing, cst := run(Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true, Jobs: 2, Policy: policy.Payload})
	fromManifest, fst := run(Resolver{Number: true, Jobs: 2, Policy: policy.Payload, FromManifest: true})
	if !bytes.Equal(fromManifest, comparing) {
		t.Errorf("from the manifest:\n%s\nthe comparing resolve:\n%s", fromManifest, comparing)
	}
	if fst.Fetched != 0 || cst.Fetched == 0 {
		t.Errorf("fetched %d from the manifest, %d comparing: want none, some", fst.Fetched, cst.Fetched)
	}
	cst.Fetched, cst.Compared = 0, 0
	if fst != cst {
		t.Errorf("stats from the manifest %+v, comparing %+v", fst, cst)
	}
	if fst.Clusters != 2 || fst.Pinned != 2 || fst.Revisits != 2 || fst.Repeated != 1 || fst.Written != int64(len(lines)-1) {
		t.Errorf("stats %+v: want 2 clusters, 2 pinned, 2 revisit lines, 1 repeated, every other line written", fst)
	}
}
