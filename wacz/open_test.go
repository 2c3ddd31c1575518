package wacz

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"testing"
)

// endRecord returns the offset of the end of central directory record.
func endRecord(b []byte) int {
	return bytes.LastIndex(b, []byte{0x50, 0x4b, 0x05, 0x06})
}

// centralEntry returns the offset of the central directory entry of name.
func centralEntry(b []byte, name string) int {
	sig := []byte{0x50, 0x4b, 0x01, 0x02}
	for i := bytes.Index(b, sig); i >= 0; {
		n := int(binary.LittleEndian.Uint16(b[i+28:]))
		if string(b[i+46:i+46+n]) == name {
			return i
		}
		j := bytes.Index(b[i+4:], sig)
		if j < 0 {
			break
		}
		i += 4 + j
	}
	panic("no central entry " + name)
}

// localHeader returns the offset of the local header of name.
func localHeader(b []byte, name string) int {
	c := centralEntry(b, name)
	return int(binary.LittleEndian.Uint32(b[c+42:]))
}

// TestOpenBadInput opens packages damaged or made in each way a WACZ
// must not be, and expects the error of its kind, naming the package and
// the member where there is one.
func TestOpenBadInput(t *testing.T) {
	valid := func(t *testing.T) []testMember { return validMembers(t) }
	cases := []struct {
		name   string
		make   func(t *testing.T) []byte
		kind   error
		naming []string
	}{
		{"not a ZIP", func(t *testing.T) []byte { return bytes.Repeat([]byte("WARC/1.0\r\n"), 100) }, ErrDamaged, []string{"no end of central directory"}},
		{"empty file", func(t *testing.T) []byte { return nil }, ErrDamaged, []string{"too short"}},
		{"truncated: the end record cut", func(t *testing.T) []byte { b := packageBytes(valid(t)); return b[:len(b)-10] }, ErrDamaged, nil},
		{"truncated: half the file", func(t *testing.T) []byte { b := packageBytes(valid(t)); return b[:len(b)/2] }, ErrDamaged, nil},
		{"central directory offset wrong", func(t *testing.T) []byte {
			b := packageBytes(valid(t))
			e := endRecord(b)
			binary.LittleEndian.PutUint32(b[e+16:], binary.LittleEndian.Uint32(b[e+16:])+1)
			return b
		}, ErrDamaged, []string{"central directory"}},
		{"data before the ZIP", func(t *testing.T) []byte { return append([]byte("MZ junk "), packageBytes(valid(t))...) }, ErrDamaged, []string{"data before or after"}},
		{"local header names another file", func(t *testing.T) []byte {
			b := packageBytes(valid(t))
			h := localHeader(b, "pages/pages.jsonl")
			copy(b[h+30:], "pages/pages.jsonX")
			return b
		}, ErrDamaged, []string{"pages/pages.jsonl", "local header names it"}},
		{"local header's method differs", func(t *testing.T) []byte {
			b := packageBytes(valid(t))
			h := localHeader(b, "pages/pages.jsonl")
			binary.LittleEndian.PutUint16(b[h+8:], Deflate)
			return b
		}, ErrDamaged, []string{"pages/pages.jsonl", "method"}},
		{"no local header where the directory says", func(t *testing.T) []byte {
			b := packageBytes(valid(t))
			c := centralEntry(b, "pages/pages.jsonl")
			binary.LittleEndian.PutUint32(b[c+42:], binary.LittleEndian.Uint32(b[c+42:])+3)
			return b
		}, ErrDamaged, []string{"pages/pages.jsonl", "no local header"}},
		{"members overlap", func(t *testing.T) []byte {
			b := packageBytes(valid(t))
			// The index's sizes grow in both directories into the pages.
			c, h := centralEntry(b, "indexes/index.cdxj"), localHeader(b, "indexes/index.cdxj")
			for _, at := range []int{c + 20, c + 24, h + 18, h + 22} {
				binary.LittleEndian.PutUint32(b[at:], binary.LittleEndian.Uint32(b[at:])+40)
			}
			return b
		}, ErrDamaged, []string{"overlaps"}},
		{"WARC member deflated", func(t *testing.T) []byte {
			m := valid(t)
			m[0].method = Deflate
			return packageBytes(m)
		}, ErrCompressedWARC, []string{"archive/data.warc.gz"}},
		{"duplicate member names", func(t *testing.T) []byte {
			m := valid(t)
			return packageBytes(append(m, m[2]))
		}, ErrDuplicate, []string{"pages/pages.jsonl"}},
		{"path leaving the package: ../", func(t *testing.T) []byte {
			return packageBytes(append(valid(t), testMember{name: "../evil.txt", data: "x"}))
		}, ErrUnsafePath, []string{"../evil.txt"}},
		{"path leaving the package: inner ..", func(t *testing.T) []byte {
			return packageBytes(append(valid(t), testMember{name: "pages/../../evil.txt", data: "x"}))
		}, ErrUnsafePath, []string{"pages/../../evil.txt"}},
		{"absolute path", func(t *testing.T) []byte {
			return packageBytes(append(valid(t), testMember{name: "/etc/passwd", data: "x"}))
		}, ErrUnsafePath, []string{"/etc/passwd", "absolute"}},
		{"drive letter", func(t *testing.T) []byte {
			return packageBytes(append(valid(t), testMember{name: "C:/x.txt", data: "x"}))
		}, ErrUnsafePath, []string{"drive letter"}},
		{"empty path element", func(t *testing.T) []byte {
			return packageBytes(append(valid(t), testMember{name: "pages//x.txt", data: "x"}))
		}, ErrUnsafePath, []string{"pages//x.txt"}},
		{"dot path element", func(t *testing.T) []byte {
			return packageBytes(append(valid(t), testMember{name: "./x.txt", data: "x"}))
		}, ErrUnsafePath, []string{"./x.txt"}},
		{"encrypted member", func(t *testing.T) []byte {
			return packageBytes(append(valid(t), testMember{name: "secret.txt", data: "x", flags: flagEncrypted}))
		}, ErrUnsupported, []string{"secret.txt", "encrypted"}},
		{"bzip2 member", func(t *testing.T) []byte {
			b := packageBytes(valid(t))
			c, h := centralEntry(b, "pages/pages.jsonl"), localHeader(b, "pages/pages.jsonl")
			binary.LittleEndian.PutUint16(b[c+10:], 12)
			binary.LittleEndian.PutUint16(b[h+8:], 12)
			return b
		}, ErrUnsupported, []string{"pages/pages.jsonl", "method 12"}},
		{"several disks", func(t *testing.T) []byte {
			b := packageBytes(valid(t))
			binary.LittleEndian.PutUint16(b[endRecord(b)+4:], 1)
			return b
		}, ErrUnsupported, []string{"disks"}},
		{"no datapackage.json", func(t *testing.T) []byte { return buildZip(t, valid(t)) }, ErrDatapackage, []string{"not a WACZ"}},
		{"datapackage.json not JSON", func(t *testing.T) []byte {
			return buildZip(t, append(valid(t), testMember{name: DatapackageName, data: "{resources: []"}))
		}, ErrDatapackage, []string{DatapackageName}},
		{"datapackage.json without resources", func(t *testing.T) []byte {
			return buildZip(t, append(valid(t), testMember{name: DatapackageName, data: `{"wacz_version": "1.1.1"}`}))
		}, ErrDatapackage, []string{"no \"resources\""}},
		{"a resource without path", func(t *testing.T) []byte {
			return buildZip(t, append(valid(t), testMember{name: DatapackageName, data: `{"resources": [{"name": "x"}]}`}))
		}, ErrDatapackage, []string{"resource 1 has no \"path\""}},
		{"datapackage-digest.json not JSON", func(t *testing.T) []byte {
			m := valid(t)
			return buildZip(t, append(m, testMember{name: DatapackageName, data: datapackageFor(m)}, testMember{name: DigestName, data: "nope"}))
		}, ErrDigestFile, []string{DigestName}},
		{"datapackage-digest.json without hash", func(t *testing.T) []byte {
			m := valid(t)
			return buildZip(t, append(m, testMember{name: DatapackageName, data: datapackageFor(m)}, testMember{name: DigestName, data: `{"path": "datapackage.json"}`}))
		}, ErrDigestFile, []string{"no \"hash\""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.make(t)
			_, err := NewPackage(bytes.NewReader(b), int64(len(b)), "bad.wacz")
			wantKind(t, err, c.kind, append([]string{"bad.wacz"}, c.naming...)...)
		})
	}
}

// TestOpenValid opens a package and reads its WARC member by range.
func TestOpenValid(t *testing.T) {
	members := validMembers(t)
	p, _ := packageOf(t, members)
	if p.ZIP64 || p.Signed() {
		t.Errorf("ZIP64 %v, signed %v", p.ZIP64, p.Signed())
	}
	ws := p.WARCs()
	if len(ws) != 1 || ws[0].Name != "archive/data.warc.gz" {
		t.Fatalf("WARC members %v", ws)
	}
	sec, err := p.Section(ws[0])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(sec)
	if string(got) != members[0].data {
		t.Error("the WARC member read by range differs from what was packaged")
	}
	checkClean(t, p)
}

// TestZIP64 reads a package written with ZIP64 records (as writers do
// past 4 GiB, and some always): the package reads and checks as the
// same one without them, and archive/zip reads it too.
func TestZIP64(t *testing.T) {
	members := validMembers(t)
	plain := packageBytes(members)
	forced := forceZIP64(t, plain)
	p, err := NewPackage(bytes.NewReader(forced), int64(len(forced)), "zip64.wacz")
	if err != nil {
		t.Fatal(err)
	}
	if !p.ZIP64 {
		t.Error("ZIP64 records not seen")
	}
	checkClean(t, p)
	zr, err := zip.NewReader(bytes.NewReader(forced), int64(len(forced)))
	if err != nil {
		t.Fatalf("archive/zip cannot read the ZIP64 package: %v", err)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Errorf("archive/zip: %s: %v", f.Name, err)
		}
		rc.Close()
	}
}

// forceZIP64 rewrites a package with every ZIP64 record a writer can
// add: a ZIP64 extra field in each central entry (sizes and offset
// 0xFFFFFFFF there), and the ZIP64 end record and locator.
func forceZIP64(t *testing.T, b []byte) []byte {
	t.Helper()
	p, err := NewPackage(bytes.NewReader(b), int64(len(b)), "plain.wacz")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.Write(b[:p.centralAt])
	start := out.Len()
	for _, m := range p.Members {
		var z64 []byte
		for _, v := range []int64{m.Size, m.CompressedSize, m.HeaderOffset} {
			z64 = binary.LittleEndian.AppendUint64(z64, uint64(v))
		}
		extra := binary.LittleEndian.AppendUint16(nil, zip64ExtraID)
		extra = binary.LittleEndian.AppendUint16(extra, uint16(len(z64)))
		extra = append(extra, z64...)
		var h [centralLen]byte
		binary.LittleEndian.PutUint32(h[0:], centralSig)
		binary.LittleEndian.PutUint16(h[4:], 45)
		binary.LittleEndian.PutUint16(h[6:], 45)
		binary.LittleEndian.PutUint16(h[10:], m.Method)
		binary.LittleEndian.PutUint32(h[16:], m.CRC32)
		binary.LittleEndian.PutUint32(h[20:], uint32max)
		binary.LittleEndian.PutUint32(h[24:], uint32max)
		binary.LittleEndian.PutUint16(h[28:], uint16(len(m.Name)))
		binary.LittleEndian.PutUint16(h[30:], uint16(len(extra)))
		binary.LittleEndian.PutUint32(h[42:], uint32max)
		out.Write(h[:])
		out.WriteString(m.Name)
		out.Write(extra)
	}
	end := out.Len()
	var e64 [end64Len]byte
	binary.LittleEndian.PutUint32(e64[0:], end64Sig)
	binary.LittleEndian.PutUint64(e64[4:], end64Len-12)
	binary.LittleEndian.PutUint16(e64[12:], 45)
	binary.LittleEndian.PutUint16(e64[14:], 45)
	binary.LittleEndian.PutUint64(e64[24:], uint64(len(p.Members)))
	binary.LittleEndian.PutUint64(e64[32:], uint64(len(p.Members)))
	binary.LittleEndian.PutUint64(e64[40:], uint64(end-start))
	binary.LittleEndian.PutUint64(e64[48:], uint64(start))
	out.Write(e64[:])
	var loc [end64LocLen]byte
	binary.LittleEndian.PutUint32(loc[0:], end64LocSig)
	binary.LittleEndian.PutUint64(loc[8:], uint64(end))
	binary.LittleEndian.PutUint32(loc[16:], 1)
	out.Write(loc[:])
	var e [endLen]byte
	binary.LittleEndian.PutUint32(e[0:], endSig)
	binary.LittleEndian.PutUint16(e[8:], uint16max)
	binary.LittleEndian.PutUint16(e[10:], uint16max)
	binary.LittleEndian.PutUint32(e[12:], uint32max)
	binary.LittleEndian.PutUint32(e[16:], uint32max)
	out.Write(e[:])
	return out.Bytes()
}

// TestWriterZIP64 writes a package whose member offsets need ZIP64
// fields, without 4 GiB of data: the writer's offset starts past 4 GiB
// (as if that much came before), and the records are read back.
func TestWriterZIP64(t *testing.T) {
	f := &memFile{}
	z := newZipWriter(f, true)
	const base = 5 << 30
	z.off = base
	for _, name := range []string{"a.txt", "b.txt"} {
		m := &Member{Name: name, Method: Store}
		if err := z.writeBytes(m, []byte("content of "+name)); err != nil {
			t.Fatal(err)
		}
		if !m.ZIP64 {
			t.Errorf("%s at %d: no ZIP64", name, m.HeaderOffset)
		}
	}
	if err := z.close(nil); err != nil {
		t.Fatal(err)
	}
	// Read it back through a reader that puts the bytes at base.
	r := &offsetReader{b: f.b, base: base}
	d, err := readDir(r, base+int64(len(f.b)), "big.zip")
	if err != nil {
		t.Fatal(err)
	}
	if !d.zip64 || len(d.members) != 2 || d.members[1].HeaderOffset <= base {
		t.Fatalf("read back: zip64 %v, %d members", d.zip64, len(d.members))
	}
}

// offsetReader reads b as if it started at base (zeros before).
type offsetReader struct {
	b    []byte
	base int64
}

func (r *offsetReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for off < r.base && n < len(p) {
		p[n] = 0
		n++
		off++
	}
	k, err := (&memFile{b: r.b}).ReadAt(p[n:], off-r.base)
	return n + k, err
}
