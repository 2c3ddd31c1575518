package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/scripts/gen"
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
	out, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll")
	t.Log(stderr)
	if code != 0 || !strings.Contains(out, "restored: ") {
		t.Fatalf("warcdedup undo: exit %d\n%s", code, stderr)
	}
	// Each file restored is said to be bit for bit the file before the
	// run exactly when it is.
	rep := readUndoReport(t, filepath.Join(work, "keep"))
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
		verdict, restored := rep.verdicts[name]
		if restored && strings.HasPrefix(verdict, "restored bit for bit") != bytes.Equal(got, want) {
			t.Errorf("%s: undo says %q, and its bytes are equal: %v", name, verdict, bytes.Equal(got, want))
		}
		if restored {
			t.Logf("%s: %s", name, verdict)
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
	if int(rep.BitExact+rep.BytesDiffer) != len(r.byFile) || len(rep.Unexplained) > 0 {
		t.Errorf("undo.json: %d files restored bit for bit, %d not, unexplained %v; %d were rewritten", rep.BitExact, rep.BytesDiffer, rep.Unexplained, len(r.byFile))
	}
	t.Logf("%d files rewritten: %d restored bit for bit, %d with other bytes", len(r.byFile), rep.BitExact, rep.BytesDiffer)
	// Nothing left to undo.
	out, stderr, code = sh(t, work, "warcdedup undo --work-dir keep coll")
	if code != 0 || !strings.Contains(out, "nothing to undo") {
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

// undoCollection writes a generated collection of files, one per crawl
// directory when crawls, else all in coll, under work, and returns the
// SHA-256 of each file's uncompressed bytes by path relative to work.
func undoCollection(t *testing.T, work string, crawls bool) map[string]string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "gen")
	res, err := gen.Write(tmp, gen.Config{Files: 4, Records: 400, DupRate: 0.4, Seed: 23, MeanPayload: 4 << 10, Sequential: crawls,
		CrossFile: 0.9, NonCandidates: true, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11, gen.WARC11Gz, gen.WARC10}})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range res.Names {
		dir := filepath.Join(work, "coll")
		if crawls {
			dir = filepath.Join(work, "crawls", fmt.Sprintf("crawl-%d", i/2))
		}
		copyFile(t, filepath.Join(tmp, name), filepath.Join(dir, name))
	}
	return uncompressedSums(t, work)
}

// uncompressedSums returns the SHA-256 of the uncompressed bytes of every
// WARC file under dir, by path relative to dir.
func uncompressedSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".warc") || strings.Contains(p, ".warcdedup") || strings.Contains(p, "/ix/") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := inflateAll(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		s := sha256.Sum256(raw)
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = hex.EncodeToString(s[:])
		return nil
	})
	return sums
}

// sameSumsUnder checks the sums of got under prefix against want's.
func sameSumsUnder(t *testing.T, what, prefix string, got, want map[string]string) {
	t.Helper()
	n := 0
	for name, sum := range want {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		n++
		if got[name] != sum {
			t.Errorf("%s: %s is not as it was", what, name)
		}
	}
	if n == 0 {
		t.Errorf("%s: no file under %s", what, prefix)
	}
}

// TestUndoCrawlIndex is issue 20 item 7 (a): a crawl run with --index,
// whose log names its files CRAWL/PATH, is undone. Committed, undo refuses
// it (the index records its originals where they are); taken out of the
// index, undo restores every revisit, those referring to the earlier
// crawl's records included, and leaves the earlier crawl untouched.
func TestUndoCrawlIndex(t *testing.T) {
	work := t.TempDir()
	orig := undoCollection(t, work, true)
	for _, crawl := range []string{"crawl-0", "crawl-1"} {
		if _, stderr, code := sh(t, work, "warcdedup run -q --index ix crawls/"+crawl); code != 0 {
			t.Fatalf("run --index %s: exit %d\n%s", crawl, code, stderr)
		}
	}
	deduplicated := uncompressedSums(t, work)
	changed := 0
	for name, sum := range deduplicated {
		if strings.HasPrefix(name, "crawls/crawl-1/") && sum != orig[name] {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("the run of crawl-1 rewrote none of its files")
	}
	_, stderr, code := sh(t, work, "warcdedup undo --work-dir ix/work/crawl-1 crawls/crawl-1")
	if code != 2 || !strings.Contains(stderr, "crawl crawl-1 is committed to the index") {
		t.Errorf("undo of a committed crawl: exit %d, want 2 and the crawl named\n%s", code, stderr)
	}
	sameSumsUnder(t, "after undo refused", "crawls/", uncompressedSums(t, work), deduplicated)
	if _, stderr, code := sh(t, work, "warcdedup index remove --index ix crawl-1"); code != 0 {
		t.Fatalf("index remove: exit %d\n%s", code, stderr)
	}
	var out string
	out, stderr, code = sh(t, work, "warcdedup undo --work-dir ix/work/crawl-1 crawls/crawl-1")
	t.Log(stderr)
	if code != 0 || !strings.Contains(out, "restored: ") {
		t.Fatalf("undo of the crawl out of the index: exit %d\n%s", code, stderr)
	}
	after := uncompressedSums(t, work)
	sameSumsUnder(t, "crawl-1 undone", "crawls/crawl-1/", after, orig)
	sameSumsUnder(t, "crawl-0 after crawl-1's undo", "crawls/crawl-0/", after, deduplicated)
	out, stderr, code = sh(t, work, "warcdedup undo --index ix crawls/crawl-1")
	if code != 0 || !strings.Contains(out, "nothing to undo") || !strings.Contains(out, "checked: 2 files") {
		t.Errorf("undo again, the work directory found in the index: exit %d\n%s", code, stderr)
	}
}

// TestUndoDamagedLog is issue 20 items 7 (b) and 5: undo must not say it
// is done while revisits the runs wrote are left. Each case damages what
// undo knows, and undo must exit non-zero naming what it could not
// restore, never 0.
func TestUndoDamagedLog(t *testing.T) {
	logLines := func(t *testing.T, work string) []string {
		data, err := os.ReadFile(filepath.Join(work, "keep", "rewrite.log"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.SplitAfter(string(data), "\n")
	}
	writeLog := func(t *testing.T, work string, lines []string) {
		if err := os.WriteFile(filepath.Join(work, "keep", "rewrite.log"), []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(t *testing.T, work string) {
		if _, stderr, code := sh(t, work, "warcdedup run -q --work-dir keep coll"); code != 0 {
			t.Fatalf("run: exit %d\n%s", code, stderr)
		}
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, work string) // after a run
		status int
		want   []string // in stderr
	}{
		{"the log cut between two files' entries", func(t *testing.T, work string) {
			lines := logLines(t, work)
			for i := len(lines) - 1; i > 0; i-- {
				if strings.HasPrefix(lines[i], "# file ") {
					writeLog(t, work, lines[:i])
					return
				}
			}
		}, 2, []string{"entries are lost"}},
		{"the log cut inside a file's entries, its size record gone", func(t *testing.T, work string) {
			lines := logLines(t, work)
			for i := len(lines) - 1; i > 0; i-- {
				if strings.HasPrefix(lines[i], "# file ") && i+2 < len(lines) {
					writeLog(t, work, lines[:i+2])
					os.Remove(filepath.Join(work, "keep", "rewrite.log.size"))
					return
				}
			}
			t.Fatal("no file with two entries")
		}, 1, []string{"entries are missing", "left untouched", ", 1 not"}},
		{"a second run after undo missing from the log, its size record gone", func(t *testing.T, work string) {
			if _, stderr, code := sh(t, work, "warcdedup undo -q --work-dir keep coll"); code != 0 {
				t.Fatalf("undo: exit %d\n%s", code, stderr)
			}
			lines := logLines(t, work)
			run(t, work)
			writeLog(t, work, lines)
			os.Remove(filepath.Join(work, "keep", "rewrite.log.size"))
		}, 1, []string{"not restored", "is not the version the rewrite log's last replacement of it left"}},
		{"a deduplicated file put back from a backup after undo", func(t *testing.T, work string) {
			copyTree(t, filepath.Join(work, "coll"), filepath.Join(work, "backup"))
			if _, stderr, code := sh(t, work, "warcdedup undo -q --work-dir keep coll"); code != 0 {
				t.Fatalf("undo: exit %d\n%s", code, stderr)
			}
			copyTree(t, filepath.Join(work, "backup"), filepath.Join(work, "coll"))
		}, 1, []string{"not restored", "is not the version the rewrite log's last replacement of it left"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			undoCollection(t, work, false)
			run(t, work)
			tt.damage(t, work)
			summary, stderr, code := sh(t, work, "warcdedup undo --work-dir keep coll")
			t.Log(summary + stderr)
			if code != tt.status {
				t.Errorf("undo: exit %d, want %d", code, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(summary+stderr, w) {
					t.Errorf("undo says nothing of %q", w)
				}
			}
		})
	}
}
