package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"warcdedup/internal/gzfile"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// TestConsumedRemoved runs a dry run, then the real run that resumes it,
// then a rerun, and checks after each which intermediate work files are
// left: the manifest by digest goes once the resolution is done (and the
// real run does not sort again what it sorted); the numbered manifest,
// the ones by file, the manifest after (its lines are in the hash cache),
// the listing before, the facts and the revisits written (saved.tsv) once
// the job is complete; and a rerun of the complete job has nothing to do
// without them. With --keep-work every one stays, the listings gzip.
func TestConsumedRemoved(t *testing.T) {
	dir, _ := generated(t, genCfg)
	all := []string{workdir.ByDigestFile, workdir.NumberedFile, workdir.ByFileFile, workdir.FactsByFile, workdir.AfterFile,
		workdir.BeforeFile, workdir.FactsFile, workdir.SavedFile}
	// What a dry run keeps for the run that follows it: all but the
	// manifest by digest (consumed by the resolution) and the manifest
	// after (it rewrites nothing).
	dry := []string{workdir.NumberedFile, workdir.ByFileFile, workdir.FactsByFile, workdir.BeforeFile, workdir.FactsFile, workdir.SavedFile}
	kept := []string{workdir.LogFile, workdir.FixityFile, workdir.DepsFile, workdir.StatsFile, workdir.HashedFiles}
	for _, tc := range []struct {
		name                string
		keepWork            bool
		afterDry, afterReal []string // the intermediates left
	}{
		{"removed once consumed", false, dry, nil},
		{"--keep-work keeps them", true, slices.Concat([]string{workdir.ByDigestFile}, dry), all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coll := filepath.Join(t.TempDir(), "coll")
			copyTree(t, dir, coll)
			wd := filepath.Join(t.TempDir(), "work")
			left := func(when string, want []string) {
				t.Helper()
				for _, f := range all {
					_, err := os.Stat(filepath.Join(wd, f))
					if has := err == nil; has != slices.Contains(want, f) {
						t.Errorf("%s: %s there: %v, want %v", when, f, has, !has)
					}
				}
			}
			opt := Options{Collections: []string{coll}, WorkDir: wd, Jobs: 2, KeepWork: tc.keepWork, DryRun: true}
			if r, err := Run(context.Background(), opt); err != nil || r.Report.Exit != 0 {
				t.Fatalf("dry run: %v", err)
			}
			left("after the dry run", tc.afterDry)
			opt.DryRun = false
			r, err := Run(context.Background(), opt)
			if err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v %v", err, r.Report.ExitReason)
			}
			for _, s := range r.Report.Stages {
				skip := s.Name == stage.HashName || s.Name == stage.SortByDigestName || s.Name == stage.ResolveName || s.Name == stage.SortByFileName
				if skip != s.Skipped {
					t.Errorf("the run after the dry run: stage %q skipped %v, want %v", s.Name, s.Skipped, skip)
				}
			}
			if r.Report.Totals.RevisitsWritten == 0 {
				t.Error("the run wrote no revisit")
			}
			left("after the run", tc.afterReal)
			for _, f := range kept {
				if _, err := os.Stat(filepath.Join(wd, f)); err != nil {
					t.Errorf("after the run: %v", err)
				}
			}
			if tc.keepWork {
				for _, f := range []string{workdir.BeforeFile, workdir.FactsFile, workdir.AfterFile} {
					if data, _ := os.ReadFile(filepath.Join(wd, f)); !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
						t.Errorf("after the run: %s is not kept gzip-compressed", f)
					}
				}
			}
			r, err = Run(context.Background(), opt)
			if err != nil || !r.NothingToDo {
				t.Fatalf("the rerun: %v, nothing to do %v", err, r != nil && r.NothingToDo)
			}
		})
	}
}

// TestReadersWithoutIntermediates proves that what reads a work
// directory after a job works once the job's listings are gone
// (before.manifest, facts.manifest, saved.tsv, after.manifest and the
// numbered ones): warcdedup show of a revisit the job wrote (its log
// entry, its original, what undo gives back), warcdedup check of every
// revisit through the index the run updated, the next run on the
// collection with a file added (the hash cache gives the files it has,
// only the new one is read, and its revisits are written), and undo
// --cdx, which gives back every file as it was before the first run and
// the index's every record where it was.
func TestReadersWithoutIntermediates(t *testing.T) {
	orig, _ := generated(t, genCfg)
	dir := filepath.Join(t.TempDir(), "coll")
	copyTree(t, orig, dir)
	before := hashUncompressed(t, dir)
	index := filepath.Join(t.TempDir(), "index.cdxj")
	writeCDXJ(t, index, listing(t, dir))
	indexBefore := cdxPlaces(t, index)
	wd := filepath.Join(t.TempDir(), "work")
	gone := []string{workdir.BeforeFile, workdir.FactsFile, workdir.SavedFile, workdir.AfterFile, workdir.NumberedFile, workdir.ByFileFile, workdir.FactsByFile}
	noneLeft := func(when string) {
		t.Helper()
		for _, f := range gone {
			if _, err := os.Stat(filepath.Join(wd, f)); err == nil {
				t.Errorf("%s: %s is still there", when, f)
			}
		}
	}
	opt := Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, CDX: []string{index}}
	r, err := Run(context.Background(), opt)
	if err != nil || r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten == 0 {
		t.Fatalf("run: %v %v, %d revisits written", err, r.Report.ExitReason, r.Report.Totals.RevisitsWritten)
	}
	noneLeft("after the run")

	// show: a revisit the run wrote, found in the log.
	var rev *rewritelog.Entry
	f, err := os.Open(filepath.Join(wd, workdir.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	lr := rewritelog.NewReader(f, workdir.LogFile)
	for rev == nil {
		e, err := lr.Next()
		if err != nil {
			t.Fatalf("no revisit in the log: %v", err)
		}
		if e.Kind == rewritelog.Revisit {
			rev = e
		}
	}
	f.Close()
	target := filepath.Join(dir, filepath.FromSlash(rev.File)) + ":" + strconv.FormatInt(rev.NewOffset, 10)
	out, err := exec.Command(binPath, "show", "--json", "--work-dir", wd, target).Output()
	// (package show's Record, which imports this package: its fields
	// read here by their JSON names.)
	var shown struct {
		Revisit *struct {
			Written  json.RawMessage `json:"written"`
			Original json.RawMessage `json:"original"`
			Resolves bool            `json:"resolves"`
			Undo     json.RawMessage `json:"undo"`
		} `json:"revisit"`
	}
	if err != nil || json.Unmarshal(out, &shown) != nil {
		t.Fatalf("show %s: %v\n%s", target, err, out)
	}
	if v := shown.Revisit; v == nil || v.Written == nil || !v.Resolves || v.Original == nil || v.Undo == nil {
		t.Errorf("show %s: its log entry, original, resolution or undo missing:\n%s", target, out)
	}

	// check: every revisit in place, through the index.
	if out, err := exec.Command(binPath, "check", "-q", "--sample", "0", "--cdx", index, "--work-dir", wd, dir).CombinedOutput(); err != nil {
		t.Errorf("check: %v\n%s", err, out)
	}

	// The next run: a file added (a payload captured twice), the others
	// known from the cache.
	added := "added.warc"
	body := strings.Repeat("a new page ", 500)
	warctest.WriteFile(t, dir, added, []byte(warctest.Response("http://example.com/new", "2030-01-01T00:00:00Z", body)+
		warctest.Response("http://example.com/new", "2030-02-01T00:00:00Z", body)))
	before[added] = hashUncompressed(t, dir)[added]
	r, err = Run(context.Background(), opt)
	if err != nil || r.Report.Exit != 0 || r.NothingToDo || r.Report.Totals.RevisitsWritten != 1 {
		t.Fatalf("the next run: %v %v, nothing to do %v, %d revisits written", err, r.Report.ExitReason, r.NothingToDo, r.Report.Totals.RevisitsWritten)
	}
	if s := r.Report.Stages[0]; s.Name != stage.HashName || !strings.Contains(s.Note, fmt.Sprintf("%d files known unchanged", len(before)-1)) {
		t.Errorf("the next run's hash stage did not take the files it had from the cache: %+v", s)
	}
	noneLeft("after the next run")

	// undo --cdx: every file and every index line back.
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 2, CDX: []string{index}})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo --cdx: %v, %+v", err, u)
	}
	sameTree(t, "after undo --cdx (uncompressed)", hashUncompressed(t, dir), before)
	if got := cdxPlaces(t, index); !slices.Equal(got, indexBefore) {
		t.Errorf("the index after undo --cdx: %d lines, before the run %d; first difference %q", len(got), len(indexBefore), firstDiff(got, indexBefore))
	}
}

// TestCrawlIntermediatesRemoved runs three monthly crawls one after
// another against a crawl index and checks what each crawl's work
// directory keeps: the index's originals joined go with the join once
// the resolution is done, the committed originals the resolution kept
// and the crawl's originals the commit took go with the job, with the
// listings; each later crawl still finds the earlier ones' originals in
// the index and writes its revisits, and a rerun of a committed crawl has
// nothing to do. With --keep-work they stay.
func TestCrawlIntermediatesRemoved(t *testing.T) {
	crawlFiles := []string{workdir.IndexOriginalsFile, workdir.JoinedFile, workdir.ResolvedOriginalsFile,
		workdir.CrawlOriginalsFile, workdir.CrawlOriginalsByDigest, workdir.BeforeFile, workdir.SavedFile, workdir.FactsFile}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep-work %v", keep), func(t *testing.T) {
			top := t.TempDir()
			crawls := filepath.Join(top, "crawls")
			monthly(t, crawls)
			index := filepath.Join(top, "index")
			var written int64
			for i := range 3 {
				name := fmt.Sprintf("crawl-%d", i)
				opt := Options{Collections: []string{filepath.Join(crawls, name)}, Index: index, Jobs: 2, KeepWork: keep}
				r, err := Run(context.Background(), opt)
				if err != nil || r.Report.Exit != 0 || r.Report.Totals.Violations != 0 {
					t.Fatalf("%s: %v %v", name, err, r.Report.ExitReason)
				}
				written += r.Report.Totals.RevisitsWritten
				wd := filepath.Join(index, "work", name)
				for _, f := range crawlFiles {
					_, err := os.Stat(filepath.Join(wd, f))
					if has := err == nil; has != keep {
						t.Errorf("%s: %s there: %v, want %v", name, f, has, keep)
					}
				}
				if again, err := Run(context.Background(), opt); err != nil || !again.NothingToDo {
					t.Errorf("%s: the rerun of the committed crawl: %v, nothing to do %v", name, err, again != nil && again.NothingToDo)
				}
			}
			if written == 0 {
				t.Error("no crawl wrote a revisit")
			}
		})
	}
}

// writeCDXJ writes a CDXJ index of the records a manifest lists, sorted.
func writeCDXJ(t *testing.T, name string, m []byte) {
	t.Helper()
	var lines []string
	r := manifest.NewReader(bytes.NewReader(m), "listing")
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		file, _ := manifest.UnescapeFile(l.File)
		date := strings.Map(func(c rune) rune {
			if c < '0' || c > '9' {
				return -1
			}
			return c
		}, l.Date)
		fields, _ := json.Marshal(map[string]string{"url": l.URI, "mime": "text/html", "status": "200", "digest": l.Digest,
			"length": strconv.FormatInt(l.Length, 10), "offset": strconv.FormatInt(l.Offset, 10), "filename": file})
		lines = append(lines, "x "+date+" "+string(fields))
	}
	slices.Sort(lines)
	if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cdxPlaces reads a CDXJ index as each line's date, file, offset, length
// and digest (its label left out), sorted: what an undo gives back (the
// media type it reads from the record, where the index above says
// text/html of all).
func cdxPlaces(t *testing.T, name string) []string {
	t.Helper()
	var places []string
	for _, l := range readLines(t, name) {
		f := strings.SplitN(l, " ", 3)
		var m map[string]any
		if len(f) != 3 || json.Unmarshal([]byte(f[2]), &m) != nil {
			t.Fatalf("%s: line %q", name, l)
		}
		field := func(k string) string { return fmt.Sprint(m[k]) }
		places = append(places, strings.Join([]string{f[1], field("filename"), field("offset"), field("length"), strings.TrimPrefix(field("digest"), "sha1:")}, " "))
	}
	slices.Sort(places)
	return places
}

// firstDiff is the first line where two lists differ.
func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " / " + b[i]
		}
	}
	return "(one is longer)"
}

// readKept reads a work file kept compressed, in either form.
func readKept(t *testing.T, name string) []byte {
	t.Helper()
	r, err := gzfile.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPlainManifestsOfAnOlderRun resumes, with a real run, a dry run whose
// manifests were left plain, as an earlier warcdedup wrote them: the
// verification reads the plain before-manifest, and the job completes.
func TestPlainManifestsOfAnOlderRun(t *testing.T) {
	dir, _ := generated(t, genCfg)
	wd := filepath.Join(t.TempDir(), "work")
	opt := Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, DryRun: true}
	if r, err := Run(context.Background(), opt); err != nil || r.Report.Exit != 0 {
		t.Fatalf("dry run: %v", err)
	}
	for _, f := range []string{workdir.BeforeFile, workdir.FactsFile} {
		name := filepath.Join(wd, f)
		if err := os.WriteFile(name, readKept(t, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opt.DryRun = false
	r, err := Run(context.Background(), opt)
	if err != nil || r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten == 0 {
		t.Fatalf("run: %v %v, %d revisits written", err, r.Report.ExitReason, r.Report.Totals.RevisitsWritten)
	}
	if r.Report.Stages[0].Name != stage.HashName || !r.Report.Stages[0].Skipped {
		t.Fatalf("the run hashed again: %+v", r.Report.Stages[0])
	}
}

// TestRemovalFinishedByRerun proves that a run killed after state.json
// recorded the complete job's intermediates removed and before it
// removed them (the files put back here, as the kill leaves them) does
// not leave them for ever: the rerun, which has nothing to do, removes
// them, on a collection and on a committed crawl; and that a job run
// with --keep-work, whose state records none of them, keeps them through
// a plain rerun.
func TestRemovalFinishedByRerun(t *testing.T) {
	orig, _ := generated(t, genCfg)
	left := []string{workdir.BeforeFile, workdir.FactsFile, workdir.SavedFile, workdir.AfterFile, workdir.NumberedFile, workdir.ByFileFile}
	crawlLeft := append([]string{workdir.CrawlOriginalsFile, workdir.CrawlOriginalsByDigest, workdir.ResolvedOriginalsFile}, left...)
	for _, tc := range []struct {
		name     string
		crawl    bool
		keepWork bool // the job's run; the rerun is a plain one
		files    []string
		gone     bool // after the rerun
	}{
		{"collection, killed before the removal", false, false, left, true},
		{"crawl, killed before the removal", true, false, crawlLeft, true},
		{"collection, --keep-work", false, true, left, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			opt := Options{Jobs: 2, KeepWork: tc.keepWork}
			var wd string
			if tc.crawl {
				crawls := filepath.Join(top, "crawls")
				monthly(t, crawls)
				opt.Collections, opt.Index = []string{filepath.Join(crawls, "crawl-0")}, filepath.Join(top, "index")
				wd = filepath.Join(opt.Index, "work", "crawl-0")
			} else {
				coll := filepath.Join(top, "coll")
				copyTree(t, orig, coll)
				wd = filepath.Join(top, "work")
				opt.Collections, opt.WorkDir = []string{coll}, wd
			}
			if r, err := Run(context.Background(), opt); err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v", err)
			}
			if !tc.keepWork {
				st, err := readStateFile(filepath.Join(wd, workdir.StateFile))
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range tc.files {
					if !slices.Contains(st.Removed, f) {
						t.Errorf("state.json does not record %s removed", f)
					}
					if err := os.WriteFile(filepath.Join(wd, f), []byte("left by a kill\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			opt.KeepWork = false
			r, err := Run(context.Background(), opt)
			if err != nil || !r.NothingToDo {
				t.Fatalf("the rerun: %v, nothing to do %v", err, r != nil && r.NothingToDo)
			}
			for _, f := range tc.files {
				_, err := os.Stat(filepath.Join(wd, f))
				if gone := err != nil; gone != tc.gone {
					t.Errorf("after the rerun: %s gone %v, want %v", f, gone, tc.gone)
				}
			}
		})
	}
}

// TestCrawlKilledAfterCommitCompletes proves that a crawl run killed
// after its commit stage was recorded done and before state.json said
// the job complete (the state put back here as the kill leaves it) is
// completed by the rerun: its account is done again (it may have been
// the one that could not bring the records up to date), the job
// recorded complete, and its intermediates removed, rather than each
// rerun saying there is nothing to do and leaving them for ever; the
// rerun after it has nothing to do.
func TestCrawlKilledAfterCommitCompletes(t *testing.T) {
	top := t.TempDir()
	crawls := filepath.Join(top, "crawls")
	monthly(t, crawls)
	opt := Options{Collections: []string{filepath.Join(crawls, "crawl-0")}, Index: filepath.Join(top, "index"), Jobs: 2, KeepWork: true}
	wd := filepath.Join(opt.Index, "work", "crawl-0")
	if r, err := Run(context.Background(), opt); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	st, err := readStateFile(filepath.Join(wd, workdir.StateFile))
	if err != nil || !st.Complete || !st.done(stage.CommitName) {
		t.Fatalf("state after the run: %v %+v", err, st)
	}
	st.Complete, st.Stamps = false, nil // killed after the commit stage
	w, err := workdir.Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	err = writeState(w, st)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	opt.KeepWork = false
	r, err := Run(context.Background(), opt)
	if err != nil || r.NothingToDo || r.Report.Exit != 0 {
		t.Fatalf("the rerun: %v, nothing to do %v", err, r != nil && r.NothingToDo)
	}
	if st, err = readStateFile(filepath.Join(wd, workdir.StateFile)); err != nil || !st.Complete {
		t.Errorf("after the rerun the job is not complete: %v", err)
	}
	for _, f := range []string{workdir.BeforeFile, workdir.SavedFile, workdir.AfterFile, workdir.CrawlOriginalsByDigest, workdir.ResolvedOriginalsFile} {
		if _, err := os.Stat(filepath.Join(wd, f)); err == nil {
			t.Errorf("after the rerun: %s is still there", f)
		}
	}
	if r, err := Run(context.Background(), opt); err != nil || !r.NothingToDo {
		t.Errorf("the run after: %v, nothing to do %v", err, r != nil && r.NothingToDo)
	}
}
