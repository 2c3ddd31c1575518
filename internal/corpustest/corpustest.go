// Package corpustest is how tests treat the shared test material beside
// the repository (../shared): the corpus of real WARC, ARC, CDX and WACZ
// files, and the MD5 and SHA-1 collision pairs. Where it is absent, a test
// that needs it skips; but where the environment sets
// WARCDEDUP_REQUIRE_CORPUS=1 (as .ci/run does), it fails instead, so that
// a run that was to read the corpus cannot pass without having read it,
// as WARCDEDUP_REQUIRE_NGINX and WARCDEDUP_REQUIRE_SLURM do for nginx and
// Slurm.
package corpustest

import (
	"fmt"
	"os"
	"testing"
)

// Required reports whether the environment requires the shared material.
func Required() bool { return os.Getenv("WARCDEDUP_REQUIRE_CORPUS") == "1" }

// Missing ends the test for want of the shared material, saying why:
// it skips, or fails when the material is required.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("the shared test material is required (WARCDEDUP_REQUIRE_CORPUS=1): %s", msg)
	}
	t.Skip(msg)
}
