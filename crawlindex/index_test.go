package crawlindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/manifest"
)

// digestOf is a sha1 digest (32 base32 digits) starting with c.
func digestOf(c byte, i int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	v := []byte{c}
	for range 31 {
		v = append(v, alphabet[i%32])
		i /= 32
	}
	return "sha1:" + string(v)
}

// originals writes a crawl's originals manifest, sorted on digest.
func originals(t testing.TB, dir, crawl string, digests ...string) string {
	t.Helper()
	var lines []manifest.Line
	for i, d := range digests {
		lines = append(lines, manifest.Line{File: crawl + "/f.warc.gz", Offset: int64(i * 100), Length: 100,
			URI: fmt.Sprintf("http://example.com/%s/%d", crawl, i), Date: "2024-01-01T00:00:00Z", Digest: d, Fields: 6})
	}
	slices.SortFunc(lines, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) })
	var b bytes.Buffer
	for i := range lines {
		b.Write(lines[i].Append(nil))
	}
	name := filepath.Join(dir, crawl+".originals")
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// indexLines reads the index's originals, in order.
func indexLines(t *testing.T, ix *Index) []string {
	t.Helper()
	r, err := ix.Originals()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for {
		l, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l.String())
	}
}

// TestCommitJoinRemove commits two crawls, joins a third against them,
// and removes the first: the partitions hold each crawl's originals in
// digest order, split by the digest's first character; a crawl is
// committed once; the join gives exactly the originals of the digests the
// new crawl has; removal takes a crawl's lines out and keeps its figures
// among the removed.
func TestCommitJoinRemove(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	jan := originals(t, work, "jan", digestOf('A', 1), digestOf('B', 2), digestOf('A', 3))
	ix, err := Commit(dir, Change{Add: &Crawl{Name: "jan", Location: "/data/jan"}, Files: []FileInfo{{Name: "f.warc.gz", Size: 300}}, Originals: jan})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan"}, Originals: jan}); err == nil || !strings.Contains(err.Error(), "already committed") {
		t.Errorf("committing jan twice: %v", err)
	}
	feb := originals(t, work, "feb", digestOf('B', 2), digestOf('C', 4))
	ix, err = Commit(dir, Change{Add: &Crawl{Name: "feb", Location: "/data/feb"}, Files: []FileInfo{{Name: "f.warc.gz", Size: 200}}, Originals: feb})
	if err != nil {
		t.Fatal(err)
	}
	if g := ix.Registry.Generation; g != 2 || ix.Registry.Algorithm != "sha1" {
		t.Errorf("generation %d, algorithm %q", g, ix.Registry.Algorithm)
	}
	runs, _ := ix.Runs()
	var names []string
	for _, p := range runs {
		var part []string
		for _, r := range p {
			part = append(part, filepath.Base(r))
		}
		names = append(names, strings.Join(part, ","))
	}
	// jan's runs (generation 1) and feb's (2), by partition.
	if strings.Join(names, " ") != "sha1-A.000001.manifest sha1-B.000001.manifest,sha1-B.000002.manifest sha1-C.000002.manifest" {
		t.Errorf("runs %v", names)
	}
	lines := indexLines(t, ix)
	if len(lines) != 5 || ix.Registry.Totals().Originals != 5 {
		t.Fatalf("%d lines, %d originals counted:\n%s", len(lines), ix.Registry.Totals().Originals, strings.Join(lines, "\n"))
	}
	if !slices.IsSortedFunc(lines, func(a, b string) int {
		la, _ := manifest.Parse([]byte(a))
		lb, _ := manifest.Parse([]byte(b))
		return manifest.ByDigest.Compare(&la, &lb)
	}) {
		t.Errorf("the partitions are not in digest order:\n%s", strings.Join(lines, "\n"))
	}
	if p := ix.Prefixes(); p["jan"] != "/data/jan" || p["feb"] != "/data/feb" {
		t.Errorf("prefixes %v", p)
	}

	// A new crawl with digests B2 (both jan and feb have it) and D5 (none).
	mar := originals(t, work, "mar", digestOf('D', 5), digestOf('B', 2))
	f, _ := os.Open(mar)
	defer f.Close()
	var joined bytes.Buffer
	st, err := ix.Join(context.Background(), f, mar, &joined)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(joined.String()), "\n")
	// The partition of A comes before the crawl's first digest: not read.
	if st.Matched != 2 || st.IndexLines != 3 || len(got) != 2 || !strings.HasPrefix(got[0], "jan/") && !strings.HasPrefix(got[0], "feb/") {
		t.Errorf("join: %+v\n%s", st, joined.String())
	}
	for _, l := range got {
		if !strings.Contains(l, digestOf('B', 2)) {
			t.Errorf("join gave %s", l)
		}
	}

	ix, err = Commit(dir, Change{Remove: "jan"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range indexLines(t, ix) {
		if strings.HasPrefix(l, "jan/") {
			t.Errorf("jan's line left after its removal: %s", l)
		}
	}
	if ix.Registry.Crawl("jan") != nil || len(ix.Registry.Removed) != 1 || ix.Registry.Removed[0].Size != 300 {
		t.Errorf("registry after removal: %+v removed %+v", ix.Registry.Crawls, ix.Registry.Removed)
	}
	if _, err := ix.Files("feb"); err != nil {
		t.Errorf("feb's files after jan's removal: %v", err)
	}
}

// TestCommitFailureKeepsIndex proves that a commit that fails before its
// generation is complete leaves the index as it was: the same generation,
// the same lines, no temporary directory left.
func TestCommitFailureKeepsIndex(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	jan := originals(t, work, "jan", digestOf('A', 1))
	ix, err := Commit(dir, Change{Add: &Crawl{Name: "jan"}, Originals: jan})
	if err != nil {
		t.Fatal(err)
	}
	before := indexLines(t, ix)
	feb := originals(t, work, "feb", digestOf('A', 2))
	fail := errors.New("disk full")
	_, err = Commit(dir, Change{Add: &Crawl{Name: "feb"}, Originals: feb, Update: func(*Registry) error { return fail }})
	if !errors.Is(err, fail) {
		t.Fatalf("commit: %v", err)
	}
	after, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if after.Registry.Generation != 1 || after.Registry.Crawl("feb") != nil || !slices.Equal(indexLines(t, after), before) {
		t.Errorf("a failed commit changed the index: generation %d, lines %v", after.Registry.Generation, indexLines(t, after))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestCommitRefusesForeignLines proves that a crawl's originals must be
// its own responses, sorted on digest.
func TestCommitRefusesForeignLines(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	jan := originals(t, work, "jan", digestOf('A', 1))
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "feb"}, Originals: jan}); err == nil || !strings.Contains(err.Error(), "no response of a crawl this commit adds") {
		t.Errorf("another crawl's lines: %v", err)
	}
	unsorted := filepath.Join(work, "unsorted")
	a := manifest.Line{File: "jan/f", Offset: 0, Length: 1, URI: "u", Date: "d", Digest: digestOf('B', 1), Fields: 6}
	b := a
	b.Digest = digestOf('A', 1)
	os.WriteFile(unsorted, append(a.Append(nil), b.Append(nil)...), 0o644)
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan"}, Originals: unsorted}); !errors.Is(err, manifest.ErrOrder) {
		t.Errorf("unsorted originals: %v", err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrNoIndex) {
		t.Errorf("after refused commits: %v, want no index", err)
	}
}

// TestCommitAfterKilledRename proves that a commit killed after renaming
// its generation into place, before CURRENT named it, does not stop the
// next commit, which takes the next number free, and that a CURRENT
// naming another generation than its registry says (damage) is refused,
// no generation removed.
func TestCommitAfterKilledRename(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	jan := originals(t, work, "jan", digestOf('A', 1))
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan"}, Originals: jan}); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, "gen-000002")
	if err := os.MkdirAll(filepath.Join(left, "crawls"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "registry.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	feb := originals(t, work, "feb", digestOf('A', 2))
	ix, err := Commit(dir, Change{Add: &Crawl{Name: "feb"}, Originals: feb})
	if err != nil {
		t.Fatalf("commit after the killed one: %v", err)
	}
	if ix.Registry.Generation != 3 || ix.Registry.Crawl("feb") == nil || ix.Registry.Crawl("jan") == nil {
		t.Errorf("generation %d, crawls %+v", ix.Registry.Generation, ix.Registry.Crawls)
	}

	// CURRENT names gen-000003, whose registry says 1: the next commit
	// is refused, and takes (or removes) no generation.
	reg := filepath.Join(dir, "gen-000003", "registry.json")
	data, err := os.ReadFile(reg)
	if err != nil {
		t.Fatal(err)
	}
	lying := bytes.Replace(data, []byte(`"generation": 3`), []byte(`"generation": 1`), 1)
	if bytes.Equal(lying, data) {
		t.Fatalf("no generation field in %s", data)
	}
	if err := os.WriteFile(reg, lying, 0o644); err != nil {
		t.Fatal(err)
	}
	mar := originals(t, work, "mar", digestOf('A', 3))
	var damage *DamageError
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "mar"}, Originals: mar}); !errors.As(err, &damage) {
		t.Errorf("commit on a registry that says another generation: %v", err)
	}
	for _, g := range []string{"gen-000002", "gen-000003"} {
		if _, err := os.Stat(filepath.Join(dir, g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "gen-000004")); err == nil {
		t.Errorf("a refused commit made gen-000004")
	}
}
