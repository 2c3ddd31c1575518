package clustere2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
	"warcdedup/internal/slurmtest"
	"warcdedup/internal/storagetest"
	"warcdedup/scripts/gen"
	"warcdedup/wacz"
)

// TestClusterWACZRefused proves on a real Slurm cluster what warcdedup
// cluster does with a host holding WACZ packages, which only warcdedup
// run deduplicates: the command exits non-zero, naming the packages and
// saying to deduplicate them with warcdedup run, and no host's file
// changed, the WARC files of the other hosts included (the job stops at
// the hashes, before any rewrite). The job used to pass the packages over
// and exit 0. Then, as the error says, the packages moved away, the same
// command resumes the job and completes it.
func TestClusterWACZRefused(t *testing.T) {
	needCluster(t)
	base := t.TempDir()
	os.Chmod(base, 0o755)
	src, _ := jobtest.GeneratedWACZ(t, true) // packages and the WARC files of one beside them
	roots := map[string]string{}
	var packages []string
	for i, h := range hostNames {
		roots[h] = filepath.Join(base, h)
		if err := os.MkdirAll(roots[h], 0o755); err != nil {
			t.Fatal(err)
		}
		// store2 holds the packages, store1 and store3 the WARC files.
		for _, rel := range files(t, src) {
			isPackage := strings.HasSuffix(rel, ".wacz")
			if isPackage != (i == 1) {
				continue
			}
			if isPackage {
				packages = append(packages, rel)
			} else if (i == 0) != (storagetest.Slice(rel, 2) == 0) {
				continue
			}
			copyFile(t, filepath.Join(src, rel), filepath.Join(roots[h], rel))
		}
	}
	if len(packages) == 0 || len(files(t, roots["store1"]))+len(files(t, roots["store3"])) == 0 {
		t.Fatalf("want packages on store2 and WARC files on the others: %v", roots)
	}
	before := map[string]string{}
	for _, h := range hostNames {
		for _, rel := range files(t, roots[h]) {
			before[h+"/"+rel] = sha(t, filepath.Join(roots[h], rel))
		}
	}
	c := slurmtest.Start(t, hostNames...)
	st := storagetest.Start(t, storageHosts(roots)...)
	hosts := hostsFile(t, base, roots, st, false)
	code, stderr := runCluster(t, c, "--work-dir", filepath.Join(base, "work"), hosts)
	t.Logf("warcdedup cluster: exit %d\n%s", code, stderr)
	if code == 0 || !strings.Contains(stderr, "holds WACZ packages") || !strings.Contains(stderr, packages[0]) ||
		!strings.Contains(stderr, "warcdedup run") {
		t.Errorf("exit %d: want non-zero, naming the packages (%s) and saying to deduplicate them with warcdedup run", code, packages[0])
	}
	for _, h := range hostNames {
		for _, rel := range files(t, roots[h]) {
			if sha(t, filepath.Join(roots[h], rel)) != before[h+"/"+rel] {
				t.Errorf("%s changed on %s", rel, h)
			}
		}
	}

	// As the error says: the packages moved away, the same command
	// resumes the job, and it completes.
	away := t.TempDir()
	for _, rel := range packages {
		if err := os.Rename(filepath.Join(roots["store2"], rel), filepath.Join(away, rel)); err != nil {
			t.Fatal(err)
		}
	}
	code, stderr = runCluster(t, c, "--work-dir", filepath.Join(base, "work"), hosts)
	t.Logf("warcdedup cluster, the packages moved away: exit %d\n%s", code, stderr)
	if code != 0 || !strings.Contains(stderr, "resuming job") || !strings.Contains(stderr, "revisits in") {
		t.Errorf("exit %d: want the job resumed and completed, its duplicates rewritten", code)
	}
}

// TestClusterIndexAfterWACZCrawl proves that a cluster job with a crawl
// index whose committed crawl is WACZ packages (committed by warcdedup
// run --index, which names each original by its package and its offset
// in it) reads those originals right: the later crawl's files, spread
// over the hosts, end byte for byte as warcdedup run --index leaves the
// same crawl on one machine against the same index, with the same
// entries in the rewrite logs, and revisits of the packages' records are
// written.
func TestClusterIndexAfterWACZCrawl(t *testing.T) {
	needCluster(t)
	base := t.TempDir()
	os.Chmod(base, 0o755)
	src := filepath.Join(base, "pristine")
	cfg := gen.Config{Files: 6, Records: 300, DupRate: 0.4, Seed: 23, MeanPayload: 6 << 10,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC11}}
	if _, err := gen.Write(src, cfg); err != nil {
		t.Fatal(err)
	}
	// jan: every other file, in one package; feb: the others, as WARC
	// files. Their payloads are shared, across files and so across crawls.
	var janWARCs, feb []string
	for i, rel := range files(t, src) {
		if i%2 == 0 {
			janWARCs = append(janWARCs, filepath.Join(src, rel))
		} else {
			feb = append(feb, rel)
		}
	}
	jan := filepath.Join(base, "jan")
	if err := os.MkdirAll(jan, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(jan, "jan.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wacz.Create(f, wacz.CreateOptions{WARCs: janWARCs, Software: "test", TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	warcdedup := func(args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "warcdedup"), append([]string{"-q", "-j", "2"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("warcdedup %v: %v\n%s", args, err, out)
		}
	}
	// jan committed once; the two indexes are copies, both naming jan
	// where it is.
	singleIndex, clusterIndex := filepath.Join(base, "single-index"), filepath.Join(base, "cluster-index")
	warcdedup("run", "--index", singleIndex, "--crawl", "jan", jan)
	if out, err := exec.Command("cp", "-a", singleIndex, clusterIndex).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}

	single := filepath.Join(base, "single", "feb")
	for _, rel := range feb {
		copyFile(t, filepath.Join(src, rel), filepath.Join(single, rel))
	}
	warcdedup("run", "--index", singleIndex, "--crawl", "feb", single)

	dir := filepath.Join(base, "cluster")
	roots := map[string]string{}
	for _, h := range hostNames {
		roots[h] = filepath.Join(dir, h)
		if err := os.MkdirAll(filepath.Join(roots[h], "feb"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	on := func(rel string) string {
		return filepath.Join(roots[hostNames[storagetest.Slice("feb/"+rel, len(hostNames))]], "feb")
	}
	for _, rel := range feb {
		copyFile(t, filepath.Join(src, rel), filepath.Join(on(rel), rel))
	}
	st := storagetest.StartSWAP(t, storageHosts(roots)...)
	c := slurmtest.Start(t, hostNames...)
	var b strings.Builder
	for _, h := range hostNames {
		fmt.Fprintf(&b, "%s %s %s/warcs/feb\n", h, filepath.Join(roots[h], "feb"), st.URL(hostNames[0]))
	}
	hosts := filepath.Join(dir, "feb.hosts")
	if err := os.WriteFile(hosts, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	code, stderr := runCluster(t, c, "--index", clusterIndex, "--work-dir", work, hosts)
	t.Logf("warcdedup cluster --index, crawl feb: exit %d\n%s", code, stderr)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	got, want := readStats(t, work), readStats(t, filepath.Join(singleIndex, "work", "feb"))
	if g, w := got.Totals, want.Totals; g.Records != w.Records || g.Duplicates != w.Duplicates || g.RevisitsWritten != w.RevisitsWritten ||
		g.BytesSaved != w.BytesSaved || g.Violations != 0 {
		t.Errorf("totals differ from warcdedup run --index's:\n got %+v\nwant %+v", g, w)
	}
	gl, wl := logEntries(t, filepath.Join(work, "rewrite.log")), logEntries(t, filepath.Join(singleIndex, "work", "feb", "rewrite.log"))
	if !slices.Equal(gl, wl) {
		t.Errorf("rewrite logs differ: %d entries, warcdedup run's %d", len(gl), len(wl))
	}
	// feb's revisits of jan's originals, as the index counts them.
	ix, err := crawlindex.Open(clusterIndex)
	if err != nil {
		t.Fatal(err)
	}
	var ofJan int64
	if k := ix.Registry.Crawl("feb"); k != nil {
		for _, n := range k.Requires {
			if n.Crawl == "jan" {
				ofJan += n.Revisits
			}
		}
	}
	t.Logf("%d revisits written, %d of them of jan's originals", got.Totals.RevisitsWritten, ofJan)
	if ofJan == 0 {
		t.Errorf("no revisit of jan's originals written")
	}
	for _, rel := range feb {
		if sha(t, filepath.Join(on(rel), rel)) != sha(t, filepath.Join(single, rel)) {
			t.Errorf("%s differs from warcdedup run's", rel)
		}
	}
	if out, err := exec.Command(filepath.Join(binDir, "warcdedup"), "index", "verify", "--index", clusterIndex).CombinedOutput(); err != nil {
		t.Errorf("warcdedup index verify: %v\n%s", err, out)
	}
}
