//go:build cgo && !nozlib

package gzmember

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/gzmulti"
	"warcdedup/internal/corpustest"
)

// TestCorpusMembers: the members of real files, described as read, are
// rebuilt bit for bit where their writer used zlib (Heritrix at level 6,
// wget at 9, warcprox flushed before finish), and none of a Go writer's
// (gowarc) is. scripts/gzrebuild measures every corpus file.
func TestCorpusMembers(t *testing.T) {
	const corpus = "../../shared/corpus"
	if _, err := os.Stat(corpus); err != nil {
		corpustest.Missing(t, "shared corpus absent")
	}
	cases := []struct {
		path    string
		members int
		rebuilt int
		writer  Setting // the setting every rebuilt member shares
	}{
		{"oduwsdl+ipwb/samples/warcs/sample-1.warc.gz", 231, 231, Setting{Level: 6, MemLevel: 8, WindowBits: 15}},
		{"iipc+webarchive-commons/src/test/resources/org/archive/format/gzip/IAH-urls-wget.warc.gz", 36, 36, Setting{Level: 9, MemLevel: 8, WindowBits: 15}},
		{"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/NetarchiveSuite-netarkivet.arc.gz", 66, 66, Setting{Level: 6, MemLevel: 8, WindowBits: 15}},
		{"webrecorder+pywb/sample_archive/warcs/example2.warc.gz", 3, 3, Setting{Level: 9, MemLevel: 8, WindowBits: 15, FlushBeforeFinish: true}},
		{"iipc+jwarc/test-resources/org/netpreserve/jwarc/gzip_extra_sl.warc.gz", 1, 1, Setting{Level: 6, MemLevel: 8, WindowBits: 15}},
		{"internetarchive+gowarc/testdata/warcs/test.warc.gz", 3, 0, Setting{}},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(corpus, tc.path))
			if err != nil {
				t.Fatal(err)
			}
			z, err := gzmulti.NewReader(bytes.NewReader(data), tc.path)
			if err != nil {
				t.Fatal(err)
			}
			r := NewRebuilder()
			defer r.Close()
			writer := &Rebuilder{Order: []Setting{tc.writer}}
			defer writer.Close()
			members, rebuilt := 0, 0
			for {
				m, err := z.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				inflated, err := io.ReadAll(z)
				if err != nil {
					t.Fatal(err)
				}
				m = z.Member()
				raw := data[m.Offset : m.Offset+m.Length]
				members++
				d := describe(t, raw)
				open := (&opener{p: inflated}).open
				var out bytes.Buffer
				_, err = r.Rebuild(&d, open, &out)
				switch {
				case err == nil:
					if !bytes.Equal(out.Bytes(), raw) {
						t.Fatalf("offset %d: rebuilt as other bytes", m.Offset)
					}
					rebuilt++
					if _, err := writer.Rebuild(&d, open, io.Discard); err != nil {
						t.Errorf("offset %d: not made by %v: %v", m.Offset, tc.writer, err)
					}
				case !errors.Is(err, ErrNotRebuildable):
					t.Fatal(err)
				}
			}
			if members != tc.members || rebuilt != tc.rebuilt {
				t.Fatalf("%d of %d members rebuilt, want %d of %d", rebuilt, members, tc.rebuilt, tc.members)
			}
		})
	}
}
