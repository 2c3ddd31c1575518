package dedup

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/internal/jobtest"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// The operator's view (issue 25): what warcdedup run says, run as a user
// runs it, against what it did.

// runWarcdedup runs the warcdedup binary with args and returns its standard
// output, standard error and exit status.
func runWarcdedup(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// figure reads the count after prefix in s ("kept: 1,234 duplicates"),
// -1 if prefix is not there.
func figure(s, prefix string) int64 {
	i := strings.Index(s, prefix)
	if i < 0 {
		return -1
	}
	m := regexp.MustCompile(`^[0-9,]+`).FindString(s[i+len(prefix):])
	n, err := strconv.ParseInt(strings.ReplaceAll(m, ",", ""), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// htmlCount reads the count of a row of report.html's tables of counts.
func htmlCount(page, label string) int64 {
	return figure(page, "<td>"+label+`</td><td class="n">`)
}

// TestSummaryAccounts runs warcdedup run on a collection with ARC files
// (duplicates kept), a file compressed whole, a crawler's .open file, an
// index and a WARC file compressed with lz4, and proves that the summary
// is on standard output alone, that its duplicates are the revisits
// written and the duplicates kept by reason, summing exactly, with the
// same figures in stats.json and report.html; that the file compressed
// whole is a format read but not rewritten (warcrecompress), not damage;
// and that every file not read is counted by kind and named in run.log.
func TestSummaryAccounts(t *testing.T) {
	dir, _ := generated(t, genCfg)
	// A WARC file compressed whole: one gzip member of several records.
	plain, _ := filepath.Glob(filepath.Join(dir, "*.warc"))
	if len(plain) == 0 {
		t.Fatal("the generator wrote no plain WARC file")
	}
	data, err := os.ReadFile(plain[0])
	if err != nil {
		t.Fatal(err)
	}
	var whole bytes.Buffer
	zw := gzip.NewWriter(&whole)
	zw.Write(data)
	zw.Close()
	extra := map[string][]byte{
		"whole.warc.gz":              whole.Bytes(),
		"crawl-00042.warc.gz.open":   []byte("still being written"),
		"index.cdxj":                 []byte("com,example)/ 20240101000000 {}\n"),
		"other-compression.warc.lz4": []byte("not read"),
	}
	for name, b := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wd := filepath.Join(t.TempDir(), "work")
	stdout, stderr, code := runWarcdedup(t, "run", "-j", "2", "--work-dir", wd, dir)
	t.Logf("summary:\n%s", stdout)
	rep, err := stage.ReadReport(filepath.Join(wd, workdir.StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	tot := rep.Totals

	// The exit status returned is the one the report and stderr give.
	if code != 0 || rep.Exit != 0 || strings.Contains(stderr, "exit status") {
		t.Errorf("exit %d, stats.json %d %v; stderr:\n%s", code, rep.Exit, rep.ExitReason, stderr)
	}
	// Results on stdout, progress and diagnostics on stderr.
	if !strings.Contains(stdout, "duplicates (") || strings.Contains(stderr, "duplicates (") || strings.Contains(stdout, ": started") {
		t.Errorf("the summary is not on standard output alone; stderr:\n%s", stderr)
	}

	// One accounting: duplicates = revisits written + kept by reason.
	var kept int64
	for _, k := range rep.NotDeduplicable {
		kept += k.Records
		if got := figure(stdout, "  kept: "); got < 0 || !strings.Contains(stdout, k.Why) {
			t.Errorf("the summary lacks the kept duplicates %q", k.Why)
		}
	}
	if len(rep.NotDeduplicable) == 0 || tot.RevisitsWritten == 0 || tot.RevisitsWritten+kept != tot.Duplicates {
		t.Errorf("stats.json: %d revisits written + %d kept (%d reasons) != %d duplicates", tot.RevisitsWritten, kept, len(rep.NotDeduplicable), tot.Duplicates)
	}
	var summaryKept int64
	for _, line := range strings.Split(stdout, "\n") {
		if n := figure(line, "  kept: "); n >= 0 {
			summaryKept += n
		}
	}
	if figure(stdout, "duplicates ("+rep.Policy+" policy, "+rep.Algorithm+"): ") != tot.Duplicates ||
		figure(stdout, "  rewritten: ") != tot.RevisitsWritten || summaryKept != kept {
		t.Errorf("the summary's figures are not stats.json's: %d duplicates, %d revisits written, %d kept", tot.Duplicates, tot.RevisitsWritten, kept)
	}
	pageBytes, err := os.ReadFile(filepath.Join(wd, workdir.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(pageBytes)
	if htmlCount(page, "Duplicates") != tot.Duplicates || htmlCount(page, "Revisits written") != tot.RevisitsWritten ||
		htmlCount(page, "Duplicates kept (see why below)") != kept || htmlCount(page, "Damaged records") != tot.DamagedRecords {
		t.Errorf("report.html's counts are not stats.json's: duplicates %d, revisits written %d, kept %d, damaged %d",
			htmlCount(page, "Duplicates"), htmlCount(page, "Revisits written"), htmlCount(page, "Duplicates kept (see why below)"), htmlCount(page, "Damaged records"))
	}

	// The file compressed whole: read, not rewritable, not damage.
	if tot.DamagedRecords != 0 || tot.UnreadableFiles != 0 || strings.Contains(stdout, "damaged:") ||
		!strings.Contains(stdout, "read, not rewritable: 1 file") || !strings.Contains(stdout, "warcrecompress") {
		t.Errorf("the file compressed whole: %d damaged records, %d unreadable files; summary above", tot.DamagedRecords, tot.UnreadableFiles)
	}

	// Every file not read, counted by kind and named in run.log.
	for _, want := range []string{"1 file still being written", "1 index ", "1 WARC or ARC file in another compression"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary does not say %q of the files not read", want)
		}
	}
	var groups int64
	for _, g := range rep.FilesNotDeduplicated {
		groups += g.Files
	}
	if groups != 4 { // .open, index, lz4 and the file compressed whole
		t.Errorf("stats.json counts %d files not deduplicated, want 4: %+v", groups, rep.FilesNotDeduplicated)
	}
	runLog, _ := os.ReadFile(filepath.Join(wd, workdir.RunLog))
	for name := range extra {
		if name != "whole.warc.gz" && !bytes.Contains(runLog, []byte(name)) {
			t.Errorf("run.log does not name %s", name)
		}
	}
	if !bytes.Contains(runLog, []byte("whole.warc.gz")) {
		t.Errorf("run.log does not name the file compressed whole")
	}
}

// TestInterruptedRun interrupts warcdedup run (SIGINT, as Ctrl-C does)
// once its rewrite has begun, and proves that the summary names the stage
// it stopped in and the command that resumes it, reports no stage after
// it as done and no verification, and that the exit status printed is the
// one returned (2); then that the same command finishes the job.
func TestInterruptedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("a job of 80 MB")
	}
	cfg := genCfg
	cfg.Files, cfg.Records, cfg.MeanPayload = 6, 1200, 12<<10
	dir, _ := generated(t, cfg)
	wd := filepath.Join(t.TempDir(), "work")
	args := []string{"run", "-j", "2", "--work-dir", wd, dir}
	stdout, stderr, code, signalled := interruptAt(t, "warcdedup: rewrite: started", args...)
	t.Logf("summary:\n%s\nstderr:\n%s", stdout, stderr)
	if !signalled {
		t.Fatal("the rewrite never started")
	}
	if code != 2 {
		t.Fatalf("exit status %d, want 2 (interrupted)", code)
	}
	if !regexp.MustCompile(`(?m)^warcdedup: rewrite: started \(step \d+ of \d+\)$`).MatchString(stderr) {
		t.Errorf("the progress does not number the stage")
	}
	resume := "warcdedup " + strings.Join(args, " ")
	if !regexp.MustCompile(`(?m)^not finished: interrupted in step \d+ of \d+ \(rewrite\): run the same command to resume: ` + regexp.QuoteMeta(resume) + `$`).MatchString(stdout) {
		t.Errorf("the summary does not say where the run stopped and how to resume it")
	}
	for _, wrong := range []string{"verification:", "rewrite: done", "collection:", "hash again "} {
		if strings.Contains(stdout, wrong) {
			t.Errorf("the summary of the interrupted run says %q", wrong)
		}
	}
	if !strings.Contains(stdout, "rewrite (interrupted after") || !regexp.MustCompile(`(?m)^not run: resolve the collisions, rewrite the collisions, hash again, verify, account$`).MatchString(stdout) {
		t.Errorf("the summary does not say the rewrite was interrupted and what did not run")
	}
	if strings.Count(stderr, "exit status") != 1 || !strings.Contains(stderr, "warcdedup: exit status 2:\n  interrupted in step") {
		t.Errorf("stderr does not give exit status 2 and why, once")
	}
	rep, err := stage.ReadReport(filepath.Join(wd, workdir.StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Exit != 2 || !strings.HasPrefix(rep.Stopped, "interrupted in step") {
		t.Errorf("stats.json: exit %d, stopped %q", rep.Exit, rep.Stopped)
	}
	states := map[string]string{}
	for _, s := range rep.Stages {
		states[s.Name] = map[bool]string{true: "done", false: "not done"}[s.Done()]
	}
	if states[stage.HashName] != "done" || states[stage.RewriteName] != "not done" || states[stage.VerifyName] != "not done" || states[stage.AccountName] != "not done" {
		t.Errorf("stats.json's stages: %v", states)
	}
	page, _ := os.ReadFile(filepath.Join(wd, workdir.ReportFile))
	if !bytes.Contains(page, []byte("stopped before the end")) || !bytes.Contains(page, []byte("not run")) {
		t.Errorf("report.html does not say the run stopped")
	}

	// The same command finishes the job; the stages done before are said
	// to be, by the run interrupted.
	start := time.Now()
	stdout, stderr2, code := runWarcdedup(t, args...)
	if code != 0 || !strings.Contains(stdout, "verification: 0 records lost") || !strings.Contains(stdout, "hash (done before)") || strings.Contains(stdout, "not finished") {
		t.Errorf("the resumed run: exit %d after %v\n%s\n%s", code, time.Since(start), stdout, stderr2)
	}
	if !regexp.MustCompile(`(?m)^done by the run of \d{4}-\d\d-\d\d \d\d:\d\d UTC: hash, `).MatchString(stdout) {
		t.Errorf("the resumed run does not say which run did the stages done before")
	}
	rep, _ = stage.ReadReport(filepath.Join(wd, workdir.StatsFile))
	for _, s := range rep.Stages {
		if s.Skipped && !strings.HasPrefix(s.Note, "done by the run of ") {
			t.Errorf("stage %s done before: %q", s.Name, s.Note)
		}
	}
	var j map[string]any
	b, _ := os.ReadFile(filepath.Join(wd, workdir.StatsFile))
	if json.Unmarshal(b, &j) != nil || j["stopped"] != nil {
		t.Errorf("stats.json of the finished job still says it stopped")
	}
}

// TestInterruptedUndo interrupts warcdedup undo (SIGINT) once its restore
// has begun, and proves that it says plainly that it was interrupted and
// how to finish, with the exit status it returns (2) and no other; then
// that the same command finishes the undo.
func TestInterruptedUndo(t *testing.T) {
	if testing.Short() {
		t.Skip("a job of 80 MB")
	}
	cfg := genCfg
	cfg.Files, cfg.Records, cfg.MeanPayload = 6, 1200, 12<<10
	dir, _ := generated(t, cfg)
	wd := filepath.Join(t.TempDir(), "work")
	if _, stderr, code := runWarcdedup(t, "run", "-q", "-j", "2", "--work-dir", wd, dir); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	args := []string{"undo", "-j", "1", "--work-dir", wd, dir}
	stdout, stderr, code, signalled := interruptAt(t, "warcdedup: restore: started", args...)
	t.Logf("summary:\n%s\nstderr:\n%s", stdout, stderr)
	if !signalled {
		t.Fatal("the restore never started")
	}
	resume := "run the same command to finish: warcdedup " + strings.Join(args, " ")
	if code != 2 || !strings.HasPrefix(stdout, "not finished: interrupted: ") || !strings.Contains(stdout, resume) {
		t.Errorf("exit %d; the summary does not say the undo was interrupted and how to finish it", code)
	}
	if strings.Count(stderr, "exit status") != 1 || !strings.Contains(stderr, "warcdedup: exit status 2:\n  interrupted: ") ||
		strings.Contains(stdout, "exit status") || strings.Contains(stderr, "restore: done") {
		t.Errorf("stderr does not give exit status 2, interrupted, once")
	}
	stdout, stderr, code = runWarcdedup(t, args...)
	if code != 0 || !strings.Contains(stdout, "restored: ") || strings.Contains(stdout, "not finished") {
		t.Errorf("the undo resumed: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// interruptAt runs warcdedup with args, sends it SIGINT when it writes a
// line of standard error beginning with at, and returns its standard
// output, standard error, exit status and whether it was signalled.
func interruptAt(t *testing.T, at string, args ...string) (stdout, stderr string, code int, signalled bool) {
	t.Helper()
	jobtest.InterruptibleChildren()
	cmd := exec.Command(binPath, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		line := sc.Text()
		errb.WriteString(line + "\n")
		if !signalled && strings.HasPrefix(line, at) {
			cmd.Process.Signal(syscall.SIGINT)
			signalled = true
		}
	}
	cmd.Wait()
	return out.String(), errb.String(), cmd.ProcessState.ExitCode(), signalled
}

// TestTerminalProgress runs warcdedup run on a terminal (script(1) gives
// it one), its summary redirected to a file, and proves that the
// progress line says which stage of how many is at work and where the
// whole job is (its bytes done of the collection's), and that the file
// holds the summary alone.
func TestTerminalProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("a job of 100 MB")
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("script (util-linux) is needed to give warcdedup a terminal")
	}
	cfg := genCfg
	cfg.Files, cfg.Records, cfg.MeanPayload = 6, 4000, 16<<10
	dir, _ := generated(t, cfg)
	wd := filepath.Join(t.TempDir(), "work")
	summary := filepath.Join(t.TempDir(), "summary.txt")
	cmd := exec.Command(script, "-qfec", binPath+" run -j 2 --work-dir "+wd+" "+dir+" > "+summary, "/dev/null")
	tty, err := cmd.Output()
	if err != nil {
		t.Fatalf("warcdedup run on a terminal: %v\n%s", err, tty)
	}
	lines := strings.Split(strings.ReplaceAll(string(tty), "\r", "\n"), "\n")
	whole := regexp.MustCompile(`\[step \d+ of \d+\] \S.*  \| job [0-9.]+ [kMG]?B / [0-9.]+ [kMG]?B \(\d+%\)`)
	found := 0
	for _, l := range lines {
		if whole.MatchString(l) {
			found++
		}
	}
	t.Logf("%d progress lines with the whole job's", found)
	if found == 0 {
		t.Errorf("no progress line gives the stage number and the whole job's progress:\n%s", tty)
	}
	got, err := os.ReadFile(summary)
	if err != nil || !bytes.HasPrefix(got, []byte("collection: ")) || bytes.ContainsAny(got, "\r\033") || !bytes.Contains(got, []byte("verification: 0 records lost")) {
		t.Errorf("summary.txt (%v) is not the summary alone:\n%q", err, got)
	}
}
