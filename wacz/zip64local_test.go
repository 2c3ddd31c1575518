package wacz

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"testing"

	"warcdedup/internal/warctest"
)

// withLocalZIP64 writes the package b anew with a ZIP64 extra field in
// every member's local header, no data descriptors, as writers that
// always add one do (Python's zipfile with force_zip64, some Java and
// .NET writers): masked, the local header's sizes 0xFFFFFFFF and the
// field holding them (APPNOTE 4.5.3); else the sizes in both.
func withLocalZIP64(t *testing.T, b []byte, masked bool) []byte {
	t.Helper()
	r, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	var offsets []int64
	for _, f := range r.File {
		h := f.FileHeader
		h.Flags &^= flagDescriptor
		h.Extra = binary.LittleEndian.AppendUint16(nil, zip64ExtraID)
		h.Extra = binary.LittleEndian.AppendUint16(h.Extra, 16)
		h.Extra = binary.LittleEndian.AppendUint64(h.Extra, h.UncompressedSize64)
		h.Extra = binary.LittleEndian.AppendUint64(h.Extra, h.CompressedSize64)
		zw.Flush()
		offsets = append(offsets, int64(out.Len()))
		w, err := zw.CreateRaw(&h)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := f.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	z := out.Bytes()
	if masked {
		for _, off := range offsets {
			if binary.LittleEndian.Uint32(z[off:]) != localSig {
				t.Fatalf("no local header at %d", off)
			}
			binary.LittleEndian.PutUint64(z[off+18:], 1<<64-1)
		}
	}
	return z
}

// localFields is the local header of m in the package bytes b: its
// CRC-32 and size fields, and its extra fields.
func localFields(b []byte, m *Member) (crc, csize, usize uint32, extra []byte) {
	h := b[m.HeaderOffset:]
	nameLen, extraLen := int(binary.LittleEndian.Uint16(h[26:])), int(binary.LittleEndian.Uint16(h[28:]))
	return binary.LittleEndian.Uint32(h[14:]), binary.LittleEndian.Uint32(h[18:]), binary.LittleEndian.Uint32(h[22:]),
		h[localLen+nameLen : localLen+nameLen+extraLen]
}

// TestRebuildKeepsLocalZIP64Fields rebuilds packages whose members,
// without data descriptors, have a ZIP64 extra field in their local
// header although they are small, in both forms (sizes masked in the
// header, or in both): with a requires entry added (every member but
// the metadata copied), and with the WARC member replaced by one of
// another size. It proves that a member copied keeps its local header
// byte for byte, ZIP64 field included, so that every member stays where
// it was (a crawl index has records at those offsets: without it every
// member after the first moved 20 bytes earlier and the run's place
// check refused the package for good); that a member written anew keeps
// its field too, holding its new sizes (the package stays in its
// writer's form, and an undo gives back the layout it had); and that
// the packages written check clean and read in archive/zip, unzip -t
// and Python's zipfile.
func TestRebuildKeepsLocalZIP64Fields(t *testing.T) {
	smaller := warctest.Gzip(warctest.Record("warcinfo", "", "2024-01-02T03:04:05Z", "software: test\r\n", "Content-Type: application/warc-fields"))
	for _, masked := range []bool{true, false} {
		name := "sizes in both"
		if masked {
			name = "sizes masked"
		}
		for _, replace := range []bool{false, true} {
			name := name
			if replace {
				name += ", WARC member replaced"
			} else {
				name += ", requires entry added"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				was := withLocalZIP64(t, packageBytes(validMembers(t)), masked)
				old := openFile(t, writeTemp(t, dir, "old.wacz", was))
				b := &Rebuild{Source: old}
				const warc = "archive/data.warc.gz"
				if replace {
					b.Replace = map[string]Replacement{warc: {Path: writeTemp(t, dir, "data.warc.gz", smaller)}}
					b.FreshIndex = true
				} else {
					b.Require = []Requirement{{Filename: "other.wacz", Hash: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", Size: 12, CrawlID: "c0"}}
				}
				p, _ := rebuildTo(t, b, t.TempDir(), "new.wacz")
				now, err := os.ReadFile(p.Name)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range old.Members {
					nm := p.Member(m.Name)
					if nm == nil {
						t.Fatalf("%s: gone", m.Name)
					}
					_, _, _, oldExtra := localFields(was, m)
					crc, csize, usize, extra := localFields(now, nm)
					z, ok := findExtra(extra, zip64ExtraID)
					if _, had := findExtra(oldExtra, zip64ExtraID); !had {
						t.Fatalf("%s: the source has no local ZIP64 field: the test proves nothing", m.Name)
					}
					if !ok || len(z) < 16 || len(extra) != len(oldExtra) {
						t.Errorf("%s: local extra fields %x, were %x", m.Name, extra, oldExtra)
						continue
					}
					if binary.LittleEndian.Uint64(z) != uint64(nm.Size) || binary.LittleEndian.Uint64(z[8:]) != uint64(nm.CompressedSize) {
						t.Errorf("%s: local ZIP64 field says %d/%d bytes; the member has %d/%d", m.Name, binary.LittleEndian.Uint64(z), binary.LittleEndian.Uint64(z[8:]), nm.Size, nm.CompressedSize)
					}
					want := uint32(nm.CompressedSize)
					if masked {
						want = uint32max
					}
					if crc != nm.CRC32 || csize != want || usize != want && !masked || masked && usize != uint32max {
						t.Errorf("%s: local header says CRC-32 %08x, sizes %d/%d; want %08x, %d", m.Name, crc, csize, usize, nm.CRC32, want)
					}
					if m.Name == DatapackageName || m.Name == DigestName || replace && m.Name != warc && m.HeaderOffset > old.Member(warc).HeaderOffset {
						continue
					}
					if nm.HeaderOffset != m.HeaderOffset || nm.DataOffset != m.DataOffset {
						t.Errorf("%s: at %d (data %d), was at %d (%d)", m.Name, nm.HeaderOffset, nm.DataOffset, m.HeaderOffset, m.DataOffset)
					}
					if !replace && !bytes.Equal(now[nm.HeaderOffset:nm.DataOffset+nm.CompressedSize], was[m.HeaderOffset:m.DataOffset+m.CompressedSize]) {
						t.Errorf("%s: not copied byte for byte", m.Name)
					}
				}
				checkClean(t, p)
				readsElsewhere(t, p.Name)
			})
		}
	}
}
