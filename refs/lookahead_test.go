package refs

import (
	"bytes"
	"io"
	"testing"
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
