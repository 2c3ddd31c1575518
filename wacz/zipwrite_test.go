package wacz

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/internal/ziptest"
)

// streamed writes the package b anew as a streaming ZIP writer does
// (Browsertrix, ArchiveWeb.page: zero CRC-32 and sizes in each local
// header, a data descriptor after every member), its members' contents
// and order as they were.
func streamed(t *testing.T, b []byte) []byte {
	t.Helper()
	return ziptest.Rewrite{}.Bytes(t, b)
}

// TestRebuildKeepsDataDescriptors writes anew, with a requires entry
// added (what an update of a requirer's entries does: every member but
// the metadata copied), packages whose members have data descriptors:
// one a streaming writer made of a generated package, and the corpus's
// ArchiveWeb.page packages (descriptors with their signature, its
// signature removed). It proves that every member before the metadata
// is copied byte for byte, its local header and descriptor included,
// at the same offset (a crawl index has records at those offsets), and
// that the package written opens in this package's reader, checks
// clean, and reads in archive/zip, unzip -t and Python's zipfile.
// Without the descriptors kept, every member after the first moves by
// their length, and such a package could only be refused.
func TestRebuildKeepsDataDescriptors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name   string
		path   string
		signed bool
	}{{"generated, streamed", writeTemp(t, dir, "streamed.wacz", streamed(t, packageBytes(validMembers(t)))), false}}
	if _, err := os.Stat(corpusDir); err == nil {
		for _, c := range corpusPackages {
			if c.kind == PlainIndex {
				cases = append(cases, struct {
					name   string
					path   string
					signed bool
				}{c.path, corpusDir + "/" + c.path, c.signed})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := openFile(t, c.path)
			keep := int64(-1) // where the metadata begins: what comes before is copied
			descriptors := 0
			for _, m := range old.Members {
				if m.Name == DatapackageName || m.Name == DigestName {
					if keep < 0 {
						keep = m.HeaderOffset
					}
					continue
				}
				if keep >= 0 {
					t.Fatalf("%s comes after the metadata: the test proves nothing", m.Name)
				}
				if m.Flags&flagDescriptor != 0 {
					descriptors++
				}
			}
			if descriptors < 2 {
				t.Fatalf("%d members before the metadata have data descriptors: the test proves nothing", descriptors)
			}
			b := &Rebuild{Source: old, Require: []Requirement{{Filename: "other.wacz", Hash: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", Size: 12, CrawlID: "c0"}}}
			if c.signed {
				b.DropSignature = &SignatureRemoval{Reason: "requires entries brought up to date", Software: "warcdedup test", When: rebuildTime}
			}
			p, _ := rebuildTo(t, b, t.TempDir(), "new.wacz")
			was, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			now, err := os.ReadFile(p.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(now) < int(keep) || !bytes.Equal(now[:keep], was[:keep]) {
				i := 0
				for i < int(keep) && i < len(now) && now[i] == was[i] {
					i++
				}
				t.Errorf("the members before the metadata were not copied byte for byte at their places: first difference at offset %d of %d", i, keep)
			}
			for _, m := range old.Members {
				if nm := p.Member(m.Name); m.HeaderOffset < keep && (nm == nil || nm.HeaderOffset != m.HeaderOffset || nm.DataOffset != m.DataOffset || nm.Flags != m.Flags) {
					t.Errorf("%s: at %+v, was at %+v", m.Name, nm, m)
				}
			}
			checkClean(t, p)
			readsElsewhere(t, p.Name)
		})
	}
}

// readsElsewhere reads every member of the ZIP file at path, checking
// its CRC-32, with archive/zip, and with unzip -t and Python's zipfile
// where they are installed.
func readsElsewhere(t *testing.T, path string) {
	t.Helper()
	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatalf("archive/zip: %v", err)
	}
	defer r.Close()
	for _, f := range r.File {
		rc, err := f.Open()
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if err != nil {
			t.Errorf("archive/zip: %s: %v", f.Name, err)
		}
	}
	if _, err := exec.LookPath("unzip"); err == nil {
		if out, err := exec.Command("unzip", "-t", path).CombinedOutput(); err != nil {
			t.Errorf("unzip -t %s: %v\n%s", filepath.Base(path), err, out)
		}
	}
	if _, err := exec.LookPath("python3"); err == nil {
		script := "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nbad = z.testzip()\nif bad: sys.exit('bad member: ' + bad)\n"
		if out, err := exec.Command("python3", "-c", script, path).CombinedOutput(); err != nil {
			t.Errorf("python3 zipfile %s: %v\n%s", filepath.Base(path), err, out)
		}
	}
}

// TestMatchDescriptor proves that a data descriptor is taken, as it is,
// in each of its forms (signature or not, 4- or 8-byte sizes), only
// when it says the member's CRC-32 and sizes, and never shorter than it
// is: a descriptor copied shorter or longer would move every member
// after it.
func TestMatchDescriptor(t *testing.T) {
	m := &Member{CRC32: 0x11223344, CompressedSize: 7, Size: 7}
	le32 := func(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
	le64 := func(v uint64) []byte { return append(le32(uint32(v)), le32(uint32(v>>32))...) }
	sig := le32(descriptorSig)
	crc := le32(m.CRC32)
	next := le32(localSig) // what follows: the next member's local header
	for _, c := range []struct {
		name string
		d    []byte
		ok   bool
	}{
		{"signature, 4-byte sizes", slices.Concat(sig, crc, le32(7), le32(7)), true},
		{"no signature, 4-byte sizes", slices.Concat(crc, le32(7), le32(7)), true},
		{"signature, 8-byte sizes", slices.Concat(sig, crc, le64(7), le64(7)), true},
		{"no signature, 8-byte sizes", slices.Concat(crc, le64(7), le64(7)), true},
		{"another CRC-32", slices.Concat(sig, le32(1), le32(7), le32(7)), false},
		{"other sizes", slices.Concat(sig, crc, le32(8), le32(7)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := matchDescriptor(append(slices.Clone(c.d), next...)[:min(24, len(c.d)+4)], m)
			if c.ok && !bytes.Equal(got, c.d) || !c.ok && got != nil {
				t.Errorf("matchDescriptor = %x, want %x (ok %v)", got, c.d, c.ok)
			}
		})
	}
}
