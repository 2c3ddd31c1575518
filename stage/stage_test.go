package stage

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/digest"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/source"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// collected keeps a stage's messages.
type collected struct {
	mu                   sync.Mutex
	errors, warns, notes []string
}

func (c *collected) Error(err error) {
	c.mu.Lock()
	c.errors = append(c.errors, err.Error())
	c.mu.Unlock()
}
func (c *collected) Warn(err error) {
	c.mu.Lock()
	c.warns = append(c.warns, err.Error())
	c.mu.Unlock()
}
func (c *collected) Note(f string, a ...any) {
	c.mu.Lock()
	c.notes = append(c.notes, f)
	c.mu.Unlock()
}

// job is a collection and a work directory the stages run in, one after
// the other, as warcdedup run runs them.
type job struct {
	t    *testing.T
	coll string
	wd   string
	msgs *collected
	sort syssort.Sorter
}

func newJob(t *testing.T, files map[string]string) *job {
	dir := t.TempDir()
	j := &job{t: t, coll: filepath.Join(dir, "coll"), wd: filepath.Join(dir, "work"), msgs: &collected{}}
	for name, data := range files {
		warctest.WriteFile(t, j.coll, name, []byte(data))
	}
	j.sort = syssort.Sorter{TempDir: j.file(workdir.TmpDir)}
	if err := os.MkdirAll(j.wd, 0o755); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j *job) file(name string) string { return filepath.Join(j.wd, name) }

func (j *job) inputs() []warcsum.Input {
	in, err := warcsum.Collect([]string{j.coll}, true)
	if err != nil {
		j.t.Fatal(err)
	}
	return in
}

func (j *job) reader(name string) *manifest.Reader {
	f, err := os.Open(j.file(name))
	if err != nil {
		j.t.Fatal(err)
	}
	j.t.Cleanup(func() { f.Close() })
	return manifest.NewReader(f, name)
}

func (j *job) lines(name string) []manifest.Line {
	r := j.reader(name)
	var out []manifest.Line
	for {
		l, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			j.t.Fatal(err)
		}
		out = append(out, l)
	}
}

func (j *job) hash(manifestName, facts string) HashResult {
	h := Hash{Inputs: j.inputs(), Algorithm: digest.SHA1, Jobs: 2, Cache: j.file(workdir.CacheDir), Manifest: j.file(manifestName),
		Messages: j.msgs, Meter: progress.Discard}
	if facts != "" {
		h.Facts = j.file(facts)
	}
	res, err := h.Run(context.Background())
	if err != nil {
		j.t.Fatalf("hash: %v", err)
	}
	return res
}

func (j *job) sortFile(from, to, command string) {
	if err := j.sort.Sort(context.Background(), command, []string{j.file(from)}, j.file(to)); err != nil {
		j.t.Fatal(err)
	}
}

// TestOneRecordThroughTheStages follows a duplicate from the hash stage
// to the account, through the work files each stage leaves for the next:
// listed, numbered copy 2, rewritten as a revisit (or, in a dry run,
// measured), listed again from the cache and the revisit read, verified,
// counted.
func TestOneRecordThroughTheStages(t *testing.T) {
	body := strings.Repeat("logo ", 2000)
	const uri = "http://example.com/logo.png"
	for _, tt := range []struct {
		name string
		dry  bool
	}{{"run", false}, {"dry run", true}} {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(t, map[string]string{
				"a.warc": warctest.Response(uri, "2024-01-01T00:00:00Z", body),
				"b.warc": warctest.Response(uri, "2024-02-01T00:00:00Z", body),
			})
			ctx := context.Background()

			// 1. hash
			hashed := j.hash(workdir.BeforeFile, workdir.FactsFile)
			if hashed.Stats.Listed != 2 || len(hashed.Damaged) != 0 {
				t.Fatalf("hash: %+v", hashed)
			}
			j.sortFile(workdir.BeforeFile, workdir.ByDigestFile, manifest.ByDigest.Command)

			// 2 and 3. resolve and number
			files := (&source.Locator{Roots: []string{j.coll}}).Files(source.KeptOpen)
			defer files.Close()
			resolved, err := (&Resolve{In: j.reader(workdir.ByDigestFile), Out: j.file(workdir.NumberedFile), Source: files, Jobs: 2,
				Total: hashed.Stats.Listed, Messages: j.msgs, Meter: progress.Discard}).Run(ctx)
			if err != nil || resolved.Stats.Clusters != 1 {
				t.Fatalf("resolve: %+v, %v", resolved, err)
			}
			var dup manifest.Line
			for _, l := range j.lines(workdir.NumberedFile) {
				if l.IsDuplicate() {
					dup = l
				}
			}
			if dup.File != "b.warc" || dup.Copy != 2 {
				t.Fatalf("numbered: the duplicate is %+v, want b.warc as copy 2", dup)
			}
			j.sortFile(workdir.NumberedFile, workdir.ByFileFile, manifest.ByFile.Command)
			j.sortFile(workdir.FactsFile, workdir.FactsByFile, manifest.ByFile.Command)

			// 4. rewrite
			table, err := manifest.OpenTable(j.file(workdir.NumberedFile))
			if err != nil {
				t.Fatal(err)
			}
			defer table.Close()
			loc := &source.Locator{Roots: []string{j.coll}}
			before, _ := os.Stat(filepath.Join(j.coll, "b.warc"))
			rewrote, err := (&Rewrite{In: j.reader(workdir.ByFileFile), Originals: []*manifest.Table{table}, Open: loc, Roots: loc.Roots,
				Log: j.file(workdir.LogFile), DryRun: tt.dry, Jobs: 2, Cache: j.file(workdir.CacheDir), Algorithm: digest.SHA1,
				Saved: j.file(workdir.SavedFile), Messages: j.msgs, Meter: progress.Discard}).Run(ctx)
			if err != nil || rewrote.Stats.Revisits != 1 {
				t.Fatalf("rewrite: %+v, %v", rewrote, err)
			}
			saved, err := OpenSaved(j.file(workdir.SavedFile))
			if err != nil {
				t.Fatal(err)
			}
			revisit, err := saved.Find(dup.File, dup.Offset)
			saved.Close()
			if err != nil || revisit <= 0 || revisit >= dup.Length {
				t.Fatalf("saved.tsv: revisit of %d bytes (%v) for a record of %d", revisit, err, dup.Length)
			}
			after, _ := os.Stat(filepath.Join(j.coll, "b.warc"))
			if shrunk := after.Size() < before.Size(); shrunk == tt.dry {
				t.Fatalf("b.warc: %d bytes before, %d after (dry run %v)", before.Size(), after.Size(), tt.dry)
			}

			if !tt.dry {
				// 5. hash again, verify
				again := j.hash(workdir.AfterFile, "")
				if again.Stats.Read() != 0 || rewrote.Derived != 1 {
					t.Errorf("hash again read %d files; the rewrite derived %d listings", again.Stats.Read(), rewrote.Derived)
				}
				var revisits int
				for _, l := range j.lines(workdir.AfterFile) {
					if l.IsRevisit() && l.File == "b.warc" {
						revisits++
					}
				}
				if revisits != 1 {
					t.Fatalf("after.manifest lists %d revisits in b.warc, want 1", revisits)
				}
				st, err := (&Verify{Before: j.reader(workdir.BeforeFile), After: j.reader(workdir.AfterFile), Violations: j.file(workdir.Violations),
					Total: hashed.Stats.Listed, Messages: j.msgs, Meter: progress.Discard}).Run(ctx)
				if err != nil || st.Violations != 0 || st.Revisits != 1 {
					t.Fatalf("verify: %+v, %v", st, err)
				}
			}

			// account
			rep := &report.Report{}
			a := Account{ByFile: j.file(workdir.ByFileFile), FactsByFile: j.file(workdir.FactsByFile), Saved: j.file(workdir.SavedFile),
				Numbered: j.file(workdir.NumberedFile), Deps: j.file(workdir.DepsFile), Sorter: j.sort, DryRun: tt.dry,
				Hashed: hashed, Resolved: resolved, Rewrote: rewrote, FilesReplaced: 1, Report: rep}
			if err := a.Run(ctx); err != nil {
				t.Fatal(err)
			}
			tot := rep.Totals
			if tot.Duplicates != 1 || tot.RevisitsWritten != 1 || tot.BytesSaved != dup.Length-revisit || tot.FilesRewritten != 1 {
				t.Errorf("totals %+v", tot)
			}
			deps, _ := os.ReadFile(j.file(workdir.DepsFile))
			if !strings.Contains(string(deps), "b.warc a.warc 1\n") {
				t.Errorf("deps.tsv:\n%s", deps)
			}
			if len(j.msgs.errors) > 0 {
				t.Errorf("errors: %v", j.msgs.errors)
			}
		})
	}
}

// TestSavedReader proves how saved.tsv is read: line by line, joined with
// a manifest in file order, and a damaged line named with its number.
func TestSavedReader(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "saved.tsv")
	os.WriteFile(name, []byte("a.warc 10 500 120\na.warc 900 400 110\nb.warc 5 300 100\n"), 0o644)
	s, err := OpenSaved(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		file   string
		offset int64
		want   int64
	}{{"a.warc", 0, -1}, {"a.warc", 10, 120}, {"a.warc", 500, -1}, {"b.warc", 5, 100}, {"c.warc", 0, -1}} {
		if got, err := s.Find(tt.file, tt.offset); got != tt.want || err != nil {
			t.Errorf("Find(%s, %d) = %d, %v; want %d", tt.file, tt.offset, got, err, tt.want)
		}
	}
	s.Close()

	s, _ = OpenSaved(name)
	var n int
	for {
		sv, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil || sv.File == "" || sv.RevisitLength <= 0 {
			t.Fatalf("line %d: %+v, %v", n+1, sv, err)
		}
		n++
	}
	s.Close()
	if n != 3 {
		t.Errorf("%d lines, want 3", n)
	}

	os.WriteFile(name, []byte("a.warc 10 500 120\na.warc x\n"), 0o644)
	s, _ = OpenSaved(name)
	defer s.Close()
	if _, err := s.Find("b.warc", 0); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("damaged line: error %v, want one naming line 2", err)
	}
}

// TestFileSums proves the commit's list of a crawl's files: written as
// the hash again reads them (a name with a blank, a file gone, a stamp
// with blanks) and read back, and a list of an earlier warcdedup run
// ("NAME SHA256") read as the SHA-256 alone.
func TestFileSums(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a b.warc")
	os.WriteFile(name, []byte("0123456789"), 0o644)
	var sums FileSums
	sums.Add(warcsum.Input{Name: "feb/a b.warc", Path: name, Size: 3}, "abc")
	sums.Add(warcsum.Input{Name: "feb/gone.warc", Path: filepath.Join(dir, "gone"), Size: 5}, "")
	list := filepath.Join(dir, "after-files.tsv")
	if err := sums.Write(list); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFileSums(list)
	fi, _ := os.Stat(name)
	want := []FileSum{{File: "feb/a b.warc", Size: 10, SHA256: "abc", Stamp: crawlindex.Stamp(fi)}, {File: "feb/gone.warc", Size: 5}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("read %+v, %v\nwant %+v", got, err, want)
	}
	os.WriteFile(list, []byte("feb/a%20b.warc abc\n"), 0o644)
	got, err = ReadFileSums(list)
	if want := []FileSum{{File: "feb/a b.warc", Size: -1, SHA256: "abc"}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("earlier form: read %+v, %v, want %+v", got, err, want)
	}
	os.WriteFile(list, []byte("one two three\n"), 0o644)
	if _, err := ReadFileSums(list); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Errorf("damaged list: %v, want an error naming line 1", err)
	}
}
