package wacz

import (
	"archive/zip"
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sparseFile writes to a file, leaving a hole where it is given zeros:
// a package of more than 4 GiB takes no disk.
type sparseFile struct {
	*os.File
	off int64
}

func (s *sparseFile) Write(p []byte) (int, error) {
	if len(p) >= 4096 && allZero(p) {
		if _, err := s.Seek(int64(len(p)), io.SeekCurrent); err != nil {
			return 0, err
		}
		s.off += int64(len(p))
		return len(p), nil
	}
	n, err := s.File.Write(p)
	s.off += int64(n)
	return n, err
}

// close gives the file its size (a hole at its end is none) and closes.
func (s *sparseFile) close() error {
	if err := s.Truncate(s.off); err != nil {
		return err
	}
	return s.File.Close()
}

var zeros = make([]byte, 1<<16)

func allZero(p []byte) bool {
	for len(p) > 0 {
		n := min(len(p), len(zeros))
		if !bytes.Equal(p[:n], zeros[:n]) {
			return false
		}
		p = p[n:]
	}
	return true
}

// TestRebuildKeepsLargeStreamedMember rebuilds, with a requires entry
// added, a package that Go's archive/zip streamed (a data descriptor
// after every member) with a WARC member of more than 4 GiB: its local
// header has no ZIP64 field, its descriptor 8-byte sizes (APPNOTE
// 4.3.9.2). It proves that the member is copied with its descriptor as
// it was, and the members after it stay where they were (without it
// the descriptor was dropped and a ZIP64 field added, moving every
// member after it), and that the package written checks in this
// package's reader, archive/zip, unzip -t and Python's zipfile. The
// files are sparse; the readers read 4 GiB each: skipped with -short.
func TestRebuildKeepsLargeStreamedMember(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a member of more than 4 GiB several times")
	}
	dir := t.TempDir()
	start := time.Now()
	f, err := os.Create(filepath.Join(dir, "big.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	sf := &sparseFile{File: f}
	bw := bufio.NewWriterSize(sf, 1<<20)
	zw := zip.NewWriter(bw)
	small := validMembers(t)
	const bigSize = 1<<32 + 1<<20
	all := append([]testMember{{name: "archive/big.warc"}}, small...)
	dp := datapackageFor(small)
	all = append(all, testMember{name: DatapackageName, data: dp}, testMember{name: DigestName, data: digestFor(dp)})
	for _, m := range all {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if m.name == "archive/big.warc" {
			for n := int64(0); n < bigSize; n += int64(len(zeros)) {
				w.Write(zeros)
			}
		} else {
			io.WriteString(w, m.data)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := sf.close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("written in %v", time.Since(start))
	start = time.Now()
	old := openFile(t, f.Name())
	big := old.Member("archive/big.warc")
	if big.Size != bigSize || big.Flags&flagDescriptor == 0 {
		t.Fatalf("the big member has %d bytes, flags %x: the test proves nothing", big.Size, big.Flags)
	}
	if _, ok := findExtra(big.LocalExtra, zip64ExtraID); ok {
		t.Fatal("its local header has a ZIP64 field: the test proves nothing")
	}
	out, err := os.Create(filepath.Join(dir, "new.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	sout := &sparseFile{File: out}
	b := &Rebuild{Source: old, Now: rebuildTime, TempDir: dir, NoPackageSHA256: true,
		Require: []Requirement{{Filename: "other.wacz", Hash: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", Size: 12, CrawlID: "c0"}}}
	if _, err := b.Write(sout); err != nil {
		t.Fatal(err)
	}
	if err := sout.close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuilt in %v", time.Since(start))
	p := openFile(t, out.Name())
	keep := old.Member(DatapackageName).HeaderOffset
	for _, m := range old.Members {
		nm := p.Member(m.Name)
		if m.HeaderOffset < keep && (nm == nil || nm.HeaderOffset != m.HeaderOffset || nm.DataOffset != m.DataOffset || nm.Flags != m.Flags) {
			t.Errorf("%s: at %+v, was at %+v", m.Name, nm, m)
		}
	}
	// The big member's local header, and what follows its data (its
	// descriptor, the next members), are as they were.
	end := big.DataOffset + big.CompressedSize
	for _, at := range []struct {
		what     string
		off, len int64
	}{{"the big member's local header", 0, big.DataOffset}, {"after the big member's data", end, keep - end}} {
		was, now := make([]byte, at.len), make([]byte, at.len)
		if _, err := io.ReadFull(io.NewSectionReader(old.r, at.off, at.len), was); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(io.NewSectionReader(p.r, at.off, at.len), now); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(was, now) {
			t.Errorf("%s: %x, was %x", at.what, now, was)
		}
	}
	start = time.Now()
	readsElsewhere(t, out.Name())
	t.Logf("read elsewhere in %v", time.Since(start))
}
