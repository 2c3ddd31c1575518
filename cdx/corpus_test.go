package cdx

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/corpustest"
)

const corpusDir = "../../shared/corpus"

// corpusBad are the corpus indexes that are not capture indexes: ipwb's
// TimeMap keys captures by datetime ("2017-...T10:00:00").
var corpusBad = map[string]int64{"oduwsdl+ipwb/samples/indexes/5mementos.cdxj": 5}

// TestCorpus reads every CDX and CDXJ file of the corpus (MANIFEST.md
// lists them): no bad line but the known ones, every record with a file
// timestamp, and the lines written back byte for byte as read.
func TestCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		corpustest.Missing(t, "no corpus: %v", err)
	}
	files := 0
	err := filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n := d.Name()
		if !strings.HasSuffix(n, ".cdx") && !strings.HasSuffix(n, ".cdxj") && !strings.HasSuffix(n, ".cdx.gz") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(corpusDir, p)
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewReader(bytes.NewReader(b), rel, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			w := NewWriter(&out)
			for {
				l, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil && l == nil {
					t.Fatal(err)
				}
				if err == nil && l.Kind == Record && !allDigits(l.Timestamp) {
					t.Errorf("line %d: no timestamp: %s", l.Number, l.Raw)
				}
				if err := w.Write(l); err != nil {
					t.Fatal(err)
				}
			}
			w.Flush()
			if r.BadLines != corpusBad[rel] {
				t.Errorf("%d bad lines, want %d", r.BadLines, corpusBad[rel])
			}
			if r.Gzipped() {
				// Written plain; a ZipNum member's last line gets its "\n".
				if got, want := strings.Count(out.String(), "\n"), int(r.Records); got != want {
					t.Errorf("%d lines written, %d records", got, want)
				}
			} else if !bytes.Equal(out.Bytes(), b) {
				t.Errorf("not written back byte for byte")
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 30 {
		t.Errorf("only %d index files in the corpus", files)
	}
}
