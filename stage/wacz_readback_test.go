package stage

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/wacz"
)

// TestRebuildRefusedWhenReadBackDiffers: a new version of a package
// whose replaced WARC member, copied in by the kernel, does not read
// back as the bytes read for its size, CRC-32 and SHA-256 (a byte of it
// changed on disk after the copy, as a replacement that changed between
// its read and its copy leaves it) fails the check of what was written:
// the rebuild is refused, saying so, the package stays byte for byte as
// it was, and no new version is left beside it. Unchanged, the same
// rebuild is put in place.
func TestRebuildRefusedWhenReadBackDiffers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage bool
	}{
		{"read back as read", false},
		{"a byte of the replaced member changed on disk", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, before, old, m, data := generatedPackage(t, dir, 3)
			old.Close()
			// The member as it is: the package rebuilt around the same
			// bytes, the member where it was.
			replacement := filepath.Join(dir, ".p.wacz#member"+stagedSuffix)
			if err := os.WriteFile(replacement, data, 0o644); err != nil {
				t.Fatal(err)
			}
			flipped := false
			pr := &PackageRewrite{paths: map[string]string{"p.wacz": path}, TempDir: t.TempDir(), Messages: &collected{}}
			_, err := pr.rebuild("p.wacz", map[string]string{m.Name: replacement}, time.Now(), func(b *wacz.Rebuild) {
				b.NoPackageSHA256 = true
				if !tc.damage {
					return
				}
				// Asked once every member but the metadata is written.
				b.Requires = func() ([]wacz.Requirement, error) {
					flipped = flipInNewVersion(t, dir, m.DataOffset+m.Size/2)
					return nil, nil
				}
			})
			after, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			left, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+"*"))
			if len(left) > 0 {
				t.Errorf("new versions left beside the package: %v", left)
			}
			if !tc.damage {
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Equal(after, before) {
					t.Error("the package was not written anew")
				}
				return
			}
			if !flipped {
				t.Fatal("no new version found to change: the test proves nothing")
			}
			if err == nil || !strings.Contains(err.Error(), "failed its check") || !strings.Contains(err.Error(), "changed after that read") {
				t.Errorf("rebuild error %v, want its check's failure saying the member changed after its read", err)
			}
			if !bytes.Equal(after, before) {
				t.Error("the package changed")
			}
		})
	}
}

// flipInNewVersion changes the byte at off of the new version of a
// package being written in dir (an atomicfile temporary file).
func flipInNewVersion(t *testing.T, dir string, off int64) bool {
	t.Helper()
	tmps, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+"*"))
	if len(tmps) != 1 {
		return false
	}
	f, err := os.OpenFile(tmps[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	return true
}

// generatedPackage writes in dir a collection of one WACZ package of
// generated records (seed: the same seed, the same package) and returns
// its path and bytes, the package open, and its first WARC member and
// that member's stored bytes.
func generatedPackage(t *testing.T, dir string, seed int64) (path string, before []byte, old *wacz.Package, m *wacz.Member, data []byte) {
	t.Helper()
	res, err := gen.Write(dir, gen.Config{Files: 2, Records: 40, DupRate: 0.4, Seed: seed, MeanPayload: 2 << 10, Formats: []gen.Format{gen.WARC10Gz}})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := waczgen.Write(dir, res, waczgen.Config{Packages: 1})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, coll.Packages[0].Name)
	if before, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if old, err = wacz.Open(path); err != nil {
		t.Fatal(err)
	}
	m = old.WARCs()[0]
	sec, err := old.Section(m)
	if err != nil {
		old.Close()
		t.Fatal(err)
	}
	if data, err = io.ReadAll(sec); err != nil {
		old.Close()
		t.Fatal(err)
	}
	return path, before, old, m, data
}
