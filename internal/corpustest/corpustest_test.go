package corpustest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissing proves both ways a test without the material ends: skipped,
// or failed under WARCDEDUP_REQUIRE_CORPUS=1 (run in a child process, to
// see the failure without failing this test).
func TestMissing(t *testing.T) {
	if os.Getenv("CORPUSTEST_CHILD") == "1" {
		Missing(t, "no corpus at %s", "../shared/corpus")
		return
	}
	for _, tt := range []struct {
		require  string
		wantFail bool
		want     string
	}{
		{"", false, "SKIP"},
		{"1", true, "WARCDEDUP_REQUIRE_CORPUS=1"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "CORPUSTEST_CHILD=1", "WARCDEDUP_REQUIRE_CORPUS="+tt.require)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tt.wantFail || !strings.Contains(string(out), tt.want) || !strings.Contains(string(out), "no corpus at ../shared/corpus") {
			t.Errorf("WARCDEDUP_REQUIRE_CORPUS=%q: failed %v, want %v, output:\n%s", tt.require, failed, tt.wantFail, out)
		}
	}
}
