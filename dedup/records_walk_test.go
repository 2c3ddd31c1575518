package dedup

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/record"
	"warcdedup/wacz"
)

// eachRecord calls f with every record of the WARC members of the
// packages in dir, and the package's file name.
func eachRecord(t *testing.T, dir string, f func(pkg string, rec *record.Record, rr *record.Reader)) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	for _, name := range names {
		p, err := wacz.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.WARCs() {
			sec, err := p.Section(m)
			if err != nil {
				t.Fatal(err)
			}
			eachRecordIn(t, sec, name+"#"+m.Name, func(rec *record.Record, rr *record.Reader) {
				f(filepath.Base(name), rec, rr)
			})
		}
		p.Close()
	}
}

// eachFileRecord calls f with every record of the WARC file path.
func eachFileRecord(t *testing.T, path string, f func(rec *record.Record, rr *record.Reader)) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	eachRecordIn(t, file, path, f)
}

// eachRecordIn calls f with every record read from r, named name.
func eachRecordIn(t *testing.T, r io.Reader, name string, f func(rec *record.Record, rr *record.Reader)) {
	t.Helper()
	rr, err := record.NewReader(r, name)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f(rec, rr)
	}
}
