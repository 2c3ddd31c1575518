package refs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/digest"
	"warcdedup/internal/rewritetest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/scripts/gen"
)

// TestBadManifestStops feeds a manifest that goes bad in the middle of a
// file's lines: the run stops with the error, and the file whose lines
// were cut short is left as it was (its new version would miss the lines
// the manifest did not deliver), with no temporary file.
func TestBadManifestStops(t *testing.T) {
	c := generate(t, gen.Config{Files: 2, Records: 80, DupRate: 0.5, Seed: 21, MeanPayload: 3 << 10,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC10}})
	files := byFileName(c.dups)
	second := "gen-00001.warc"
	if len(files[second]) < 4 {
		t.Fatalf("%s has %d lines, the test needs 4", second, len(files[second]))
	}
	// The manifest up to the middle of the second file's lines.
	var head []byte
	n := 0
	for _, l := range c.dups {
		if l.File == second && n == len(files[second])/2 {
			break
		}
		if l.File == second {
			n++
		}
		head = l.Append(head)
	}
	headLines := bytes.Count(head, []byte("\n"))
	rest := rewritetest.ManifestText(c.dups)[len(head):]
	last := files[second][len(files[second])-1]
	readErr := errors.New("the disk holding the manifest failed")

	tests := []struct {
		name     string
		manifest io.Reader
		line     int // of the *manifest.Error, 0 for none
		want     error
	}{
		{"a 6-field line", io.MultiReader(bytes.NewReader(head), strings.NewReader(second+" 1 2 http://x/ 2024-01-01T00:00:00Z "+last.Digest+"\n"), bytes.NewReader(rest)),
			headLines + 1, nil},
		{"a line out of order", io.MultiReader(bytes.NewReader(head), bytes.NewReader(last.Append(nil)), bytes.NewReader(rest)),
			headLines + 2, manifest.ErrOrder},
		{"a read error", io.MultiReader(bytes.NewReader(head), errReader{readErr}), 0, readErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rewritetest.CopyDir(t, c.dir, dir)
			before, _ := os.Stat(filepath.Join(dir, second))
			orig, _ := os.ReadFile(filepath.Join(dir, second))
			var refused []error
			rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 2, Refused: func(err error) { refused = append(refused, err) },
				Originals: rewritetest.Originals(t, c.all, dir)}
			st, err := rw.Run(context.Background(), manifest.NewReader(tt.manifest, "dups.manifest"), nil)
			if err == nil {
				t.Fatalf("Run succeeded on a bad manifest: %+v", st)
			}
			var me *manifest.Error
			if tt.line > 0 && (!errors.As(err, &me) || me.Line != tt.line || me.Name != "dups.manifest") {
				t.Errorf("error %v, want a *manifest.Error at dups.manifest:%d", err, tt.line)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v does not wrap %v", err, tt.want)
			}
			if len(refused) > 0 || st.Refused > 0 {
				t.Errorf("refusals %v (stats %+v): a bad manifest is no refusal", refused, st)
			}
			after, _ := os.ReadFile(filepath.Join(dir, second))
			now, _ := os.Stat(filepath.Join(dir, second))
			if !bytes.Equal(after, orig) || !os.SameFile(now, before) {
				t.Errorf("%s was rewritten with part of its lines", second)
			}
			if tf := rewritetest.TempFiles(t, dir); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestRunNeedsOneTargetAndOriginals checks that Run refuses to guess
// between in place and an output directory, and to run without an
// originals manifest.
func TestRunNeedsOneTargetAndOriginals(t *testing.T) {
	o := rewritetest.Originals(t, nil)
	for _, rw := range []Rewriter{{Originals: o}, {InPlace: true, OutputDir: t.TempDir(), Originals: o}, {InPlace: true}} {
		_, err := rw.Run(context.Background(), manifest.NewReader(strings.NewReader(""), "m"), nil)
		if err == nil {
			t.Errorf("Run with InPlace %v, OutputDir %q, originals %v succeeded", rw.InPlace, rw.OutputDir, rw.Originals != nil)
		}
	}
}

// dupResponses returns a plain WARC file of two responses with the same
// payload and the manifest lines that keep the first and make the second
// a duplicate of it.
func dupResponses(name string) ([]byte, []manifest.Line) {
	body := strings.Repeat("the same payload, fetched twice. ", 60)
	a := warctest.Response("http://example.com/"+name, "2024-01-01T00:00:00Z", body)
	b := warctest.Response("http://example.com/"+name+"?again", "2024-01-02T00:00:00Z", body)
	d := rewritetest.FormatDigest(digest.SHA1, []byte(body))
	orig := manifest.Line{File: name, Offset: 0, Length: int64(len(a)), URI: "http://example.com/" + name,
		Date: "2024-01-01T00:00:00Z", Digest: d, Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}
	dup := manifest.Line{File: name, Offset: int64(len(a)), Length: int64(len(b)), URI: "http://example.com/" + name + "?again",
		Date: "2024-01-02T00:00:00Z", Digest: d, Copy: 2,
		RefURI: "http://example.com/" + name, RefDate: "2024-01-01T00:00:00Z", Fields: 10}
	return []byte(a + b), []manifest.Line{orig, dup}
}

// dupFiles writes a dupResponses file under each name in dir and returns
// their manifest lines, sorted by file.
func dupFiles(t *testing.T, dir string, names ...string) []manifest.Line {
	t.Helper()
	var lines []manifest.Line
	for _, name := range names {
		data, ls := dupResponses(name)
		warctest.WriteFile(t, dir, name, data)
		lines = append(lines, ls...)
	}
	rewritetest.SortByFile(lines)
	return lines
}

// TestLeftoversRemoved checks which temporary files a run removes: those
// an earlier run left for a file it rewrites, and no other (not those of a
// file whose name extends the rewritten one's, which another worker may be
// writing at that moment); a dry run removes none.
func TestLeftoversRemoved(t *testing.T) {
	dir := t.TempDir()
	var lines []manifest.Line
	for _, name := range []string{"a.warc", "a.warc-1.warc", "b[1]*.warc"} {
		data, ls := dupResponses(name)
		warctest.WriteFile(t, dir, name, data)
		if name != "a.warc-1.warc" {
			lines = append(lines, ls...)
		}
	}
	rewritetest.SortByFile(lines)
	leftovers := map[string]bool{ // name -> removed by a run
		".tmp-a.warc-123":            true,
		".tmp-b[1]*.warc-4294967295": true,
		".tmp-a.warc-1.warc-456":     false, // a.warc-1.warc is not in the manifest
		".tmp-a.warc-notes":          false, // not a name atomicfile.Create makes
		".tmp-c.warc-1":              false,
	}
	for name := range leftovers {
		warctest.WriteFile(t, dir, name, []byte("partial"))
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	mustRun(t, Rewriter{Roots: []string{dir}, InPlace: true, DryRun: true}, lines)
	for name := range leftovers {
		if !exists(name) {
			t.Errorf("a dry run removed %s", name)
		}
	}
	o := mustRun(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 2}, lines)
	if o.stats.Revisits != 2 {
		t.Errorf("stats %+v, want 2 revisits", o.stats)
	}
	for name, removed := range leftovers {
		if exists(name) == removed {
			t.Errorf("%s: exists %v after the run, want %v", name, removed, !removed)
		}
	}
}

// TestCheckCatchesBadNewVersion gives the rewrite a temporary file that
// does not end up holding what was written to it: the check that re-reads
// the new version before the rename must refuse the file and leave it as
// it was, without a temporary file.
func TestCheckCatchesBadNewVersion(t *testing.T) {
	c := generate(t, gen.Config{Files: 2, Records: 60, DupRate: 0.5, Seed: 81, MeanPayload: 3 << 10,
		Formats: []gen.Format{gen.WARC10, gen.WARC11Gz}})
	victim := c.res.Names[1]
	tests := []struct {
		name  string
		spoil func(f *os.File) error
	}{
		{"bytes before what is written", func(f *os.File) error { _, err := f.Write([]byte("junk")); return err }},
		{"bytes after what is written", func(f *os.File) error { return f.Truncate(1 << 30) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rewritetest.CopyDir(t, c.dir, dir)
			orig := rewritetest.Snapshot(t, dir)
			rw := Rewriter{Roots: []string{dir}, InPlace: true}
			rw.create = func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error) {
				f, err := atomicfile.CreateIn(root, name, perm)
				if err == nil && path.Base(name) == victim {
					err = tt.spoil(f.File)
				}
				return f, err
			}
			o := run(t, rw, c.lines)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if len(o.refused) != 1 || o.refusedFor(victim) == nil || !strings.Contains(o.refused[0].Error(), "failed its check") {
				t.Fatalf("refusals %v, want %s refused by the check", o.refused, victim)
			}
			after := rewritetest.Snapshot(t, dir)
			if !bytes.Equal(after[victim], orig[victim]) {
				t.Errorf("%s changed", victim)
			}
			if tf := rewritetest.TempFiles(t, dir); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
			if o.stats.Rewritten != 1 || o.stats.Refused != 1 {
				t.Errorf("stats %+v, want 1 file rewritten and 1 refused", o.stats)
			}
		})
	}
}
