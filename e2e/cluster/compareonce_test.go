package clustere2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/slurmtest"
	"warcdedup/internal/storagetest"
	"warcdedup/internal/warctest"
)

// TestClusterCompareOnce runs warcdedup cluster --compare-once on a
// collection holding a real SHA-1 collision pair (sha-mbles, a common
// body appended) as payloads of four captures in four files: x, then y
// (same digest, other bytes), then x and y again. Resolve numbers the
// copies from the manifests alone, reading no record over HTTP (every
// resolve task's count is 0); the rewrite compares each duplicate with
// the original it was numbered with: the copy of x becomes a revisit,
// the collision y and its copy, which differ from x, are left as they
// are (their files byte for byte as before), listed apart, and the
// report says so. warcdedup run, which resolves those digests again,
// also rewrites the copy of y: what this version of the cluster job
// does not do yet, and why it is not its default.
func TestClusterCompareOnce(t *testing.T) {
	needCluster(t)
	dir := filepath.Join("..", "..", "..", "shared", "collisions")
	pa, err := os.ReadFile(filepath.Join(dir, "sha-mbles-1.bin"))
	if err != nil {
		t.Skipf("the collision pairs: %v", err)
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
	b := runBaseline(t, src, base)
	if b.code != 0 || b.stats.Totals.RevisitsWritten != 2 {
		t.Fatalf("warcdedup run: exit %d, %d revisits: want the copies of x and of y rewritten", b.code, b.stats.Totals.RevisitsWritten)
	}
	c := slurmtest.Start(t, hostNames...)
	roots := spread(t, src, filepath.Join(base, "cluster"))
	st := storagetest.Start(t, storageHosts(roots)...)
	hosts := hostsFile(t, filepath.Join(base, "cluster"), roots, st, false)
	work := filepath.Join(base, "cluster", "work")
	code, stderr := runCluster(t, c, "--compare-once", "--work-dir", work, hosts)
	t.Logf("warcdedup cluster --compare-once: exit %d\n%s", code, stderr)
	rep := readStats(t, work)
	if code != 0 || rep.Totals.Violations != 0 || rep.Totals.RevisitsWritten != 1 {
		t.Errorf("exit %d, totals %+v: want exit 0, no violation, the copy of x rewritten only", code, rep.Totals)
	}
	changed := map[string]bool{}
	for _, h := range hostNames {
		for _, rel := range files(t, roots[h]) {
			changed[rel] = sha(t, filepath.Join(roots[h], rel)) != sha(t, filepath.Join(src, rel))
		}
	}
	for name, want := range map[string]bool{"one.warc": false, "two.warc": false, "three.warc": true, "four.warc": false} {
		if changed[name] != want {
			t.Errorf("%s: changed %v, want %v (the collision and its copy are never rewritten against x)", name, changed[name], want)
		}
	}
	var apart int64
	for _, h := range hostNames {
		var m struct{ Rewrite struct{ Apart int64 } }
		readJSONFile(t, filepath.Join(work, "tasks", "rewrite@"+h, "0.json"), &m)
		apart += m.Rewrite.Apart
	}
	if apart != 2 {
		t.Errorf("%d duplicates listed apart by the rewrites, want 2 (y and its copy)", apart)
	}
	if !strings.Contains(strings.Join(rep.Caveats, "\n"), "2 duplicates stay records") {
		t.Errorf("the report's caveats do not say what was left apart: %q", rep.Caveats)
	}
	var leftApart int64
	for _, r := range rep.NotDeduplicable {
		if strings.Contains(r.Why, "not resolved again") {
			leftApart += r.Records
		}
	}
	if leftApart != 2 {
		t.Errorf("not deduplicated: %+v: want the 2 duplicates left apart named for it", rep.NotDeduplicable)
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
		if m.HTTP != nil && (m.HTTP.Bytes != 0 || m.HTTP.Requests != 0) {
			t.Errorf("%s: resolve read %d bytes in %d requests over HTTP, want none", name, m.HTTP.Bytes, m.HTTP.Requests)
		}
	}
}
