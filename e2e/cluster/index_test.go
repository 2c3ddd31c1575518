package clustere2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/slurmtest"
	"warcdedup/internal/storagetest"
	"warcdedup/scripts/gen"
)

// TestClusterIndex runs two crawls, one after the other, through
// warcdedup cluster with a crawl index, and the same crawls through
// warcdedup run --index: the second crawl's duplicates of the first's
// committed originals become the same revisits, with the same bytes saved,
// every file ends byte for byte the same, both indexes hold the same
// crawls with the same figures, and a rerun of a committed crawl does
// nothing.
func TestClusterIndex(t *testing.T) {
	needCluster(t)
	base := t.TempDir()
	os.Chmod(base, 0o755)
	src := filepath.Join(base, "pristine")
	cfg := gen.Config{Files: 8, Records: 600, DupRate: 0.4, Seed: 21, MeanPayload: 6 << 10,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC11}}
	if _, err := gen.Write(src, cfg); err != nil {
		t.Fatal(err)
	}
	// The crawls: every other file. Their payloads are shared, across
	// files and so across crawls.
	crawls := []string{"jan", "feb"}
	of := map[string][]string{}
	for i, rel := range files(t, src) {
		of[crawls[i%2]] = append(of[crawls[i%2]], rel)
	}

	// One machine: warcdedup run --index, crawl after crawl.
	single := filepath.Join(base, "single")
	singleIndex := filepath.Join(single, "index")
	for _, crawl := range crawls {
		for _, rel := range of[crawl] {
			copyFile(t, filepath.Join(src, rel), filepath.Join(single, crawl, rel))
		}
		cmd := exec.Command(filepath.Join(binDir, "warcdedup"), "run", "-q", "-j", "2", "--index", singleIndex, "--crawl", crawl, filepath.Join(single, crawl))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("warcdedup run --index, crawl %s: %v\n%s", crawl, err, stderr.String())
		}
	}

	// The cluster: each crawl spread over the hosts as SWAP places it,
	// one URL for all (which the index records for the later crawl).
	dir := filepath.Join(base, "cluster")
	roots := map[string]string{}
	for _, h := range hostNames {
		roots[h] = filepath.Join(dir, h)
	}
	for _, crawl := range crawls {
		for _, rel := range of[crawl] {
			name := crawl + "/" + rel
			copyFile(t, filepath.Join(src, rel), filepath.Join(roots[hostNames[storagetest.Slice(name, len(hostNames))]], name))
		}
	}
	st := storagetest.StartSWAP(t, storageHosts(roots)...)
	c := slurmtest.Start(t, hostNames...)
	index := filepath.Join(dir, "index")
	for _, crawl := range crawls {
		var b strings.Builder
		for _, h := range hostNames {
			root := filepath.Join(roots[h], crawl)
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %s %s/warcs/%s\n", h, root, st.URL(hostNames[0]), crawl)
		}
		hosts := filepath.Join(dir, crawl+".hosts")
		if err := os.WriteFile(hosts, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(dir, "work-"+crawl)
		code, stderr := runCluster(t, c, "--index", index, "--work-dir", work, hosts)
		t.Logf("warcdedup cluster --index, crawl %s: exit %d\n%s", crawl, code, stderr)
		if code != 0 {
			t.Fatalf("crawl %s: exit %d", crawl, code)
		}
		got, want := readStats(t, work), readStats(t, filepath.Join(singleIndex, "work", crawl))
		if g, w := got.Totals, want.Totals; g.Records != w.Records || g.Duplicates != w.Duplicates || g.RevisitsWritten != w.RevisitsWritten ||
			g.BytesSaved != w.BytesSaved || g.Violations != 0 {
			t.Errorf("crawl %s: totals differ from warcdedup run --index's:\n got %+v\nwant %+v", crawl, g, w)
		}
		if crawl == "feb" && got.Totals.RevisitsWritten == 0 {
			t.Errorf("crawl feb: no revisit written")
		}
		// The listing after, carried over from the one before where a file
		// was rewritten, under the crawl's names (CRAWL/REL).
		crawlRoots := map[string]string{}
		for _, h := range hostNames {
			crawlRoots[h] = filepath.Join(roots[h], crawl)
		}
		listedAgain(t, work, crawlRoots, crawl+"/", false)
		// The same revisits: the same entries in the rewrite logs.
		if g, w := logEntries(t, filepath.Join(work, "rewrite.log")), logEntries(t, filepath.Join(singleIndex, "work", crawl, "rewrite.log")); !slices.Equal(g, w) {
			t.Errorf("crawl %s: rewrite logs differ: %d entries, warcdedup run's %d", crawl, len(g), len(w))
		}
		for _, rel := range of[crawl] {
			name := crawl + "/" + rel
			on := roots[hostNames[storagetest.Slice(name, len(hostNames))]]
			if sha(t, filepath.Join(on, name)) != sha(t, filepath.Join(single, name)) {
				t.Errorf("%s differs from warcdedup run's", name)
			}
		}
	}
	// jan's files: committed crawls are never rewritten (feb's revisits
	// refer to them; run's jan is the same, checked above).
	for _, rel := range of["jan"] {
		name := "jan/" + rel
		on := roots[hostNames[storagetest.Slice(name, len(hostNames))]]
		if sha(t, filepath.Join(on, name)) != sha(t, filepath.Join(single, name)) {
			t.Errorf("%s changed after its commit", name)
		}
	}

	// Both indexes hold the same crawls with the same figures.
	ci, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	si, err := crawlindex.Open(singleIndex)
	if err != nil {
		t.Fatal(err)
	}
	for _, crawl := range crawls {
		g, w := ci.Registry.Crawl(crawl), si.Registry.Crawl(crawl)
		if g == nil || w == nil {
			t.Fatalf("crawl %s: committed to the cluster's index %v, to run's %v", crawl, g != nil, w != nil)
		}
		figures := func(k *crawlindex.Crawl) string {
			var needs []string
			for _, n := range k.Requires {
				needs = append(needs, fmt.Sprintf("%s:%d:%d files", n.Crawl, n.Revisits, len(n.Files)))
			}
			return fmt.Sprintf("files %d size %d records %d revisits %d written %d conserved %d originals %d requires %v",
				k.Files, k.Size, k.Records, k.Revisits, k.RevisitsWritten, k.BytesConserved, k.Originals, needs)
		}
		if figures(g) != figures(w) {
			t.Errorf("crawl %s in the indexes:\ncluster %s\n    run %s", crawl, figures(g), figures(w))
		}
	}
	if ci.Registry.Crawl("feb").RevisitsWritten == 0 || len(ci.Registry.Crawl("feb").Requires) != 1 {
		t.Errorf("feb: %+v: want revisits of jan's originals", ci.Registry.Crawl("feb"))
	}
	cmd := exec.Command(filepath.Join(binDir, "warcdedup"), "index", "verify", "--index", index)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("warcdedup index verify: %v\n%s", err, out)
	}

	// A rerun of the committed crawl, in a new work directory: nothing to
	// do, nothing submitted.
	code, stderr := runCluster(t, c, "--index", index, "--work-dir", filepath.Join(dir, "work-feb-again"), filepath.Join(dir, "feb.hosts"))
	if code != 0 || !strings.Contains(stderr, "nothing to do") {
		t.Errorf("rerun of feb: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "work-feb-again", "cluster.json")); err == nil {
		t.Errorf("rerun of feb: a job was made")
	}
}
