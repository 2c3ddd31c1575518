package dedup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWACZHardLinkedPackage gives a run a package with a second name
// (a hard link, as a snapshot made with cp -l or rsync --link-dest
// leaves): like a WARC file with one, it is refused and left as it was
// unless --hard-links allows it, by the run, which reads its members
// where they lie, and by the dry run, which copies them out first (both
// rewrote it before, the dry run counting savings the other name keeps).
func TestRunWACZHardLinkedPackage(t *testing.T) {
	tests := []struct {
		name        string
		opt         Options
		wantRefused bool
	}{
		{"run", Options{}, true},
		{"dry run", Options{DryRun: true}, true},
		{"run with --hard-links", Options{HardLinks: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := generatedWACZ(t, false)
			linked := filepath.Join(dir, "crawl-0-0.wacz")
			other := filepath.Join(t.TempDir(), "snapshot.wacz")
			if err := os.Link(linked, other); err != nil {
				t.Fatal(err)
			}
			before := waczMemberSums(t, dir)
			opt := tc.opt
			opt.Collections, opt.WorkDir, opt.Jobs = []string{dir}, filepath.Join(t.TempDir(), "work"), 2
			r, err := Run(context.Background(), opt)
			if err != nil {
				t.Fatal(err)
			}
			reasons := strings.Join(r.Report.ExitReason, "\n")
			refused := strings.Contains(reasons, "crawl-0-0.wacz has 2 hard links")
			if refused != tc.wantRefused || (refused && r.Report.Exit != 1) {
				t.Fatalf("exit %d, refused for its hard links %v, want %v; reasons:\n%s", r.Report.Exit, refused, tc.wantRefused, reasons)
			}
			after := waczMemberSums(t, dir)
			changed := 0
			for k, sum := range before {
				if after[k] != sum && strings.HasPrefix(k, "crawl-0-0.wacz#") {
					changed++
				}
			}
			fi, err := os.Stat(linked)
			if err != nil {
				t.Fatal(err)
			}
			stillLinked := os.SameFile(fi, mustStat(t, other))
			switch {
			case tc.wantRefused && (changed > 0 || !stillLinked):
				t.Errorf("the package was written anew (%d members changed, still linked %v)", changed, stillLinked)
			case !tc.wantRefused && (changed == 0 || stillLinked):
				t.Errorf("--hard-links: the package was not written anew (%d members changed, still linked %v)", changed, stillLinked)
			}
		})
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
