package redisindex

import (
	"archive/zip"
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"warcdedup/cdx"
)

// waczIndex reads what an import needs of a WACZ: the lines of its CDXJ
// indexes and where each WARC member's bytes start in the package. WARC
// members are stored, not deflated (WACZ 1.1.1), so a record at offset O
// of member M is at offset start(M)+O of the WACZ file itself: the crawl
// index names such a record by the WACZ and that offset, and a run reads
// it there as it reads a WARC file.
//
// This is the little of the WACZ format an import needs; the wacz package
// (issue 23) reads and checks the whole of it.
type waczIndex struct {
	name    string // for messages
	f       *os.File
	zr      *zip.Reader
	members map[string]*zip.File
}

func openWACZ(name string) (*waczIndex, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not a WACZ (ZIP) package: %v", name, err)
	}
	w := &waczIndex{name: name, f: f, zr: zr, members: map[string]*zip.File{}}
	for _, m := range zr.File {
		if _, dup := w.members[m.Name]; dup {
			f.Close()
			return nil, fmt.Errorf("%s: member %s is in the package twice", name, m.Name)
		}
		w.members[m.Name] = m
	}
	return w, nil
}

func (w *waczIndex) Close() error { return w.f.Close() }

// indexes are the package's CDXJ members: indexes/*.cdxj, *.cdx, and
// *.cdx.gz (a ZipNum index: its gzip blocks read one after the other are
// the sorted lines).
func (w *waczIndex) indexes() []*zip.File {
	var out []*zip.File
	for _, m := range w.zr.File {
		dir, base := path.Split(m.Name)
		if dir != "indexes/" {
			continue
		}
		if strings.HasSuffix(base, ".cdxj") || strings.HasSuffix(base, ".cdx") || strings.HasSuffix(base, ".cdx.gz") {
			out = append(out, m)
		}
	}
	return out
}

// start is where the bytes of the WARC member that a CDXJ line's filename
// names begin in the package.
func (w *waczIndex) start(filename string) (int64, error) {
	name := "archive/" + filename
	m, ok := w.members[name]
	if !ok {
		return 0, fmt.Errorf("%s: its index names %s, which the package does not hold", w.name, name)
	}
	if m.Method != zip.Store {
		return 0, fmt.Errorf("%s: %s is compressed by ZIP (method %d): WARC members of a WACZ are stored", w.name, name, m.Method)
	}
	return m.DataOffset()
}

// size is the length of a stored member.
func (w *waczIndex) size(filename string) int64 {
	if m, ok := w.members["archive/"+filename]; ok {
		return int64(m.UncompressedSize64)
	}
	return -1
}

// lines calls fn with every capture line of the package's indexes.
func (w *waczIndex) lines(ctx context.Context, fn func(*cdx.Line) error) error {
	idx := w.indexes()
	if len(idx) == 0 {
		return fmt.Errorf("%s: no CDXJ index in indexes/", w.name)
	}
	for _, m := range idx {
		if err := w.readIndex(ctx, m, fn); err != nil {
			return err
		}
	}
	return nil
}

func (w *waczIndex) readIndex(ctx context.Context, m *zip.File, fn func(*cdx.Line) error) error {
	rc, err := m.Open()
	if err != nil {
		return fmt.Errorf("%s: %s: %v", w.name, m.Name, err)
	}
	defer rc.Close()
	name := w.name + ":" + m.Name
	r, err := cdx.NewReader(bufio.NewReaderSize(rc, 256<<10), name, cdx.Options{})
	if err != nil {
		return err
	}
	for n := 0; ; n++ {
		if n%10000 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		l, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err // a damaged line stops the import: its crawl would miss originals
		}
		if l.Kind != cdx.Record {
			continue
		}
		if err := fn(l); err != nil {
			return err
		}
	}
}
