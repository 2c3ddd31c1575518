package dedup

import (
	"os"
	"syscall"
	"testing"

	"warcdedup/internal/jobtest"
)

// The attack tests (leftover_test.go, run_attack_test.go,
// crawl_attack_test.go; undo's in package undo, undo_attack_test.go)
// reproduce what a second hostile campaign on warcdedup run and undo
// (after issue 20's fixes) found still wrong; each failed on the code
// before its fix.

// attackCfg is a small generated collection: a few files, each rewritten.
var attackCfg = jobtest.AttackCfg

// mountSmallTmpfs mounts a tmpfs of size at dir, unmounted when the test
// ends; the test is skipped where mounting is not allowed.
func mountSmallTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs (not root?): %v", err)
	}
	t.Cleanup(func() {
		syscall.Unmount(dir, syscall.MNT_DETACH) // or the test did
	})
}
