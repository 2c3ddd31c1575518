package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTestSetup proves that make test sets up what its tests need before
// running them, and requires it (no test skips), that the setup names what
// is missing and how to opt out, and that make test-quick is that opt-out.
func TestTestSetup(t *testing.T) {
	// What is missing is named, with the way out.
	cmd := exec.Command("../scripts/test-setup.sh", "--check")
	cmd.Env = append(os.Environ(), "WARCDEDUP_NODE_DIR="+t.TempDir(), "WARCDEDUP_REPLAY_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "warcio.js 2.4.11 in ") || !strings.Contains(string(out), "the ReplayWeb.page harness") ||
		!strings.Contains(string(out), "make test-quick") {
		t.Errorf("test-setup --check with nothing in the caches: %v\n%s", err, out)
	}
	// Under make test, everything is there once the setup ran.
	if os.Getenv("WARCDEDUP_REQUIRE_WARCIO") == "1" {
		if out, err := exec.Command("../scripts/test-setup.sh", "--check").CombinedOutput(); err != nil {
			t.Errorf("test-setup --check after make test's setup: %v\n%s", err, out)
		}
	}
	// make test: the setup first, then tests that require every part.
	plan, err := exec.Command("make", "--no-print-directory", "-C", "..", "-n", "test", "INFLATE=go").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(plan)), "\n")
	if lines[0] != "scripts/test-setup.sh" {
		t.Errorf("make test starts with %q, not the setup", lines[0])
	}
	tests := 0
	for _, l := range lines {
		if !strings.Contains(l, " test ") || strings.Contains(l, "-race") {
			continue
		}
		tests++
		for _, want := range []string{"WARCDEDUP_REQUIRE_NGINX=1", "WARCDEDUP_REQUIRE_SLURM=1", "WARCDEDUP_REQUIRE_BROWSER=1", "WARCDEDUP_REQUIRE_WARCIO=1", "WARCDEDUP_REQUIRE_GROFF=1", "WARCDEDUP_REQUIRE_REDIS=1"} {
			if !strings.Contains(l, want) {
				t.Errorf("make test runs %q without %s", l, want)
			}
		}
	}
	if tests < 4 {
		t.Errorf("make test runs %d go test commands:\n%s", tests, plan)
	}
	quick, err := exec.Command("make", "--no-print-directory", "-C", "..", "-n", "test-quick", "INFLATE=go").Output()
	if err != nil || strings.Contains(string(quick), "test-setup") || strings.Contains(string(quick), "_NGINX=1") || !strings.Contains(string(quick), "go test") {
		t.Errorf("make test-quick: %v\n%s", err, quick)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil || !strings.Contains(string(ci), "make test INFLATE=isal\n") || !strings.Contains(string(ci), "make test-go INFLATE=go\n") || strings.Contains(string(ci), "apt-get") {
		t.Errorf(".ci/run does not just call make test: %v", err)
	}
}
