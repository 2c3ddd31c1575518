package clustere2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/internal/slurmtest"
	"warcdedup/internal/storagetest"
)

// TestClusterWACZRefused proves on a real Slurm cluster what warcdedup
// cluster does with a host holding WACZ packages, which only warcdedup
// run deduplicates: the command exits non-zero, naming the packages and
// saying to deduplicate them with warcdedup run, and no host's file
// changed, the WARC files of the other hosts included (the job stops at
// the hashes, before any rewrite). The job used to pass the packages over
// and exit 0.
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
}
