package stage

import (
	"context"
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/source"
)

// TestCollideStaleOriginal resolves again the duplicates the rewrite kept
// apart because their original is gone (originals.ErrOriginal): the
// original's line is stale and left out, and the duplicates, which are
// the same bytes, are numbered among themselves, the earliest kept; the
// new numbering reaches the job's numbered manifest at the hash stage's
// offsets. With the original there, they stay its copies.
func TestCollideStaleOriginal(t *testing.T) {
	body := strings.Repeat("the same payload ", 300)
	sum := sha1.Sum([]byte(body))
	dig := digest.SHA1.Format(sum[:])
	recs := []string{
		warctest.Response("http://o.example/", "2024-01-01T00:00:01Z", body),
		warctest.Response("http://d1.example/", "2024-01-02T00:00:01Z", body),
		warctest.Response("http://d2.example/", "2024-01-03T00:00:01Z", body),
	}
	cases := []struct {
		name     string
		origFile string // where the first numbering says the original is
		stale    int64
		want     []string // uri copy ref of the lines kept apart, in the job's numbering
		// renumbered: the numbering changes lines of the numbered
		// manifest, written anew with its copy on file; else both are
		// left as they are.
		renumbered bool
	}{
		{"original gone", "gone.warc", 1, []string{"http://d1.example/ 1 -", "http://d2.example/ 2 http://d1.example/"}, true},
		{"original there", "c.warc", 0, []string{"http://d1.example/ 2 http://o.example/", "http://d2.example/ 3 http://o.example/"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll := filepath.Join(dir, "coll")
			warctest.WriteFile(t, coll, "c.warc", []byte(strings.Join(recs, "")))
			var lines []string
			var off int64
			for i, r := range recs {
				uri := []string{"http://o.example/", "http://d1.example/", "http://d2.example/"}[i]
				date := []string{"2024-01-01T00:00:01Z", "2024-01-02T00:00:01Z", "2024-01-03T00:00:01Z"}[i]
				file, num := "c.warc", fmt.Sprintf("0 %d http://o.example/ 2024-01-01T00:00:01Z", i+1)
				if i == 0 {
					file, num = tc.origFile, "0 1 - -"
				}
				lines = append(lines, fmt.Sprintf("%s %d %d %s %s %s %s\n", file, off, len(r), uri, date, dig, num))
				off += int64(len(r))
			}
			numbered := filepath.Join(dir, "numbered.manifest")
			apart := filepath.Join(dir, "apart.manifest")
			if err := os.WriteFile(numbered, []byte(strings.Join(lines, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(apart, []byte(lines[1]+lines[2]), 0o644); err != nil {
				t.Fatal(err)
			}
			savedNow := filepath.Join(dir, "saved-now.tsv")
			if err := os.WriteFile(savedNow, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			files := (&source.Locator{Roots: []string{coll}}).Files(4)
			defer files.Close()
			sorter := syssort.Sorter{TempDir: filepath.Join(dir, "tmp")}
			c := Collide{Apart: apart, Numbered: numbered, Log: filepath.Join(dir, "rewrite.log"), Source: files, Jobs: 2, Sorter: sorter,
				Out: filepath.Join(dir, "collide.manifest"), Origins: filepath.Join(dir, "origins.tsv"), Messages: &collected{}, Meter: progress.Discard}
			res, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.Stale != tc.stale || res.Apart != 2 || res.Digests != 1 {
				t.Errorf("stale %d, apart %d, digests %d; want %d stale, 2 apart, 1 digest", res.Stats.Stale, res.Apart, res.Digests, tc.stale)
			}
			byFile := filepath.Join(dir, "by-file.manifest")
			back := CollideBack{Origins: c.Origins, Collide: c.Out, SavedNow: savedNow, Saved: filepath.Join(dir, "saved-collisions.tsv"), Numbered: numbered, ByFile: byFile, Sorter: sorter}
			for range 2 { // a second time over its own output: the same
				before, _ := os.ReadFile(numbered)
				if err := back.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				after, _ := os.ReadFile(numbered)
				onFile, err := os.ReadFile(byFile)
				switch {
				case !tc.renumbered && (err == nil || string(after) != string(before)):
					t.Errorf("numbered again as before: the numbered manifest changed or its copy on file was written (%v)", err)
				case tc.renumbered && err != nil:
					t.Errorf("renumbered: the copy on file: %v", err)
				case tc.renumbered && !sameLines(string(onFile), string(after)):
					t.Errorf("renumbered: the copy on file\n%s\nis not the numbered manifest\n%s", onFile, after)
				}
				var got []string
				if err := EachLine(numbered, func(l *manifest.Line) error {
					if l.URI != "http://o.example/" {
						got = append(got, fmt.Sprintf("%s %d %s", l.URI, l.Copy, l.RefURI))
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
					t.Errorf("numbered:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
				}
			}
		})
	}
}

// sameLines reports whether a and b hold the same lines, in any order.
func sameLines(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}
