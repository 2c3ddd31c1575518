package dedup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/manifest"
	"warcdedup/scripts/gen"
	"warcdedup/warcsum"
)

// TestVerifyOriginals imports a crawl of WARC files from a CDXJ (the
// index records each file's size and stamp, no SHA-256, and takes the
// CDXJ's places as they are) and proves what index verify --deep finds
// of its originals: none wrong when every line is the record's, and,
// when a line is not (an original at another record's offset, past the
// file's end, in a file gone), a problem naming the file, the offset and
// the digest, which the check of the crawl's files does not find (the
// files are as the import recorded them). Before, --deep compared each
// file's SHA-256 alone (none here) and said all was well.
func TestVerifyOriginals(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage changes the lines (each file's, by file name) before
		// the import, or the files after it; it returns what the
		// problem must name.
		damage func(t *testing.T, dir string, lines map[string][]manifest.Line) []string
	}{
		{"every original at its place", nil},
		{"an original at another record's offset", func(t *testing.T, dir string, lines map[string][]manifest.Line) []string {
			for file, ls := range lines {
				for i := 1; i < len(ls); i++ {
					if ls[i].Digest != ls[0].Digest {
						ls[0].Offset, ls[0].Length = ls[i].Offset, ls[i].Length
						return []string{filepath.Join(dir, file), fmt.Sprintf("offset %d", ls[i].Offset), ls[0].Digest, "payload digest " + ls[i].Digest}
					}
				}
			}
			t.Fatal("no two records of other payloads in a file: the test proves nothing")
			return nil
		}},
		{"an original past its file's end", func(t *testing.T, dir string, lines map[string][]manifest.Line) []string {
			for file, ls := range lines {
				fi, err := os.Stat(filepath.Join(dir, file))
				if err != nil {
					t.Fatal(err)
				}
				ls[0].Offset = fi.Size() + 10
				return []string{filepath.Join(dir, file), fmt.Sprintf("offset %d", ls[0].Offset), ls[0].Digest, fmt.Sprintf("past the file's end (%d bytes)", fi.Size())}
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, index := t.TempDir(), filepath.Join(t.TempDir(), "index")
			if _, err := gen.Write(dir, gen.Config{Files: 2, Records: 40, DupRate: 0.2, Seed: 7, MeanPayload: 2 << 10, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}}); err != nil {
				t.Fatal(err)
			}
			lines := responseLines(t, dir)
			var want []string
			if tc.damage != nil {
				want = tc.damage(t, dir, lines)
			}
			cdxj := filepath.Join(t.TempDir(), "index.cdxj")
			writeTestCDXJ(t, cdxj, lines)
			if _, err := ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: "c0", Location: dir, CDX: []string{cdxj}}); err != nil {
				t.Fatal(err)
			}
			ix, err := crawlindex.Open(index)
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			if _, err := ix.Verify(true, func(p string) { files = append(files, p) }); err != nil || len(files) > 0 {
				t.Fatalf("the crawl's files do not verify (%v, %v): the test proves nothing", err, files)
			}
			var problems []string
			st, err := VerifyOriginals(context.Background(), ix, "", func(p string) { problems = append(problems, p) }, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Originals != ix.Registry.Crawl("c0").Originals || st.Originals == 0 {
				t.Errorf("%d originals read at their places, the index has %d", st.Originals, ix.Registry.Crawl("c0").Originals)
			}
			if int64(len(problems)) != st.Problems {
				t.Errorf("%d problems counted, %d reported", st.Problems, len(problems))
			}
			// The command: exit status 1 for a problem, each on stderr.
			cmd := exec.Command(binPath, "index", "verify", "--deep", "--index", index)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err = cmd.Run()
			var exit *exec.ExitError
			switch {
			case want == nil && err != nil:
				t.Errorf("index verify --deep: %v\n%s", err, stderr.String())
			case want != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1):
				t.Errorf("index verify --deep: %v, want exit status 1\n%s", err, stderr.String())
			case want != nil && !strings.Contains(stderr.String(), want[1]):
				t.Errorf("index verify --deep does not name %q on stderr: %s", want[1], stderr.String())
			}
			if want == nil {
				if len(problems) > 0 {
					t.Fatalf("problems: %v", problems)
				}
				return
			}
			if len(problems) != 1 {
				t.Fatalf("got %d problems, want one naming %q: %v", len(problems), want, problems)
			}
			for _, w := range want {
				if !strings.Contains(problems[0], w) {
					t.Errorf("the problem does not name %q: %s", w, problems[0])
				}
			}
		})
	}
}

// TestVerifyOriginalsFileGone is TestVerifyOriginals with one of the
// crawl's files deleted after the import: one problem names it and the
// originals in it not read, and the originals of the other are read.
func TestVerifyOriginalsFileGone(t *testing.T) {
	dir, index := t.TempDir(), filepath.Join(t.TempDir(), "index")
	if _, err := gen.Write(dir, gen.Config{Files: 2, Records: 40, Seed: 7, MeanPayload: 2 << 10, Formats: []gen.Format{gen.WARC10Gz}}); err != nil {
		t.Fatal(err)
	}
	lines := responseLines(t, dir)
	cdxj := filepath.Join(t.TempDir(), "index.cdxj")
	writeTestCDXJ(t, cdxj, lines)
	if _, err := ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: "c0", Location: dir, CDX: []string{cdxj}}); err != nil {
		t.Fatal(err)
	}
	var gone string
	for file := range lines {
		gone = file
		break
	}
	if err := os.Remove(filepath.Join(dir, gone)); err != nil {
		t.Fatal(err)
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
	if len(problems) != 1 || !strings.Contains(problems[0], filepath.Join(dir, gone)) || !strings.Contains(problems[0], fmt.Sprintf("%d originals in it, not read", len(lines[gone]))) {
		t.Errorf("problems: %v, want one naming %s and its %d originals", problems, gone, len(lines[gone]))
	}
	if want := ix.Registry.Crawl("c0").Originals - int64(len(lines[gone])); st.Originals != want || want == 0 {
		t.Errorf("%d originals read, want %d", st.Originals, want)
	}
}

// responseLines are the manifest lines of the 200 responses of the
// files of dir, by file name, as the hash stage lists them.
func responseLines(t *testing.T, dir string) map[string][]manifest.Line {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]manifest.Line{}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := warcsum.NewSummer(warcsum.Options{ResponsesOnly: true})
		_, err = s.SumFile(f, e.Name(), func(l *manifest.Line) error {
			if s.Facts().Status == 200 {
				out[e.Name()] = append(out[e.Name()], *l)
			}
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// writeTestCDXJ writes the lines as a CDXJ index, as a crawler's indexer
// writes it.
func writeTestCDXJ(t *testing.T, name string, lines map[string][]manifest.Line) {
	t.Helper()
	var b strings.Builder
	n := 0
	for file, ls := range lines {
		for _, l := range ls {
			n++
			fmt.Fprintf(&b, "com,example)/page%d 20240102030405 {\"url\": \"http://example.com/page%d\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": %q, \"length\": \"%d\", \"offset\": \"%d\", \"filename\": %q}\n",
				n, n, l.Digest, l.Length, l.Offset, file)
		}
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
