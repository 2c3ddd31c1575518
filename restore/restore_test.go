package restore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"warcdedup/digest"
	"warcdedup/inplace"
	"warcdedup/internal/rewritetest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/refs"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/warcsum"
)

// undoOutcome is what a restore reported.
type undoOutcome struct {
	stats   Stats
	err     error
	refused []error
	warns   []error
	logText string
}

// undo restores the revisits under dir that the log text says this
// toolchain wrote (every revisit, with all), looking originals up in a
// manifest of dir as it is now, as warcdedup undo does.
func undo(t testing.TB, dir, logText string, all bool) *undoOutcome {
	t.Helper()
	lines := rewritetest.ParseManifest(t, rewritetest.WarcsumDir(t, dir))
	captures := rewritetest.Captures(t, lines)
	var buf bytes.Buffer
	log := rewritelog.NewLog(&buf)
	moves, err := rewritelog.Load(rewritelog.NewReader(strings.NewReader(logText), "rewrite.log"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(moves)
	if err != nil {
		t.Fatal(err)
	}
	if all {
		files = nil
		inputs, err := warcsum.Collect([]string{dir}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range inputs {
			files = append(files, manifest.EscapeFile(in.Name))
		}
	}
	o := &undoOutcome{}
	var mu sync.Mutex
	r := Restorer{Roots: []string{dir}, Captures: captures, Originals: rewritetest.Originals(t, lines, dir), Written: moves, All: all, Jobs: 2,
		Refused: func(err error) { mu.Lock(); o.refused = append(o.refused, err); mu.Unlock() },
		Warn:    func(err error) { mu.Lock(); o.warns = append(o.warns, err); mu.Unlock() }}
	o.stats, o.err = r.Run(context.Background(), files, log)
	o.logText = buf.String()
	return o
}

// rewriteOutcome is what a deduplication before an undo did.
type rewriteOutcome struct {
	stats   refs.Stats
	logText string
}

// deduplicate rewrites in place the duplicates dups of the collection
// under dir, whose numbered manifest is all, as warcdedup run does, and
// fails the test on any refusal.
func deduplicate(t testing.TB, dir string, dups, all []manifest.Line) *rewriteOutcome {
	t.Helper()
	var buf bytes.Buffer
	var refused []error
	rw := refs.Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 2, Originals: rewritetest.Originals(t, all, dir),
		Refused: func(err error) { refused = append(refused, err) }}
	sorted := slices.Clone(dups)
	rewritetest.SortByFile(sorted)
	st, err := rw.Run(context.Background(), manifest.NewReader(bytes.NewReader(rewritetest.ManifestText(sorted)), "dups.manifest"), rewritelog.NewLog(&buf))
	if err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if len(refused) > 0 {
		t.Fatalf("rewrite refused %v", refused)
	}
	return &rewriteOutcome{stats: st, logText: buf.String()}
}

func mustUndo(t testing.TB, dir, logText string, all bool) *undoOutcome {
	t.Helper()
	o := undo(t, dir, logText, all)
	if o.err != nil {
		t.Fatalf("undo: %v", o.err)
	}
	for _, err := range o.refused {
		t.Errorf("undo refused: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return o
}

// uncompressed is a file's bytes, decompressed if it is gzip: what a
// restored file must equal, byte for byte, the file before deduplication
// as (its revisits' gzip members are new).
func uncompressed(t testing.TB, data []byte) []byte {
	t.Helper()
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameUncompressed reports every file whose uncompressed bytes differ.
func sameUncompressed(t testing.TB, what string, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d files, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		g, w := uncompressed(t, got[name]), uncompressed(t, w)
		if !bytes.Equal(g, w) {
			i := rewritetest.FirstDiff(g, w)
			t.Errorf("%s: %s differs uncompressed at byte %d:\n%q\nwant\n%q", what, name, i, clipAt(g, i), clipAt(w, i))
		}
	}
}

func clipAt(b []byte, i int) []byte {
	return b[max(0, i-80):min(len(b), i+80)]
}

// TestUndoGolden rewrites each golden case (LF line ends, wrong, missing
// and unknown digests, an extension field, Content-Length first) in a
// .warc and a .warc.gz file and restores it: the record comes back byte
// for byte (uncompressed), whether the rule restores it alone or from
// what the revisit kept.
func TestUndoGolden(t *testing.T) {
	for _, tc := range rewritetest.GoldenCases {
		t.Run(tc.Name, func(t *testing.T) {
			rec := tc.Record()
			dir := t.TempDir()
			orig := strings.Replace(warctest.Record("response", tc.RefURI, rewritetest.GoldenRefDate, tc.Head+string(rewritetest.GoldenPayload)),
				"WARC/1.0", tc.Version, 1)
			warctest.WriteFile(t, dir, "o.warc", []byte(orig))
			warctest.WriteFile(t, dir, "r.warc", rec)
			warctest.WriteFile(t, dir, "r.warc.gz", warctest.Gzip(string(rec)))
			before := rewritetest.Snapshot(t, dir)
			uri, _ := tc.Field("WARC-Target-URI")
			date, _ := tc.Field("WARC-Date")
			d := rewritetest.FormatDigest(tc.Algo, rewritetest.GoldenPayload)
			lines := []manifest.Line{{File: "o.warc", Offset: 0, Length: int64(len(orig)), URI: tc.RefURI, Date: rewritetest.GoldenRefDate,
				Digest: d, Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}}
			for _, name := range []string{"r.warc", "r.warc.gz"} {
				lines = append(lines, manifest.Line{File: name, Offset: 0, Length: int64(len(before[name])), URI: manifest.URIField(&record.Record{URI: uri}), Date: date,
					Digest: d, Copy: 2, RefURI: tc.RefURI, RefDate: rewritetest.GoldenRefDate, Fields: 10})
			}
			var dups []manifest.Line
			for _, l := range lines {
				if l.IsDuplicate() {
					dups = append(dups, l)
				}
			}
			o := deduplicate(t, dir, dups, lines)
			if o.stats.Revisits != 2 {
				t.Fatalf("stats %+v, want 2 revisits", o.stats)
			}
			u := mustUndo(t, dir, o.logText, false)
			if u.stats.Records != 2 || u.stats.Restored != 2 {
				t.Errorf("undo stats %+v, want 2 records in 2 files", u.stats)
			}
			if kept := u.stats.Kept > 0; kept != (tc.KeepsHeader || tc.AddsPayloadDigest) {
				t.Errorf("%d restored from what the revisit kept, want that to be %v", u.stats.Kept, tc.KeepsHeader || tc.AddsPayloadDigest)
			}
			sameUncompressed(t, "after undo", rewritetest.Snapshot(t, dir), before)
			if after := rewritetest.Snapshot(t, dir); !bytes.Equal(after["r.warc"], before["r.warc"]) {
				t.Errorf("r.warc is not byte for byte as it was")
			}
		})
	}
}

// TestUndoGenerated deduplicates generated collections (every WARC
// version and compression, chunked and replay variants) and undoes it:
// every file comes back as it was, uncompressed; the log then names no
// revisit left to restore, and a second undo does nothing.
func TestUndoGenerated(t *testing.T) {
	cfg := gen.Config{Files: 6, Records: 300, DupRate: 0.5, Seed: 11, MeanPayload: 3 << 10, Chunked: 0.2, ReplayVariants: 0.1,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11}}
	c := rewritetest.Generate(t, cfg)
	before := rewritetest.Snapshot(t, c.Dir)
	o := deduplicate(t, c.Dir, c.Dups, c.All)
	if o.stats.Revisits == 0 {
		t.Fatalf("nothing rewritten: %+v", o.stats)
	}
	u := mustUndo(t, c.Dir, o.logText, false)
	if u.stats.Records != o.stats.Revisits || u.stats.Restored != o.stats.Rewritten {
		t.Errorf("restored %d records in %d files; %d revisits were written in %d files", u.stats.Records, u.stats.Restored, o.stats.Revisits, o.stats.Rewritten)
	}
	sameUncompressed(t, "after undo", rewritetest.Snapshot(t, c.Dir), before)
	for name, data := range rewritetest.Snapshot(t, c.Dir) {
		if !strings.HasSuffix(name, ".gz") && !bytes.Equal(data, before[name]) {
			t.Errorf("%s is not byte for byte as it was", name)
		}
	}
	moves, err := rewritelog.Load(rewritelog.NewReader(strings.NewReader(o.logText+u.logText), "log"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if files, err := Files(moves); err != nil || len(files) != 0 {
		t.Errorf("after undo the log still has revisits in %v (%v)", files, err)
	}
	again := mustUndo(t, c.Dir, o.logText+u.logText, false)
	if again.stats.Records != 0 || again.stats.Restored != 0 {
		t.Errorf("a second undo restored %+v", again.stats)
	}
}

// TestUndoRefuses proves that undo leaves a file untouched when it cannot
// restore a revisit this toolchain wrote: its original is gone, the log
// is another file's, or the original's payload is not the one the
// revisit names.
func TestUndoRefuses(t *testing.T) {
	payload := strings.Repeat("payload ", 500)
	setup := func(t *testing.T) (string, string) {
		dir := t.TempDir()
		o := warctest.Response("http://example.com/a", "2024-01-01T00:00:00Z", payload)
		d := warctest.Response("http://example.com/b", "2024-02-01T00:00:00Z", payload)
		warctest.WriteFile(t, dir, "o.warc", []byte(o))
		warctest.WriteFile(t, dir, "d.warc", []byte(d))
		lines := rewritetest.ParseManifest(t, rewritetest.WarcsumDir(t, dir))
		var all, dups []manifest.Line
		for _, l := range lines {
			l.Class, l.RefURI, l.RefDate, l.Fields = 0, "-", "-", 10
			l.Copy = 1
			if l.File == "d.warc" {
				l.Copy, l.RefURI, l.RefDate = 2, "http://example.com/a", "2024-01-01T00:00:00Z"
				dups = append(dups, l)
			}
			all = append(all, l)
		}
		out := deduplicate(t, dir, dups, all)
		if out.stats.Revisits != 1 {
			t.Fatalf("rewrite: %+v", out.stats)
		}
		return dir, out.logText
	}
	tests := []struct {
		name  string
		spoil func(t *testing.T, dir, log string) string // returns the log to use
		want  string
	}{
		{"original gone", func(t *testing.T, dir, log string) string {
			os.Remove(filepath.Join(dir, "o.warc"))
			return log
		}, "no response captured"},
		{"original's payload changed", func(t *testing.T, dir, log string) string {
			o := warctest.Response("http://example.com/a", "2024-01-01T00:00:00Z", strings.Repeat("PAYLOAD ", 500))
			warctest.WriteFile(t, dir, "o.warc", []byte(o))
			return log
		}, "hashes to"},
		{"log of another file", func(t *testing.T, dir, log string) string {
			return strings.ReplaceAll(log, "d.warc", "o.warc")
		}, inplace.ErrNotLogged.Error()},
		{"log of another file, without its \"# file\" lines", func(t *testing.T, dir, log string) string {
			var kept []string
			for _, line := range strings.SplitAfter(strings.ReplaceAll(log, "d.warc", "o.warc"), "\n") {
				if !strings.HasPrefix(line, "# file ") {
					kept = append(kept, line)
				}
			}
			return strings.Join(kept, "")
		}, "the log is not this file's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, log := setup(t)
			log = tt.spoil(t, dir, log)
			before := rewritetest.Snapshot(t, dir)
			u := undo(t, dir, log, false)
			if u.err != nil {
				t.Fatal(u.err)
			}
			if len(u.refused) != 1 || !strings.Contains(u.refused[0].Error(), tt.want) {
				t.Errorf("refused %v, want one refusal saying %q", u.refused, tt.want)
			}
			var re *inplace.RefusedError
			if len(u.refused) == 1 && !errors.As(u.refused[0], &re) {
				t.Errorf("%v is not a *inplace.RefusedError", u.refused[0])
			}
			rewritetest.SameFiles(t, "after a refused undo", rewritetest.Snapshot(t, dir), before)
		})
	}
}

// TestUndoAll makes other tools' revisits whole records: one naming its
// original by URI and date, one naming only the digest (the latest
// capture of its own URI before it is taken), one without an HTTP head
// (the original's is used); a server-not-modified revisit, and one whose
// original is not in the collection, are left and reported.
func TestUndoAll(t *testing.T) {
	payload := strings.Repeat("shared ", 400)
	dg := rewritetest.FormatDigest(digest.SHA1, []byte(payload))
	block := strconv.Itoa(len(warctest.HTTP(200, payload)))
	revisit := func(uri, date, block string, extra ...string) string {
		return warctest.Record("revisit", uri, date, block, append([]string{"WARC-Payload-Digest: " + dg}, extra...)...)
	}
	head := "HTTP/1.1 200 X\r\nContent-Type: application/octet-stream\r\nContent-Length: 2800\r\n\r\n"
	profile := "WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
	dir := t.TempDir()
	warctest.WriteFile(t, dir, "o.warc", []byte(
		warctest.Response("http://example.com/a", "2024-01-01T00:00:00Z", payload)+
			warctest.Response("http://example.com/c", "2024-01-05T00:00:00Z", payload)))
	warctest.WriteFile(t, dir, "r.warc.gz", warctest.Gzip(
		revisit("http://example.com/b", "2024-02-01T00:00:00Z", head, profile,
			"WARC-Refers-To-Target-URI: http://example.com/a", "WARC-Refers-To-Date: 2024-01-01T00:00:00Z"),
		revisit("http://example.com/c", "2024-02-02T00:00:00Z", head, profile),
		revisit("http://example.com/d", "2024-02-03T00:00:00Z", "", profile,
			"WARC-Refers-To-Target-URI: http://example.com/a", "WARC-Refers-To-Date: 2024-01-01T00:00:00Z"),
		revisit("http://example.com/e", "2024-02-04T00:00:00Z", "HTTP/1.1 304 Not Modified\r\n\r\n",
			"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/server-not-modified"),
		revisit("http://example.com/f", "2024-02-05T00:00:00Z", head, profile,
			"WARC-Refers-To-Target-URI: http://example.com/gone", "WARC-Refers-To-Date: 2023-01-01T00:00:00Z"),
		revisit("http://example.com/g", "2024-02-06T00:00:00Z", head,
			"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/uri-agnostic-identical-payload-digest",
			"WARC-Refers-To-Target-URI: http://example.com/c", "WARC-Refers-To-Date: 2024-01-05T00:00:00Z"),
	))
	u := mustUndo(t, dir, "", true)
	if u.stats.Foreign != 4 || u.stats.Left != 2 || u.stats.Records != 0 {
		t.Errorf("stats %+v, want 4 made whole and 2 left", u.stats)
	}
	if len(u.warns) != 2 {
		t.Errorf("warnings %v, want the 2 revisits left", u.warns)
	}
	data := uncompressed(t, rewritetest.Snapshot(t, dir)["r.warc.gz"])
	for _, want := range []string{
		"WARC-Type: response\r\nWARC-Record-ID: <urn:uuid:", // the first, its fields in order
		"WARC-Target-URI: http://example.com/b\r\nWARC-Date: 2024-02-01T00:00:00Z\r\nWARC-Payload-Digest: " + dg + "\r\nContent-Length: " + block + "\r\n\r\n" + head + payload + "\r\n\r\n",
		"WARC-Target-URI: http://example.com/c\r\nWARC-Date: 2024-02-02T00:00:00Z\r\nWARC-Payload-Digest: " + dg + "\r\nContent-Length: " + block + "\r\n\r\n" + head + payload,
		"WARC-Target-URI: http://example.com/d\r\nWARC-Date: 2024-02-03T00:00:00Z\r\nWARC-Payload-Digest: " + dg + "\r\nContent-Length: " + block + "\r\n\r\n" + warctest.HTTP(200, payload),
		"WARC-Target-URI: http://example.com/g\r\nWARC-Date: 2024-02-06T00:00:00Z\r\nWARC-Payload-Digest: " + dg + "\r\nContent-Length: " + block + "\r\n\r\n" + head + payload,
		"WARC-Type: revisit", // e and f stay
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the restored file lacks\n%q", want)
		}
	}
	if strings.Count(string(data), "WARC-Type: revisit") != 2 {
		t.Errorf("want 2 revisits left in\n%s", data)
	}
}

// TestRestoreRetarget re-points revisits whose original goes (a crawl
// removed from an index) to another copy of their payload, and restores
// those whose other copy is not the same bytes or would replay otherwise;
// revisits of other originals are left alone.
func TestRestoreRetarget(t *testing.T) {
	payload := noise(4000, 1) // does not compress: its revisit is smaller even in a .gz file
	dir := t.TempDir()
	warctest.WriteFile(t, dir, "old/o.warc", []byte(warctest.Response("http://example.com/a", "2024-01-01T00:00:00Z", payload)+
		warctest.Response("http://example.com/k", "2024-01-01T00:00:01Z", "kept "+payload)))
	warctest.WriteFile(t, dir, "new/o.warc", []byte(warctest.Response("http://example.com/c", "2024-02-01T00:00:00Z", payload)+
		warctest.Response("http://example.com/x", "2024-02-01T00:00:01Z", noise(4000, 2))+
		warctest.Record("response", "http://example.com/y", "2024-02-01T00:00:02Z", warctest.HTTP(203, payload))))
	dup := func(uri, date, body string) string { return warctest.Response(uri, date, body) }
	warctest.WriteFile(t, dir, "d.warc.gz", warctest.Gzip(dup("http://example.com/b1", "2024-03-01T00:00:00Z", payload),
		dup("http://example.com/b2", "2024-03-01T00:00:01Z", payload), dup("http://example.com/b3", "2024-03-01T00:00:02Z", payload),
		dup("http://example.com/k2", "2024-03-01T00:00:03Z", "kept "+payload)))
	// Deduplicate d.warc.gz against old/o.warc.
	all := rewritetest.ParseManifest(t, rewritetest.WarcsumDir(t, dir))
	var dups []manifest.Line
	for i := range all {
		l := &all[i]
		l.Class, l.Copy, l.RefURI, l.RefDate, l.Fields = 0, 1, "-", "-", 10
		if l.File == "d.warc.gz" {
			l.Copy, l.RefURI, l.RefDate = 2, "http://example.com/a", "2024-01-01T00:00:00Z"
			if strings.HasPrefix(l.URI, "http://example.com/k") {
				l.RefURI, l.RefDate = "http://example.com/k", "2024-01-01T00:00:01Z"
			}
			dups = append(dups, *l)
		}
		if l.File == "new/o.warc" {
			l.Copy = 0 // no class of the rewrite: another crawl's
			l.Fields = 6
		}
	}
	var kept []manifest.Line
	for _, l := range all {
		if l.File != "new/o.warc" {
			kept = append(kept, l)
		}
	}
	o := deduplicate(t, dir, dups, kept)
	if o.stats.Revisits != 4 {
		t.Fatalf("rewrite: %+v", o.stats)
	}
	// The copies that could take old/o.warc's place: b1 -> c (same bytes,
	// same replay), b2 -> x (other bytes), b3 -> y (another status).
	alts := map[string]manifest.Line{}
	for _, l := range rewritetest.ParseManifest(t, rewritetest.WarcsumDir(t, dir)) {
		if l.File == "new/o.warc" {
			alts[l.URI] = l
		}
	}
	next := map[string]string{"http://example.com/b1": "http://example.com/c", "http://example.com/b2": "http://example.com/x", "http://example.com/b3": "http://example.com/y"}
	var mu sync.Mutex
	asked := 0
	lines := rewritetest.ParseManifest(t, rewritetest.WarcsumDir(t, dir))
	captures := rewritetest.Captures(t, lines)
	var buf bytes.Buffer
	log := rewritelog.NewLog(&buf)
	var refused []error
	// Which duplicate's revisit is asked about: the restorer reads them in
	// file order, b1, b2, b3.
	order := []string{"http://example.com/b1", "http://example.com/b2", "http://example.com/b3"}
	r := Restorer{Roots: []string{dir}, Captures: captures, Originals: rewritetest.Originals(t, lines, dir), All: true,
		Only: func(uri, date string) bool { return uri == "http://example.com/a" },
		Retarget: func(orig *manifest.Line, _ string) (manifest.Line, bool) {
			mu.Lock()
			defer mu.Unlock()
			alt, ok := alts[next[order[asked]]]
			asked++
			return alt, ok
		},
		Refused: func(err error) { refused = append(refused, err) }}
	st, err := r.Run(context.Background(), []string{"d.warc.gz"}, log)
	if err != nil || len(refused) > 0 {
		t.Fatalf("run: %v %v", err, refused)
	}
	if st.Repointed != 1 || st.Foreign != 2 || st.Left != 0 {
		t.Errorf("stats %+v, want 1 re-pointed, 2 restored", st)
	}
	data := string(uncompressed(t, rewritetest.Snapshot(t, dir)["d.warc.gz"]))
	for _, want := range []string{
		"WARC-Target-URI: http://example.com/b1\r\n",
		"WARC-Refers-To-Target-URI: http://example.com/c\r\nWARC-Refers-To-Date: 2024-02-01T00:00:00Z\r\n",
		"WARC-Refers-To-Target-URI: http://example.com/k\r\n", // another original's revisit stays
	} {
		if !strings.Contains(data, want) {
			t.Errorf("d.warc.gz lacks %q", want)
		}
	}
	if n := strings.Count(data, "WARC-Type: revisit"); n != 2 {
		t.Errorf("%d revisits left, want 2 (b1 re-pointed, k2 untouched)", n)
	}
	if n := strings.Count(data, payload+"\r\n\r\n"); n != 2 {
		t.Errorf("%d whole records of the payload, want b2 and b3", n)
	}
}

// noise is n bytes of hex digits that do not compress much, from a seed.
func noise(n int, seed byte) string {
	var b strings.Builder
	sum := sha256.Sum256([]byte{seed})
	for b.Len() < n {
		b.WriteString(hex.EncodeToString(sum[:]))
		sum = sha256.Sum256(sum[:])
	}
	return b.String()[:n]
}
