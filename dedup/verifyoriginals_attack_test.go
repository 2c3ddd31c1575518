package dedup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/manifest"
	"warcdedup/scripts/gen"
)

// TestVerifyOriginalsAttack imports crawls of files index verify --deep
// must read right (ARC v1 and v2 originals, plain and gzip, with the
// generator's ARC quirks; file names with a space and a percent sign,
// which the manifest escapes) and proves that a right index passes and
// that a file gone is counted among the problems it names, whichever
// file it is in the order of the sort (the last one too).
func TestVerifyOriginalsAttack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		formats []gen.Format
		quirks  bool
		rename  func(name string) string // the files' names after generation
		gone    bool                     // remove the last file in the sort's order
	}{
		{"ARC v1 and v2 originals, plain and gzip, with quirks", []gen.Format{gen.ARC, gen.ARCGz, gen.ARC2, gen.ARC2Gz}, true, nil, false},
		{"file names with a space and a percent sign", []gen.Format{gen.WARC10Gz, gen.WARC11}, false, func(n string) string { return "my file%20" + n }, false},
		{"the last file in the sort's order gone", []gen.Format{gen.WARC10Gz, gen.WARC11Gz}, false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, index := t.TempDir(), filepath.Join(t.TempDir(), "index")
			if _, err := gen.Write(dir, gen.Config{Files: len(tc.formats), Records: 40, DupRate: 0.2, Seed: 11, MeanPayload: 2 << 10, Formats: tc.formats, ARCQuirks: tc.quirks}); err != nil {
				t.Fatal(err)
			}
			if tc.rename != nil {
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(dir, tc.rename(e.Name()))); err != nil {
						t.Fatal(err)
					}
				}
			}
			lines := responseLines(t, dir)
			if len(lines) != len(tc.formats) {
				t.Fatalf("%d files with 200 responses, want %d: the test proves nothing", len(lines), len(tc.formats))
			}
			cdxj := filepath.Join(t.TempDir(), "index.cdxj")
			writeTestCDXJ(t, cdxj, lines)
			if _, err := ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: "c0", Location: dir, CDX: []string{cdxj}}); err != nil {
				t.Fatal(err)
			}
			var gone string
			if tc.gone {
				var names []string
				for file := range lines {
					names = append(names, manifest.EscapeFile(file))
				}
				slices.Sort(names)
				gone, _ = manifest.UnescapeFile(names[len(names)-1])
				if err := os.Remove(filepath.Join(dir, gone)); err != nil {
					t.Fatal(err)
				}
			}
			ix, err := crawlindex.Open(index)
			if err != nil {
				t.Fatal(err)
			}
			var problems []string
			st, err := VerifyOriginals(context.Background(), ix, "", func(p string) { problems = append(problems, p) }, nil)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(problems)) != st.Problems {
				t.Errorf("%d problems counted, %d reported: %v", st.Problems, len(problems), problems)
			}
			want := ix.Registry.Crawl("c0").Originals
			if tc.gone {
				want -= int64(len(lines[gone]))
				if len(problems) != 1 || !strings.Contains(problems[0], gone) {
					t.Errorf("problems %v, want one naming %s", problems, gone)
				}
			} else if len(problems) > 0 {
				t.Errorf("a right index fails: %v", problems)
			}
			if st.Originals != want || want == 0 {
				t.Errorf("%d originals read at their places, want %d", st.Originals, want)
			}
		})
	}
}
