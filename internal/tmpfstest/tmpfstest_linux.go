// Package tmpfstest gives tests a small file system of their own: a
// tmpfs, which fills up (ENOSPC) and can be made read-only, for the tests
// of full disks and read-only collections.
package tmpfstest

import (
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes ("64k") on a new directory,
// unmounted when the test ends; the test is skipped where mounting is not
// allowed (not root).
func Mount(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs (not root?): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// RemountReadOnly makes the tmpfs mounted on dir read-only.
func RemountReadOnly(t testing.TB, dir string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}
