package clustere2e

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/rewritetest"
	"warcdedup/internal/slurmtest"
	"warcdedup/internal/storagetest"
	"warcdedup/internal/warctest"
)

// TestClusterCompareOnce runs warcdedup cluster (each duplicate compared
// once, the default) on a collection holding a real SHA-1 collision pair
// (sha-mbles, a common body appended) as payloads of four captures in
// four files: x, then y (same digest, other bytes), then x and y again.
// Resolve numbers the copies from the manifests alone, reading no record
// over HTTP (every resolve task's count is 0); the rewrites compare each
// duplicate with the original it was numbered with: the copy of x
// becomes a revisit, y and its copy differ from x and are kept apart; the
// collisions task resolves that digest again byte for byte, y becomes
// the original of a class of its own (never rewritten: its file byte for
// byte as before) and the second rewrite turns y's copy into its
// revisit. Numbering, revisits, totals and files are warcdedup run's.
func TestClusterCompareOnce(t *testing.T) {
	needCluster(t)
	dir := filepath.Join("..", "..", "..", "shared", "collisions")
	pa, err := os.ReadFile(filepath.Join(dir, "sha-mbles-1.bin"))
	if err != nil {
		corpustest.Missing(t, "the collision pairs: %v", err)
	}
	pb, err := os.ReadFile(filepath.Join(dir, "sha-mbles-2.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(pa, pb) {
		t.Fatal("the pair is the same bytes")
	}
	suffix := strings.Repeat("common body of both members of the pair ", 8192/40)
	x, y := string(pa)+suffix, string(pb)+suffix
	page := func(uri, date, body string) string {
		return warctest.Record("response", uri, date, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body),
			"Content-Type: application/http; msgtype=response")
	}
	base := t.TempDir()
	os.Chmod(base, 0o755)
	src := filepath.Join(base, "pristine")
	collection := map[string]string{
		"one.warc":   page("http://a.example/", "2024-01-01T00:00:01Z", x),
		"two.warc":   page("http://b.example/", "2024-01-02T00:00:01Z", y),
		"three.warc": page("http://c.example/", "2024-01-03T00:00:01Z", x),
		"four.warc":  page("http://d.example/", "2024-01-04T00:00:01Z", y),
	}
	for name, body := range collection {
		os.MkdirAll(src, 0o755)
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := runBaseline(t, src, base, "--keep-work")
	if b.code != 0 || b.stats.Totals.RevisitsWritten != 2 {
		t.Fatalf("warcdedup run: exit %d, %d revisits: want the copies of x and of y rewritten", b.code, b.stats.Totals.RevisitsWritten)
	}
	c := slurmtest.Start(t, hostNames...)
	roots := spread(t, src, filepath.Join(base, "cluster"))
	st := storagetest.Start(t, storageHosts(roots)...)
	hosts := hostsFile(t, filepath.Join(base, "cluster"), roots, st, false)
	work := filepath.Join(base, "cluster", "work")
	code, stderr := runCluster(t, c, "--work-dir", work, hosts)
	t.Logf("warcdedup cluster: exit %d\n%s", code, stderr)
	rep := readStats(t, work)
	if code != 0 || rep.Totals != b.stats.Totals {
		t.Errorf("exit %d, totals differ from warcdedup run's:\n got %+v\nwant %+v", code, rep.Totals, b.stats.Totals)
	}
	changed := map[string]bool{}
	for _, h := range hostNames {
		for _, rel := range files(t, roots[h]) {
			changed[rel] = sha(t, filepath.Join(roots[h], rel)) != sha(t, filepath.Join(src, rel))
			if sha(t, filepath.Join(roots[h], rel)) != sha(t, filepath.Join(b.dir, rel)) {
				t.Errorf("%s on %s differs from warcdedup run's", rel, h)
			}
		}
	}
	for name, want := range map[string]bool{"one.warc": false, "two.warc": false, "three.warc": true, "four.warc": true} {
		if changed[name] != want {
			t.Errorf("%s: changed %v, want %v (the collision y is never rewritten against x; the copies of x and of y are)", name, changed[name], want)
		}
	}
	var apart int64
	for _, h := range hostNames {
		var m struct{ Rewrite struct{ Apart int64 } }
		readJSONFile(t, filepath.Join(work, "tasks", "rewrite@"+h, "0.json"), &m)
		apart += m.Rewrite.Apart
	}
	if apart != 2 {
		t.Errorf("%d duplicates kept apart by the first rewrites, want 2 (y and its copy)", apart)
	}
	// The same numbering as run's, and the same revisits (run keeps the
	// second rewrite's apart, in saved-collisions.tsv).
	for _, f := range []string{"numbered.manifest", "by-file.manifest"} {
		if got, want := workLines(t, work, f), workLines(t, b.work, f); !slices.Equal(got, want) {
			t.Errorf("%s differs from warcdedup run's:\n%s\nrun's:\n%s", f, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	want := append(workLines(t, b.work, "saved.tsv"), workLines(t, b.work, "saved-collisions.tsv")...)
	slices.Sort(want)
	if got := workLines(t, work, "saved.tsv"); !slices.Equal(got, want) || len(got) != 2 {
		t.Errorf("saved.tsv: %q, warcdedup run's %q: want the copies of x and of y", got, want)
	}
	if got, want := rewritetest.ComposedLog(t, filepath.Join(work, "rewrite.log")), rewritetest.ComposedLog(t, filepath.Join(b.work, "rewrite.log")); !slices.Equal(got, want) {
		t.Errorf("rewrite logs differ: %q, warcdedup run's %q", got, want)
	}
	resolves, _ := filepath.Glob(filepath.Join(work, "tasks", "resolve", "*.json"))
	if len(resolves) == 0 {
		t.Fatal("no resolve task's result")
	}
	for _, name := range resolves {
		var m struct {
			HTTP *struct{ Requests, Bytes int64 }
		}
		readJSONFile(t, name, &m)
		if m.HTTP == nil || m.HTTP.Bytes != 0 || m.HTTP.Requests != 0 {
			t.Errorf("%s: resolve read over HTTP: %+v, want a count of none", name, m.HTTP)
		}
	}
}

// workLines returns the lines of the file named name (or name.gz) in a
// work directory (or, failing that, beneath it), decompressed, sorted.
func workLines(t *testing.T, dir, name string) []string {
	t.Helper()
	var found string
	for _, n := range []string{name, name + ".gz"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil && found == "" {
			found = filepath.Join(dir, n)
		}
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && found == "" && (d.Name() == name || d.Name() == name+".gz") {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no %s in %s", name, dir)
	}
	f, err := gzfile.Open(found)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	slices.Sort(lines)
	return lines
}
