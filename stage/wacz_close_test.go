package stage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/wacz"
)

// openFilesOf are the files this process has open whose name (as the
// kernel gives it, " (deleted)" after a name removed) starts with path.
func openFilesOf(t *testing.T, path string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, path) {
			open = append(open, target)
		}
	}
	return open
}

// TestRebuildClosesReplacedPackage: the package a rebuild replaced (its
// name gone, its last open file the rebuild's) is closed on another
// goroutine, off the chain of packages waiting for this one; it is
// closed all the same by the time Discard returns, as is a package
// whose rebuild was refused.
func TestRebuildClosesReplacedPackage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse bool
	}{
		{"put in place", false},
		{"refused", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, _, old, m, data := generatedPackage(t, dir, 3)
			old.Close()
			replacement := filepath.Join(dir, ".p.wacz#member"+stagedSuffix)
			if err := os.WriteFile(replacement, data, 0o644); err != nil {
				t.Fatal(err)
			}
			pr := &PackageRewrite{paths: map[string]string{"p.wacz": path}, TempDir: t.TempDir(), Messages: &collected{}}
			_, err := pr.rebuild("p.wacz", map[string]string{m.Name: replacement}, time.Now(), func(b *wacz.Rebuild) {
				b.NoPackageSHA256 = true
				if tc.refuse {
					b.Requires = func() ([]wacz.Requirement, error) { return nil, os.ErrPermission }
				}
			})
			if (err != nil) != tc.refuse {
				t.Fatalf("rebuild: %v, want refused %v", err, tc.refuse)
			}
			pr.Discard()
			if open := openFilesOf(t, path); len(open) > 0 {
				t.Fatalf("open after Discard: %v", open)
			}
		})
	}
}
