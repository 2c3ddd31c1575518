package refs

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/record"
)

// countingReaderAt records the size of each read.
type countingReaderAt struct {
	b     []byte
	reads []int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads = append(c.reads, len(p))
	return bytes.NewReader(c.b).ReadAt(p, off)
}

// TestRecordSection proves that the duplicate's reader gives the bytes an
// io.SectionReader gives, the record's in one read and the look-ahead in
// reads of at most aheadRead bytes (not 64 kB copied for every duplicate),
// also after a seek back into the record.
func TestRecordSection(t *testing.T) {
	file := make([]byte, 300<<10)
	for i := range file {
		file[i] = byte(i * 7)
	}
	tests := []struct {
		name              string
		off, n, record    int64
		wantFirst         int // size of the first read
		seekBackTo        int64
		wantAfterSeekBack int // size of the first read after seeking back
	}{
		{"record then look-ahead", 1000, 30000 + lookAhead, 30000, 30000, 100, 29900},
		{"record at the end of the file", 0, 5000, 5000, 5000, 0, 5000},
		{"look-ahead cut by the file", 250 << 10, 50 << 10, 40 << 10, 40 << 10, 10, 40<<10 - 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &countingReaderAt{b: file}
			r := newRecordSection(src, tt.off, tt.n, tt.record)
			got, err := readIn(r, 256<<10)
			if err != nil {
				t.Fatal(err)
			}
			if want := file[tt.off : tt.off+tt.n]; !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, not the section's %d", len(got), len(want))
			}
			if src.reads[0] != tt.wantFirst {
				t.Errorf("first read of %d bytes, want the record's %d", src.reads[0], tt.wantFirst)
			}
			for i, n := range src.reads[1:] {
				if n > aheadRead {
					t.Errorf("read %d past the record took %d bytes, more than %d", i+1, n, aheadRead)
				}
			}
			if _, err := r.Seek(tt.seekBackTo, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			src.reads = nil
			buf := make([]byte, 256<<10)
			n, err := r.Read(buf)
			if err != nil || n != tt.wantAfterSeekBack || !bytes.Equal(buf[:n], file[tt.off+tt.seekBackTo:tt.off+tt.seekBackTo+int64(n)]) {
				t.Errorf("after a seek to %d: read %d bytes (%v), want %d of the record", tt.seekBackTo, n, err, tt.wantAfterSeekBack)
			}
		})
	}
}

// readIn reads r to its end in reads of size bytes, as the readers' 256 kB
// buffers do.
func readIn(r io.Reader, size int) ([]byte, error) {
	var all []byte
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		all = append(all, buf[:n]...)
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return all, err
		}
	}
}

// BenchmarkDuplicateRead reads one duplicate of a .warc.gz file (a 30 kB
// payload, its member followed by others) as the examiner does, through
// the record reader, and then the next record's header, where the end
// check looks: through recordSection, and through a plain SectionReader
// of the record and its look-ahead, as before.
func BenchmarkDuplicateRead(b *testing.B) {
	// Text that compresses to about 0.8 of its size, as the bench
	// collection's payloads do.
	rnd := rand.New(rand.NewPCG(1, 2))
	const letters = "etaoinshrdlucmfwypvbgkqjxz0123456789 <>/=ETAOINSHRDLU"
	text := make([]byte, 30000)
	for i := range text {
		text[i] = letters[rnd.IntN(len(letters))]
	}
	payload := string(text)
	var records []string
	for i := range 8 {
		records = append(records, warctest.Response(fmt.Sprintf("http://example.com/%d", i), "2024-01-01T00:00:00Z", payload+strconv.Itoa(i)))
	}
	var members [][]byte
	for _, r := range records {
		members = append(members, warctest.Gzip(r))
	}
	file := bytes.Join(members, nil)
	path := filepath.Join(b.TempDir(), "f.warc.gz")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	length := int64(len(members[0]))
	size := int64(len(file))
	for _, tt := range []struct {
		name string
		in   func() io.ReadSeeker
	}{
		{"recordSection", func() io.ReadSeeker { return newRecordSection(f, 0, min(size, length+lookAhead), length) }},
		{"SectionReader", func() io.ReadSeeker { return io.NewSectionReader(f, 0, min(size, length+lookAhead)) }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var rr *record.Reader
			b.SetBytes(length)
			start := processCPU()
			defer func() {
				if cpu := processCPU() - start; cpu > 0 {
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				}
			}()
			for b.Loop() {
				rr, err = record.Reuse(rr, tt.in(), "f.warc.gz")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rr.Next(); err != nil {
					b.Fatal(err)
				}
				if _, err := rr.WriteTo(io.Discard); err != nil {
					b.Fatal(err)
				}
				// The next record's header: where the end check looks.
				if _, err := rr.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
