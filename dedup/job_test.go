package dedup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
	"warcdedup/internal/progress"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/stage"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// generated writes a generated collection into a new directory.
func generated(t *testing.T, cfg gen.Config) (string, *gen.Result) {
	t.Helper()
	return jobtest.Generated(t, cfg)
}

var genCfg = jobtest.GenCfg

// fixitySum is the log's fixity sum of data, as hashTree gives it.
func fixitySum(data []byte) string { return jobtest.FixitySum(data) }

// hashTree returns the fixity sum (the log's algorithm) of every file under dir by relative path.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	return jobtest.HashTree(t, dir)
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	jobtest.CopyTree(t, src, dst)
}

// TestRun runs the job on a generated collection and checks what it
// reports and keeps against the collection and the files: the duplicates
// the generator planned, the revisits written, nothing lost, the fixity
// list giving every replaced file's SHA-256 before and after, the
// dependencies, and that a rerun has nothing to do and changes nothing.
func TestRun(t *testing.T) {
	dir, res := generated(t, genCfg)
	before := hashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report
	tot := rep.Totals
	if rep.Exit != 0 || tot.Violations != 0 || tot.FilesRefused != 0 {
		t.Fatalf("exit %d %v, totals %+v", rep.Exit, rep.ExitReason, tot)
	}
	if tot.Duplicates != int64(res.Duplicates) || tot.Records != int64(res.Listed-res.Revisits) || tot.Revisits != int64(res.Revisits) {
		t.Errorf("totals %+v; the generator has %d listed, %d revisits, %d duplicates", tot, res.Listed, res.Revisits, res.Duplicates)
	}
	var arcDups int64
	for _, l := range res.Expected {
		if f := strings.ToLower(l.File); l.IsDuplicate() && (strings.HasSuffix(f, ".arc") || strings.HasSuffix(f, ".arc.gz")) {
			arcDups++
		}
	}
	if tot.RevisitsWritten < (tot.Duplicates-arcDups)*8/10 || tot.BytesSaved <= 0 {
		t.Errorf("%d revisits written, %d bytes saved, of %d duplicates in WARC files", tot.RevisitsWritten, tot.BytesSaved, tot.Duplicates-arcDups)
	}
	after := hashTree(t, dir)

	// The rewritten files were listed from the records written, not read
	// again, and the listing is the one reading them gives.
	for _, s := range rep.Stages {
		if s.Name == stage.HashAgainName && !strings.HasPrefix(s.Note, "0 files read again") {
			t.Errorf("hash again: %s", s.Note)
		}
	}
	afterInCache(t, wd, dir)

	// The fixity list: every changed file, with its sums before and after.
	fixity := readLines(t, filepath.Join(wd, workdir.FixityFile))
	changed := 0
	for name, sum := range after {
		if sum != before[name] {
			changed++
			want := fmt.Sprintf("\t%s\t", before[name])
			found := false
			for _, l := range fixity {
				if strings.HasPrefix(l, manifest.EscapeFile(name)+"\t") && strings.Contains(l, want) && strings.HasSuffix(l, "\t"+sum) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s changed but fixity.tsv has no line with its sums:\n%s", name, strings.Join(fixity, "\n"))
			}
		}
	}
	if changed == 0 || int64(changed) != tot.FilesRewritten || len(fixity) != changed+1 {
		t.Errorf("%d files changed, %d rewritten, fixity.tsv has %d lines", changed, tot.FilesRewritten, len(fixity))
	}
	// The dependencies: the run's own, as many revisits as it wrote; the
	// collection's, every revisit in it now (those it had too).
	if deps, _ := depsCount(t, filepath.Join(wd, r.RunDir, workdir.DepsFile)); deps != tot.RevisitsWritten {
		t.Errorf("the run's deps.tsv counts %d revisits, %d were written", deps, tot.RevisitsWritten)
	}
	if deps, unresolved := depsCount(t, filepath.Join(wd, workdir.DepsFile)); deps+unresolved != tot.RevisitsWritten+tot.Revisits || deps < tot.RevisitsWritten {
		t.Errorf("deps.tsv counts %d revisits and %d that refer to nothing; %d were written, %d were there", deps, unresolved, tot.RevisitsWritten, tot.Revisits)
	}
	if len(rep.ByMIME) == 0 || len(rep.ByHost) == 0 || len(rep.ByMonth) == 0 || len(rep.BySize) == 0 || len(rep.LargestClasses) == 0 {
		t.Errorf("a breakdown is empty: %d MIME, %d host, %d month, %d size, %d classes", len(rep.ByMIME), len(rep.ByHost), len(rep.ByMonth), len(rep.BySize), len(rep.LargestClasses))
	}
	var saved int64
	for _, b := range rep.ByMIME {
		saved += b.BytesSaved
	}
	if saved != tot.BytesSaved {
		t.Errorf("the MIME breakdown saves %d bytes, the total is %d", saved, tot.BytesSaved)
	}

	// The page and the figures kept: the same report.
	page, err := os.ReadFile(filepath.Join(wd, workdir.ReportFile))
	if err != nil || !bytes.Contains(page, []byte("<svg")) || !bytes.Contains(page, []byte(html.EscapeString(rep.Title))) {
		t.Errorf("report.html (%v) has no chart or not the title %q", err, rep.Title)
	}
	kept, err := stage.ReadReport(filepath.Join(wd, workdir.StatsFile))
	if err != nil || kept.Totals != tot {
		t.Errorf("stats.json (%v) holds totals %+v, the run %+v", err, kept.Totals, tot)
	}

	// Again: nothing to do, nothing touched. (How fast that is, is
	// measured by scripts/bench-run.sh, not here.)
	r2, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !r2.NothingToDo {
		t.Errorf("rerun: not nothing to do")
	}
	sameTree(t, "after a rerun", hashTree(t, dir), after)
}

// depsCount reads a deps.tsv: the revisits it counts, and those it says
// refer to nothing.
func depsCount(t *testing.T, name string) (deps, unresolved int64) {
	t.Helper()
	for _, l := range readLines(t, name)[1:] {
		var a, b string
		var n int64
		if strings.HasPrefix(l, "# ") {
			fmt.Sscan(strings.TrimPrefix(l, "# "), &unresolved)
			continue
		}
		fmt.Sscan(l, &a, &b, &n)
		deps += n
	}
	return deps, unresolved
}

// listing is the manifest warcsum gives of the files under dir, read now.
func listing(t *testing.T, dir string) []byte {
	t.Helper()
	inputs, err := warcsum.Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := (&warcsum.Runner{Jobs: 2}).Run(inputs, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// afterInCache checks what a complete job leaves of the manifest after:
// after.manifest removed, its lines in the hash cache only, where a
// listing of the collection takes them without reading a file, and
// they are what reading the files gives.
func afterInCache(t *testing.T, wd, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(wd, workdir.AfterFile)); err == nil {
		t.Errorf("the job complete, %s is still there: its lines are kept twice", workdir.AfterFile)
	}
	inputs, err := warcsum.Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	derived := filepath.Join(t.TempDir(), "after.manifest")
	h := stage.Hash{Inputs: inputs, Jobs: 2, Cache: filepath.Join(wd, workdir.CacheDir), Manifest: derived, Messages: silent{}, Meter: progress.Discard}
	res, err := h.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Read() != 0 {
		t.Errorf("the manifest after derived from the cache: %s", res.AgainNote())
	}
	if listed := readKept(t, derived); !bytes.Equal(listed, listing(t, dir)) {
		t.Errorf("the manifest after (from the cache) differs from what reading the files gives")
	}
}

// silent takes a stage's messages and says nothing.
type silent struct{}

func (silent) Error(error)         {}
func (silent) Warn(error)          {}
func (silent) Note(string, ...any) {}

// readLines reads the lines of a file, gzip-compressed (as the run keeps
// its manifests) or plain.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	data := readKept(t, name)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	jobtest.SameTree(t, what, got, want)
}

// TestDryRunEqualsRun proves that a dry run changes nothing and says it
// would write and save exactly what the real run then writes and saves,
// and that the real run reuses the dry run's hashing and resolution.
func TestDryRunEqualsRun(t *testing.T) {
	dir, _ := generated(t, genCfg)
	before := hashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	dry, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after a dry run", hashTree(t, dir), before)
	var summary bytes.Buffer
	stage.Summary(&summary, dry)
	if !strings.Contains(summary.String(), "would be rewritten") || !strings.Contains(summary.String(), "would be saved") || strings.Contains(summary.String(), "\nrewritten") {
		t.Errorf("a dry run's summary must say would:\n%s", summary.String())
	}
	real, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	d, r := dry.Report.Totals, real.Report.Totals
	if d.RevisitsWritten != r.RevisitsWritten || d.BytesSaved != r.BytesSaved || d.FilesRewritten != r.FilesRewritten || r.RevisitsWritten == 0 {
		t.Errorf("dry run %+v, real run %+v", d, r)
	}
	for _, s := range real.Report.Stages[:4] {
		if !s.Skipped {
			t.Errorf("the real run redid stage %q of the dry run", s.Name)
		}
	}
}

var binPath string

// TestMain builds the command for the kill test.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dedup-test-bin-")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "warcdedup")
	if out, err := exec.Command("go", "build", "-o", binPath, "warcdedup/cmd/warcdedup").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestKillAndResume kills warcdedup run (SIGKILL) at instants spread over
// a whole job, every stage included, then runs the same command again:
// it must finish, with every file byte for byte what an uninterrupted job
// gives, nothing lost, each replaced file logged once, and no temporary
// file left in the collection, the work directory (its own files, cache
// and sort's) or $TMPDIR.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills warcdedup many times")
	}
	cfg := genCfg
	cfg.Files, cfg.Records, cfg.MeanPayload = 6, 1200, 12<<10
	src, _ := generated(t, cfg)
	tmp := t.TempDir()
	run := func(coll, wd string) *exec.Cmd {
		cmd := exec.Command(binPath, "run", "-q", "-j", "2", "--work-dir", wd, coll)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		return cmd
	}
	// The job uninterrupted, and how long it takes.
	ref := filepath.Join(t.TempDir(), "ref")
	copyTree(t, src, ref)
	start := time.Now()
	if out, err := run(ref, ref+".work").CombinedOutput(); err != nil {
		t.Fatalf("warcdedup: %v\n%s", err, out)
	}
	full := time.Since(start)
	want := hashTree(t, ref)
	wantLogged := loggedFiles(t, filepath.Join(ref+".work", workdir.LogFile))
	rng := rand.New(rand.NewPCG(1, 2))
	const kills = 12
	for i := range kills {
		coll := filepath.Join(t.TempDir(), "coll")
		copyTree(t, src, coll)
		wd := coll + ".work"
		delay := time.Duration(rng.Int64N(int64(full)))
		if i == 0 {
			delay = 10 * time.Millisecond
		}
		cmd := run(coll, wd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		state, _ := os.ReadFile(filepath.Join(wd, workdir.StateFile))
		if out, err := run(coll, wd).CombinedOutput(); err != nil {
			t.Fatalf("kill %d after %v: the resumed run: %v\n%s", i, delay, err, out)
		}
		sameTree(t, fmt.Sprintf("kill %d after %v, resumed", i, delay), hashTree(t, coll), want)
		checkLoggedAs(t, filepath.Join(wd, workdir.LogFile), wantLogged)
		for _, d := range []string{coll, wd, filepath.Join(wd, workdir.CacheDir), filepath.Join(wd, workdir.TmpDir), tmp} {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), atomicfile.TempPrefix) || d == tmp || d == filepath.Join(wd, workdir.TmpDir) {
					t.Errorf("kill %d: %s left in %s", i, e.Name(), d)
				}
			}
		}
		if t.Failed() {
			t.Logf("state at the kill: %s", state)
			break
		}
	}
}

// checkLoggedAs checks that the rewrite log lists each replaced file as
// many times as an uninterrupted job's (want): once, or twice for a file
// the collisions stages rewrote again; never a replacement repeated by
// a resumed run.
func checkLoggedAs(t *testing.T, name string, want map[string]int) {
	t.Helper()
	seen := loggedFiles(t, name)
	for file, n := range seen {
		if n != want[file] {
			t.Errorf("%s: %s logged %d times, by the uninterrupted job %d", name, file, n, want[file])
		}
	}
	for file, n := range want {
		if seen[file] == 0 {
			t.Errorf("%s: %s not logged, by the uninterrupted job %d times", name, file, n)
		}
	}
}

// loggedFiles counts the replacements of each file the rewrite log lists.
func loggedFiles(t *testing.T, name string) map[string]int {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]int{}
	r := rewritelog.NewReader(bufio.NewReader(f), name)
	r.Fixity = func(fx rewritelog.Fixity) error { seen[fx.File]++; return nil }
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return seen
}

// TestNextCrawl runs a second job on a collection the first one
// deduplicated, after a new crawl was added: an original stands in a file
// the first job shortened, after a record it rewrote. The second job's
// manifest gives the offset the file has now, which the first job's log
// entries must not move again.
func TestNextCrawl(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	logo, page := strings.Repeat("logo ", 2000), strings.Repeat("page ", 2000)
	warctest.WriteFile(t, dir, "2024-01.warc", []byte(
		warctest.Response("http://example.com/logo.png", "2024-01-01T00:00:00Z", logo)+
			warctest.Response("http://example.com/logo.png", "2024-01-02T00:00:00Z", logo)+
			warctest.Response("http://example.com/page.html", "2024-01-03T00:00:00Z", page)))
	wd := filepath.Join(t.TempDir(), "work")
	run := func(wantRevisits int64) {
		t.Helper()
		r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		if tot := r.Report.Totals; r.Report.Exit != 0 || tot.FilesRefused != 0 || tot.RevisitsWritten != wantRevisits {
			t.Fatalf("exit %d %v; %d files refused, %d revisits written, want %d", r.Report.Exit, r.Report.ExitReason, tot.FilesRefused, tot.RevisitsWritten, wantRevisits)
		}
	}
	run(1)
	warctest.WriteFile(t, dir, "2024-02.warc", []byte(warctest.Response("http://example.com/page.html", "2024-02-01T00:00:00Z", page)))
	run(1)
}

// hashUncompressed returns the SHA-256 of every file under dir by relative
// path, of its bytes decompressed if it is gzip.
func hashUncompressed(t *testing.T, dir string) map[string]string {
	return jobtest.HashUncompressed(t, dir)
}

// monthly writes a generated collection of three crawls a day apart, each
// in a directory of its own under dir (crawl-0, crawl-1, crawl-2), with
// payloads shared across them: the same URL on a later date, the same
// payload under a new URL.
func monthly(t *testing.T, dir string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "gen")
	res, err := gen.Write(tmp, gen.Config{Files: 3, Records: 450, DupRate: 0.4, Seed: 3, MeanPayload: 4 << 10, Sequential: true,
		CrossFile: 0.9, NonCandidates: true, ReplayVariants: 0.1, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11, gen.WARC11Gz}})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range res.Names {
		crawl := filepath.Join(dir, fmt.Sprintf("crawl-%d", i))
		if err := os.MkdirAll(crawl, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(crawl, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrawlIndex deduplicates three monthly crawls one after another
// against a crawl index, and the same three in one run over all of them:
// the files end byte for byte the same (the same revisits, the same bytes
// saved), a committed crawl's files never change in later runs, each run
// is verified, a rerun of a committed crawl has nothing to do, and the
// index's registry counts what each crawl wrote and needs.
func TestCrawlIndex(t *testing.T) {
	top := t.TempDir()
	whole, crawls := filepath.Join(top, "whole"), filepath.Join(top, "crawls")
	monthly(t, whole)
	copyTree(t, whole, crawls)

	one, err := Run(context.Background(), Options{Collections: []string{whole}, WorkDir: filepath.Join(top, "work-whole"), Jobs: 2})
	if err != nil || one.Report.Exit != 0 {
		t.Fatalf("one run over all crawls: %v %v", err, one.Report.ExitReason)
	}

	index := filepath.Join(top, "index")
	var written, saved int64
	committed := map[string]map[string]string{}
	for i := range 3 {
		crawl := filepath.Join(crawls, fmt.Sprintf("crawl-%d", i))
		r, err := Run(context.Background(), Options{Collections: []string{crawl}, Index: index, Jobs: 2})
		if err != nil || r.Report.Exit != 0 || r.Report.Totals.Violations != 0 {
			v, _ := os.ReadFile(filepath.Join(index, "work", fmt.Sprintf("crawl-%d", i), workdir.Violations))
			t.Fatalf("crawl-%d: %v %v\n%.2000s", i, err, r.Report.ExitReason, v)
		}
		written += r.Report.Totals.RevisitsWritten
		saved += r.Report.Totals.BytesSaved
		for name, sums := range committed {
			sameTree(t, "committed "+name+" after crawl-"+fmt.Sprint(i), hashTree(t, filepath.Join(crawls, name)), sums)
		}
		committed[fmt.Sprintf("crawl-%d", i)] = hashTree(t, crawl)
		if len(r.Report.Crawls) != i+1 {
			t.Errorf("crawl-%d: the report lists %d crawls of the index", i, len(r.Report.Crawls))
		}
	}
	if tot := one.Report.Totals; written != tot.RevisitsWritten || saved != tot.BytesSaved {
		t.Errorf("crawl by crawl: %d revisits, %d bytes saved; one run: %d, %d", written, saved, tot.RevisitsWritten, tot.BytesSaved)
	}
	sameTree(t, "crawl by crawl vs one run", hashTree(t, crawls), hashTree(t, whole))

	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, k := range ix.Registry.Crawls {
		sum += k.RevisitsWritten
		if k.Name != "crawl-0" && len(k.Requires) == 0 {
			t.Errorf("%s needs no earlier crawl", k.Name)
		}
	}
	if sum != written || len(ix.Registry.Crawls) != 3 {
		t.Errorf("the registry counts %d revisits in %d crawls, the runs wrote %d", sum, len(ix.Registry.Crawls), written)
	}
	files, err := ix.Files("crawl-1")
	if err != nil || len(files) != 1 || len(files[0].SHA256) != 64 {
		t.Errorf("crawl-1's files: %+v %v", files, err)
	}
	// Each file committed with the SHA-256 it has: those the runs
	// rewrote with the one their rewrite took (the log's fixity is
	// another hash).
	for _, k := range ix.Registry.Crawls {
		files, err := ix.Files(k.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(crawls, k.Name, filepath.FromSlash(f.Name)))
			if sum := sha256.Sum256(data); err != nil || hex.EncodeToString(sum[:]) != f.SHA256 {
				t.Errorf("%s/%s committed with SHA-256 %s; it has %x (%v)", k.Name, f.Name, f.SHA256, sum, err)
			}
		}
	}

	// A rerun of a committed crawl: nothing to do, nothing touched.
	crawl1 := filepath.Join(crawls, "crawl-1")
	r, err := Run(context.Background(), Options{Collections: []string{crawl1}, Index: index, Jobs: 2})
	if err != nil || !r.NothingToDo {
		t.Errorf("rerun of a committed crawl: %v, nothing to do %v", err, r != nil && r.NothingToDo)
	}
	// A committed crawl whose file has other times but its bytes (a
	// hard link removed, a mode changed, times restored by a backup):
	// compared with its SHA-256, nothing to do. One whose bytes changed
	// is refused, not rewritten.
	f := filepath.Join(crawl1, files[0].Name)
	if err := os.Chtimes(f, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	r, err = Run(context.Background(), Options{Collections: []string{crawl1}, Index: index, Jobs: 2})
	if err != nil || !r.NothingToDo {
		t.Errorf("rerun of a committed crawl whose file has new times, the same bytes: %v, nothing to do %v", err, r != nil && r.NothingToDo)
	}
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Collections: []string{crawl1}, Index: index}); err == nil || !strings.Contains(err.Error(), "committed crawls are never rewritten") || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a changed committed crawl (a byte changed, the same size): %v", err)
	}
}

// TestRemoveCrawl removes the first of three monthly crawls from their
// index: refused while the later crawls' revisits need it; with Restore,
// their revisits of it are re-pointed or restored, the crawl leaves, its
// files can be deleted and every revisit left still names a response of
// the crawls that stay, and verify finds nothing. A crawl removed with
// Force and then deleted shows in verify as originals gone.
func TestRemoveCrawl(t *testing.T) {
	top := t.TempDir()
	crawls, index := filepath.Join(top, "crawls"), filepath.Join(top, "index")
	monthly(t, crawls)
	for i := range 3 {
		r, err := Run(context.Background(), Options{Collections: []string{filepath.Join(crawls, fmt.Sprintf("crawl-%d", i))}, Index: index, Jobs: 2})
		if err != nil || r.Report.Exit != 0 {
			t.Fatalf("crawl-%d: %v %v", i, err, r.Report.ExitReason)
		}
	}
	var deps *crawlindex.DependentsError
	if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0"}); !errors.As(err, &deps) || len(deps.Dependents) == 0 {
		t.Fatalf("removing a crawl others need: %v", err)
	}
	res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Restore: true, Jobs: 2})
	if err != nil || !res.Removed || res.Refused != 0 || res.Repointed+res.Restored == 0 {
		t.Fatalf("remove --restore: %v %+v", err, res)
	}
	if err := os.RemoveAll(filepath.Join(crawls, "crawl-0")); err != nil {
		t.Fatal(err)
	}
	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	if _, err := ix.Verify(true, func(p string) { problems = append(problems, p) }); err != nil || len(problems) > 0 {
		t.Errorf("verify after removal: %v\n%s", err, strings.Join(problems, "\n"))
	}
	for _, k := range ix.Registry.Crawls {
		for _, n := range k.Requires {
			if n.Crawl == "crawl-0" {
				t.Errorf("%s still requires crawl-0", k.Name)
			}
		}
	}
	checkRevisitsResolve(t, crawls)

	// crawl-2 needs crawl-1: removed by force, then deleted.
	if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-1", Force: true}); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(crawls, "crawl-1"))
	ix, _ = crawlindex.Open(index)
	problems = nil
	ix.Verify(false, func(p string) { problems = append(problems, p) })
	if len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), "crawl-1, which is no longer committed") || !strings.Contains(strings.Join(problems, "\n"), "originals of its revisits are lost") {
		t.Errorf("verify after a forced removal and deletion:\n%s", strings.Join(problems, "\n"))
	}
}

// checkRevisitsResolve fails for each revisit under dir whose Refers-To
// names no response with its digest under dir.
func checkRevisitsResolve(t *testing.T, dir string) {
	t.Helper()
	responses := map[string]bool{}
	var revisits []manifest.Line
	r := manifest.NewReader(bytes.NewReader(listing(t, dir)), "manifest")
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.IsRevisit() {
			revisits = append(revisits, l)
			continue
		}
		responses[l.URI+" "+l.Date+" "+l.Digest] = true
	}
	for _, v := range revisits {
		if v.Digest != manifest.NoDigest && !responses[v.RefURI+" "+v.RefDate+" "+v.Digest] {
			t.Errorf("%s offset %d: its revisit refers to %s %s, no response of %s", v.File, v.Offset, v.RefURI, v.RefDate, v.Digest)
		}
	}
}

// TestImportCrawl seeds an index from a CDX index of the first monthly
// crawl, without reading its WARC files, then deduplicates the second
// against it: the second's run compares bytes with the imported originals
// (whose CDX dates are 14-digit timestamps), writes revisits of them,
// passes verification and records that it needs the imported crawl.
func TestImportCrawl(t *testing.T) {
	top := t.TempDir()
	crawls, index := filepath.Join(top, "crawls"), filepath.Join(top, "index")
	monthly(t, crawls)
	jan := filepath.Join(crawls, "crawl-0")
	inputs, err := warcsum.Collect([]string{jan}, true)
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	if _, err := (&warcsum.Runner{}).Run(inputs, &lines); err != nil {
		t.Fatal(err)
	}
	var cdxText strings.Builder
	cdxText.WriteString(" CDX N b a m s k r M S V g\n")
	r := manifest.NewReader(&lines, "jan")
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.IsRevisit() {
			continue
		}
		ts := strings.NewReplacer("-", "", "T", "", ":", "", "Z", "").Replace(l.Date)
		fmt.Fprintf(&cdxText, "%s %s %s application/octet-stream 200 %s - - %d %d %s\n", "key", ts, l.URI,
			strings.TrimPrefix(l.Digest, "sha1:"), l.Length, l.Offset, l.File)
	}
	cdxFile := filepath.Join(top, "jan.cdx")
	if err := os.WriteFile(cdxFile, []byte(cdxText.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: "jan", Location: jan, CDX: []string{cdxFile}, Warn: func(err error) { t.Log(err) }})
	if err != nil || st.Imported == 0 {
		t.Fatalf("import: %v %+v", err, st)
	}
	feb := filepath.Join(crawls, "crawl-1")
	res, err := Run(context.Background(), Options{Collections: []string{feb}, Index: index, Jobs: 2})
	if err != nil || res.Report.Exit != 0 {
		t.Fatalf("crawl-1 against the imported crawl: %v %v", err, res.Report.ExitReason)
	}
	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	k := ix.Registry.Crawl("crawl-1")
	if k == nil || len(k.Requires) != 1 || k.Requires[0].Crawl != "jan" || k.Requires[0].Revisits == 0 {
		t.Errorf("crawl-1 requires %+v, want revisits of the imported crawl jan", k)
	}
	checkRevisitsResolve(t, crawls)
}

// TestKillAndResumeIndex kills warcdedup run --index on the second of
// three monthly crawls at random instants (the commit included) and runs
// it again: the files end as an uninterrupted run leaves them, the index
// holds the same crawls and originals, and verifies.
func TestKillAndResumeIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("kills warcdedup many times")
	}
	src := filepath.Join(t.TempDir(), "crawls")
	monthly(t, src)
	run := func(crawl, index string) *exec.Cmd {
		return exec.Command(binPath, "run", "-q", "-j", "2", "--index", index, crawl)
	}
	setup := func() (crawls, index string) {
		crawls, index = filepath.Join(t.TempDir(), "crawls"), filepath.Join(t.TempDir(), "index")
		copyTree(t, src, crawls)
		if out, err := run(filepath.Join(crawls, "crawl-0"), index).CombinedOutput(); err != nil {
			t.Fatalf("crawl-0: %v\n%s", err, out)
		}
		return crawls, index
	}
	refCrawls, refIndex := setup()
	start := time.Now()
	if out, err := run(filepath.Join(refCrawls, "crawl-1"), refIndex).CombinedOutput(); err != nil {
		t.Fatalf("crawl-1: %v\n%s", err, out)
	}
	full := time.Since(start)
	want := hashTree(t, refCrawls)
	wantIx, err := crawlindex.Open(refIndex)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 6 {
		crawls, index := setup()
		delay := time.Duration(rng.Int64N(int64(full)))
		cmd := run(filepath.Join(crawls, "crawl-1"), index)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if out, err := run(filepath.Join(crawls, "crawl-1"), index).CombinedOutput(); err != nil {
			t.Fatalf("kill %d after %v: the resumed run: %v\n%s", i, delay, err, out)
		}
		sameTree(t, fmt.Sprintf("kill %d after %v, resumed", i, delay), hashTree(t, crawls), want)
		ix, err := crawlindex.Open(index)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"crawl-0", "crawl-1"} {
			got, ref := ix.Registry.Crawl(name), wantIx.Registry.Crawl(name)
			if got == nil || got.Originals != ref.Originals || got.RevisitsWritten != ref.RevisitsWritten || got.BytesConserved != ref.BytesConserved {
				t.Errorf("kill %d after %v: %s in the index: %+v, want %+v", i, delay, name, got, ref)
			}
		}
		var problems []string
		if _, err := ix.Verify(true, func(p string) { problems = append(problems, p) }); err != nil || len(problems) > 0 {
			t.Errorf("kill %d after %v: verify: %v %v", i, delay, err, problems)
		}
		if t.Failed() {
			break
		}
	}
}

// TestCrawlExclude proves that --exclude keeps a crawl's file out of its
// run (a WARC converted from an ARC must not be deduplicated against its
// source): the file is not read, not rewritten, not committed.
func TestCrawlExclude(t *testing.T) {
	top := t.TempDir()
	crawl := filepath.Join(top, "crawl")
	body := strings.Repeat("the same payload ", 400)
	warctest.WriteFile(t, crawl, "a.warc", []byte(warctest.Response("http://example.com/a", "2024-01-01T00:00:00Z", body)))
	warctest.WriteFile(t, crawl, "converted/a-from-arc.warc", []byte(warctest.Response("http://example.com/a", "2024-01-02T00:00:00Z", body)))
	before := hashTree(t, crawl)
	r, err := Run(context.Background(), Options{Collections: []string{crawl}, Index: filepath.Join(top, "index"), Exclude: []string{"converted/*"}})
	if err != nil || r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten != 0 || r.Report.Totals.Files != 1 {
		t.Fatalf("run: %v %v, %+v", err, r.Report.ExitReason, r.Report.Totals)
	}
	sameTree(t, "after the run", hashTree(t, crawl), before)
	ix, err := crawlindex.Open(filepath.Join(top, "index"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := ix.Files("crawl")
	if len(files) != 1 || files[0].Name != "a.warc" {
		t.Errorf("committed files %+v, want a.warc alone", files)
	}
}

// TestRunReadsDamagedFileAgain proves that a rewritten file whose listing
// cannot be carried over (it has damage) is read again by hash again, and
// that the run log says why.
func TestRunReadsDamagedFileAgain(t *testing.T) {
	cfg := genCfg
	cfg.Files, cfg.Formats = 2, []gen.Format{gen.WARC10Gz}
	dir, res := generated(t, cfg)
	// A gzip member cut short after the last record: damage the rewrite
	// keeps as it is, and that warcsum reports.
	damaged := filepath.Join(dir, res.Names[0])
	f, err := os.OpenFile(damaged, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0x0b}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	wd := filepath.Join(t.TempDir(), "work")
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Totals.FilesRewritten != 2 {
		t.Fatalf("%d files rewritten, want both", r.Report.Totals.FilesRewritten)
	}
	found := false
	for _, s := range r.Report.Stages {
		if s.Name == stage.HashAgainName {
			found = true
			if !strings.HasPrefix(s.Note, "1 file read again") {
				t.Errorf("hash again: %s, want the damaged file read again", s.Note)
			}
		}
	}
	if !found {
		t.Errorf("no hash again stage in the report")
	}
	afterInCache(t, wd, dir)
	runLog, err := os.ReadFile(filepath.Join(wd, workdir.RunLog))
	if err != nil {
		t.Fatal(err)
	}
	want := "warcdedup: note: " + manifest.EscapeFile(res.Names[0]) + ": " + warcsum.ErrNotDerived.Error() + ": the version rewritten was damaged; hash again reads the file"
	if !strings.Contains(string(runLog), want) {
		t.Errorf("the run log does not say %q:\n%s", want, runLog)
	}
}
