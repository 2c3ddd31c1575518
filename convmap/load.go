package convmap

import (
	"fmt"
	"io"
	"os"
	"path"
	"sort"
)

// Map is a conversion map held in memory, to look index lines up in:
// about 60 bytes per record plus its digest's text.
type Map struct {
	files  []*Mapped
	byName map[string]*Mapped
	byBase map[string][]*Mapped
	mimes  []string
	mimeID map[string]uint32
}

// Mapped is one converted file of a Map.
type Mapped struct {
	File
	recs []mrec
	// Lines counts the index lines found for the file; Hit marks each
	// record some line landed on (for the records an index lacks).
	Lines int64
	hit   []bool
}

type mrec struct {
	oldOff, oldLen, newOff, newLen int64
	mime                           uint32
	typ                            string
	status, digest                 string
}

// Load reads a whole map into memory. A file converted in two sections
// (a map concatenated twice) keeps the last one.
func Load(r io.Reader, name string) (*Map, error) {
	m := &Map{byName: map[string]*Mapped{}, byBase: map[string][]*Mapped{}, mimeID: map[string]uint32{}}
	rd := NewReader(r, name)
	var cur *Mapped
	for {
		f, rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if rec == nil {
			cur = &Mapped{File: *f}
			if old := m.byName[f.ARC]; old != nil {
				*old = *cur
				cur = old
				continue
			}
			m.byName[f.ARC] = cur
			base := path.Base(f.ARC)
			m.byBase[base] = append(m.byBase[base], cur)
			m.files = append(m.files, cur)
			continue
		}
		id, ok := m.mimeID[rec.MIME]
		if !ok {
			id = uint32(len(m.mimes))
			m.mimes = append(m.mimes, rec.MIME)
			m.mimeID[rec.MIME] = id
		}
		cur.recs = append(cur.recs, mrec{oldOff: rec.OldOffset, oldLen: rec.OldLength, newOff: rec.NewOffset, newLen: rec.NewLength,
			mime: id, typ: rec.Type, status: rec.Status, digest: rec.Digest})
	}
	for _, f := range m.files {
		f.hit = make([]bool, len(f.recs))
	}
	return m, nil
}

// LoadFile is Load of the map file name.
func LoadFile(name string) (*Map, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Load(f, name)
}

// Files are the converted files, in map order.
func (m *Map) Files() []*Mapped { return m.files }

// Resolve finds the converted file that name (a file name in an index)
// is, as rewritelog.Moves.Resolve does: the same relative ARC name, else
// the longest "/"-suffix of name that is one, else the only ARC of that
// base name. nil, nil for a file the map does not name.
func (m *Map) Resolve(name string) (*Mapped, error) {
	if f := m.byName[name]; f != nil {
		return f, nil
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			if f := m.byName[name[i+1:]]; f != nil {
				return f, nil
			}
		}
	}
	switch fs := m.byBase[path.Base(name)]; len(fs) {
	case 0:
		return nil, nil
	case 1:
		return fs[0], nil
	default:
		return nil, fmt.Errorf("file name %q: the conversion map names %d ARC files of that name", name, len(fs))
	}
}

// Lookup returns the record of f that an index line at offset off,
// length bytes long (-1: unknown), is. An indexer of a plain ARC may
// leave the line feeds after a record out of its length (pywb does), so a
// length up to 4 bytes short of the record's is its.
func (m *Map) Lookup(f *Mapped, off, length int64) (Record, error) {
	i := sort.Search(len(f.recs), func(i int) bool { return f.recs[i].oldOff >= off })
	if i == len(f.recs) || f.recs[i].oldOff != off {
		if len(f.recs) == 0 {
			return Record{}, fmt.Errorf("%s was converted as a whole (not one record per gzip member): no index line can be followed", f.ARC)
		}
		return Record{}, fmt.Errorf("%s: no ARC record starts at offset %d", f.ARC, off)
	}
	r := &f.recs[i]
	if d := r.oldLen - length; length >= 0 && (d < 0 || d > 4) {
		return Record{}, fmt.Errorf("%s: offset %d: the index gives length %d, the ARC record is %d bytes", f.ARC, off, length, r.oldLen)
	}
	f.hit[i] = true
	return m.record(r), nil
}

func (m *Map) record(r *mrec) Record {
	return Record{OldOffset: r.oldOff, OldLength: r.oldLen, NewOffset: r.newOff, NewLength: r.newLen,
		Type: r.typ, Status: r.status, MIME: m.mimes[r.mime], Digest: r.digest}
}

// Unhit calls fn for each record of f that no Lookup landed on.
func (m *Map) Unhit(f *Mapped, fn func(Record)) {
	for i := range f.recs {
		if !f.hit[i] {
			fn(m.record(&f.recs[i]))
		}
	}
}
