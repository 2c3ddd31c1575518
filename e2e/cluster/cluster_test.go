// Package clustere2e runs warcdedup cluster on a real three-node Slurm
// cluster on this machine (internal/slurmtest), with one nginx per storage
// host (internal/storagetest), against warcdedup run over the same files.
// It starts daemons and takes minutes, so it runs only when asked:
// WARCDEDUP_TEST_CLUSTER=1 (make test-cluster).
package clustere2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/rewritetest"
	"warcdedup/internal/slurmtest"
	"warcdedup/internal/storagetest"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/warcsum"
)

// binDir holds the commands built for the tests; the Slurm jobs run
// warcdedup from there, as nodes sharing a file system would.
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv("WARCDEDUP_TEST_CLUSTER") != "1" {
		os.Exit(m.Run()) // every test skips
	}
	dir, err := os.MkdirTemp("", "warcdedup-cluster-bin-")
	if err != nil {
		panic(err)
	}
	os.Chmod(dir, 0o755)
	// With the tasks' test hooks (cluster/testhooks.go: the fault test
	// freezes tasks), besides the tags GOFLAGS gives (the Makefile's
	// -tags=isal), which a -tags of its own would replace.
	tags := "warcdedup_testhooks"
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if t, ok := strings.CutPrefix(f, "-tags="); ok {
			tags = t + "," + tags
		}
	}
	build := exec.Command("go", "build", "-tags", tags, "-o", dir+"/", "../../cmd/warcdedup")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building warcdedup: " + err.Error())
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needCluster(t *testing.T) {
	t.Helper()
	if os.Getenv("WARCDEDUP_TEST_CLUSTER") != "1" {
		t.Skip("cluster test: set WARCDEDUP_TEST_CLUSTER=1 (make test-cluster)")
	}
}

// corpusDir holds real files from public projects' test suites; absent on
// users' machines (the corpus part of the collection is then left out).
const corpusDir = "../../../shared/corpus"

var hostNames = []string{"store1", "store2", "store3"}

// pristine writes the collection every case starts from: a generated
// collection under gen/ (every format, duplicates within and across
// files, replay variants, ARC files, records that are no candidates) and
// every WARC and ARC file of the corpus under corpus/ (real crawls,
// existing revisits, damaged files).
func pristine(t *testing.T, dir string) {
	t.Helper()
	cfg := gen.Config{Files: 9, Records: 900, DupRate: 0.4, Seed: 12, MeanPayload: 6 << 10, NonCandidates: true,
		Chunked: 0.1, ReplayVariants: 0.1,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11, gen.ARCGz}}
	if _, err := gen.Write(filepath.Join(dir, "gen"), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(corpusDir, "MANIFEST.md")); err != nil {
		if corpustest.Required() {
			t.Fatalf("the corpus is required (WARCDEDUP_REQUIRE_CORPUS=1): %v", err)
		}
		t.Logf("no corpus at %s: the generated collection only", corpusDir)
		return
	}
	err := filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n := strings.ToLower(d.Name())
		if !strings.HasSuffix(n, ".warc") && !strings.HasSuffix(n, ".warc.gz") && !strings.HasSuffix(n, ".arc") && !strings.HasSuffix(n, ".arc.gz") {
			return nil
		}
		rel, _ := filepath.Rel(corpusDir, p)
		copyFile(t, p, filepath.Join(dir, "corpus", rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// files lists the regular files under dir by relative name.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// spread copies the pristine collection onto the hosts' roots, each file
// on the host SWAP places it on: MD5 of its relative name mod 3.
func spread(t *testing.T, src, base string) map[string]string {
	t.Helper()
	roots := map[string]string{}
	for _, h := range hostNames {
		roots[h] = filepath.Join(base, h)
		if err := os.MkdirAll(roots[h], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range files(t, src) {
		h := hostNames[storagetest.Slice(rel, len(hostNames))]
		copyFile(t, filepath.Join(src, rel), filepath.Join(roots[h], rel))
	}
	return roots
}

func sha(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readStats(t *testing.T, work string) *report.Report {
	t.Helper()
	f, err := os.Open(filepath.Join(work, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// baseline is warcdedup run over the whole collection in one directory.
type baseline struct {
	dir   string // the collection, deduplicated
	work  string // its work directory
	code  int
	stats *report.Report
}

func runBaseline(t *testing.T, src, base string, extra ...string) *baseline {
	t.Helper()
	b := &baseline{dir: filepath.Join(base, "whole")}
	for _, rel := range files(t, src) {
		copyFile(t, filepath.Join(src, rel), filepath.Join(b.dir, rel))
	}
	work := filepath.Join(base, "run-work")
	b.work = work
	cmd := exec.Command(filepath.Join(binDir, "warcdedup"), append(append([]string{"run", "-q", "-j", "2", "--work-dir", work}, extra...), b.dir)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		b.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if b.code >= 2 {
		t.Fatalf("warcdedup run: exit %d\n%s", b.code, stderr.String())
	}
	b.stats = readStats(t, work)
	t.Logf("warcdedup run: exit %d, %d duplicates, %d revisits written, %d bytes saved, %d files rewritten",
		b.code, b.stats.Totals.Duplicates, b.stats.Totals.RevisitsWritten, b.stats.Totals.BytesSaved, b.stats.Totals.FilesRewritten)
	return b
}

// hostsFile writes a hosts file: each host with its own URL, or (swap)
// all with the first host's URL, which redirects to the holder.
func hostsFile(t *testing.T, base string, roots map[string]string, st *storagetest.Storage, swap bool) string {
	t.Helper()
	var b strings.Builder
	for _, h := range hostNames {
		url := st.URL(h)
		if swap {
			url = st.URL(hostNames[0])
		}
		fmt.Fprintf(&b, "%s %s %s/warcs\n", h, roots[h], url)
	}
	name := filepath.Join(base, "hosts")
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func storageHosts(roots map[string]string) []storagetest.Host {
	var hs []storagetest.Host
	for _, h := range hostNames {
		hs = append(hs, storagetest.Host{Name: h, Root: roots[h]})
	}
	return hs
}

// monitor is a warcdedup cluster command, run in the background.
type monitor struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
	code   int
}

func startCluster(t *testing.T, c *slurmtest.Cluster, env []string, args ...string) *monitor {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "warcdedup"), append([]string{"cluster", "--poll", "300ms", "-j", "2"}, args...)...)
	cmd.Env = append(append(os.Environ(), c.Env()...), env...)
	m := &monitor{cmd: cmd, stderr: new(bytes.Buffer), done: make(chan struct{})}
	// The summary (standard output) with the progress and diagnostics
	// (standard error), in the order written.
	cmd.Stdout, cmd.Stderr = m.stderr, m.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			m.code = ee.ExitCode()
		} else if err != nil {
			m.code = -1
		}
		close(m.done)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-m.done })
	return m
}

func (m *monitor) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(timeout):
		m.cmd.Process.Kill()
		<-m.done
		t.Fatalf("warcdedup cluster did not end within %v:\n%s", timeout, m.stderr.String())
	}
	return m.code
}

func runCluster(t *testing.T, c *slurmtest.Cluster, args ...string) (int, string) {
	t.Helper()
	m := startCluster(t, c, nil, args...)
	code := m.wait(t, 5*time.Minute)
	return code, m.stderr.String()
}

// sameAsBaseline checks that the cluster job did what warcdedup run did:
// the same exit status, figures, and every file byte for byte the same,
// and that it proved that nothing was lost. faults: tasks were killed
// (see listedAgain).
func sameAsBaseline(t *testing.T, b *baseline, code int, work string, roots map[string]string, faults bool) {
	t.Helper()
	got := readStats(t, work)
	if code != b.code || got.Exit != b.code {
		t.Errorf("exit status %d (stats.json %d), warcdedup run's %d", code, got.Exit, b.code)
	}
	g, w := got.Totals, b.stats.Totals
	if g != w {
		t.Errorf("totals differ from warcdedup run's:\n got %+v\nwant %+v", g, w)
	}
	if g.Violations != 0 || g.RevisitsWritten == 0 || g.BytesSaved == 0 {
		t.Errorf("totals %+v: want revisits written, bytes saved and no violation", g)
	}
	if len(got.ByMIME) != len(b.stats.ByMIME) || len(got.NotDeduplicable) != len(b.stats.NotDeduplicable) {
		t.Errorf("breakdowns differ: %d MIME types, %d reasons; run: %d, %d", len(got.ByMIME), len(got.NotDeduplicable),
			len(b.stats.ByMIME), len(b.stats.NotDeduplicable))
	}
	n := 0
	for _, h := range hostNames {
		for _, rel := range files(t, roots[h]) {
			n++
			if sha(t, filepath.Join(roots[h], rel)) != sha(t, filepath.Join(b.dir, rel)) {
				t.Errorf("%s on %s differs from warcdedup run's", rel, h)
			}
		}
	}
	if want := len(files(t, b.dir)); n != want {
		t.Errorf("%d files on the hosts, %d in the collection", n, want)
	}
	for _, f := range []string{"report.html", "fixity.tsv", "deps.tsv", "violations.txt"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Errorf("work directory: %v", err)
		}
	}
	// The same revisits: the rewrite logs hold the same entries, composed
	// over each file's replacements (warcdedup run compares each
	// duplicate once: a file holding duplicates its first rewrite kept
	// apart is replaced again by the rewrite of the collisions, the
	// entries of the second at the offsets the first left).
	if got, want := rewritetest.ComposedLog(t, filepath.Join(work, "rewrite.log")), rewritetest.ComposedLog(t, filepath.Join(b.work, "rewrite.log")); !slices.Equal(got, want) {
		t.Errorf("rewrite logs differ: %d entries, warcdedup run's %d", len(got), len(want))
	}
	for _, h := range hostNames {
		t.Logf("rewrite@%s: %+v", h, remoteReads(t, work, h))
	}
	listedAgain(t, work, roots, "", faults)
}

// listedAgain checks that each host's hash again read only the files its
// rewrite replaced and could not list from their old listing, that most
// were listed so, and that the listing after is what reading the files
// under each host's root gives, each name after prefix (a crawl's
// "CRAWL/"). After faults, a file replaced by a rewrite killed before it
// derived the listing is read again, though the attempt that finished
// found it done: then only "at least" holds.
func listedAgain(t *testing.T, work string, roots map[string]string, prefix string, faults bool) {
	t.Helper()
	var derived, rewritten int64
	for _, h := range hostNames {
		var rw struct {
			Rewrite struct {
				Stats   struct{ Rewritten int64 }
				Derived int64
			}
		}
		var after struct{ After warcsum.Stats }
		readJSONFile(t, filepath.Join(work, "tasks", "rewrite@"+h, "0.json"), &rw)
		readJSONFile(t, filepath.Join(work, "tasks", "rehash@"+h, "0.json"), &after)
		again, want := after.After.Read(), rw.Rewrite.Stats.Rewritten-rw.Rewrite.Derived
		if again < want || again > want && !faults {
			t.Errorf("%s: hash again read %d files; %d were replaced, %d of them listed from their old listing", h, again, rw.Rewrite.Stats.Rewritten, rw.Rewrite.Derived)
		}
		derived += rw.Rewrite.Derived
		rewritten += rw.Rewrite.Stats.Rewritten
		inputs, err := warcsum.Collect([]string{roots[h]}, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range inputs {
			inputs[i].Name = prefix + inputs[i].Name
		}
		var reread bytes.Buffer
		if _, err := (&warcsum.Runner{Jobs: 2}).Run(inputs, &reread); err != nil {
			t.Fatal(err)
		}
		if listed, err := os.ReadFile(filepath.Join(work, "hosts", h, "after.manifest")); err != nil || !bytes.Equal(listed, reread.Bytes()) {
			t.Errorf("%s: the manifest after (%v) is not what reading the files gives", h, err)
		}
	}
	if derived == 0 || derived*2 < rewritten {
		t.Errorf("%d of %d files replaced listed from their old listing", derived, rewritten)
	}
}

func readJSONFile(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// remoteReads are what a host's rewrite says of the originals it read
// from other hosts.
func remoteReads(t *testing.T, work, host string) (r struct{ Reads, Moved, Again int64 }) {
	t.Helper()
	var m struct {
		Rewrite struct {
			Remote struct{ Reads, Moved, Again int64 }
		}
	}
	data, err := os.ReadFile(filepath.Join(work, "tasks", "rewrite@"+host, "0.json"))
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m.Rewrite.Remote
}

// logEntries lists the entries of a rewrite log, sorted.
func logEntries(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := rewritelog.NewReader(f, name)
	var out []string
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		// With the gzip member each revisit replaced, which undo
		// rebuilds from (the hosts describe their own files' members).
		out = append(out, fmt.Sprintf("%s %d %d %d %d %s %s %s %s %s", e.File, e.OldOffset, e.OldLength, e.NewOffset, e.NewLength,
			e.Kind, e.PayloadDigest, e.RefersToURI, e.RefersTo, e.OriginalMember))
	}
	slices.Sort(out)
	return out
}

// TestCluster runs warcdedup cluster on three storage hosts, each file
// placed as SWAP places it (MD5 of its name mod 3), and compares it with
// warcdedup run over the same files: with each host's own URL, then with
// one URL for all (SWAP's 302 redirects) and a fault in every stage, then
// with a storage host down.
func TestCluster(t *testing.T) {
	needCluster(t)
	base := t.TempDir()
	os.Chmod(base, 0o755)
	src := filepath.Join(base, "pristine")
	pristine(t, src)
	b := runBaseline(t, src, base)
	c := slurmtest.Start(t, hostNames...)

	t.Run("each host's own URL", func(t *testing.T) {
		dir := filepath.Join(base, "own")
		roots := spread(t, src, dir)
		st := storagetest.Start(t, storageHosts(roots)...)
		hosts := hostsFile(t, dir, roots, st, false)
		work := filepath.Join(dir, "work")

		// A dry run first: nothing changes, and its figures are what the
		// run then does.
		before := map[string]string{}
		for _, h := range hostNames {
			for _, rel := range files(t, roots[h]) {
				before[h+"/"+rel] = sha(t, filepath.Join(roots[h], rel))
			}
		}
		code, stderr := runCluster(t, c, "--dry-run", "--work-dir", work, hosts)
		dry := readStats(t, work)
		if dry.Mode != "dry run" || code != b.code || !strings.Contains(stderr, "would be saved") {
			t.Errorf("dry run: exit %d, mode %q\n%s", code, dry.Mode, stderr)
		}
		d, w := dry.Totals, b.stats.Totals
		if d.Records != w.Records || d.Duplicates != w.Duplicates || d.RevisitsWritten != w.RevisitsWritten ||
			d.BytesSaved != w.BytesSaved || d.FilesRewritten != w.FilesRewritten {
			t.Errorf("the dry run's figures are not what warcdedup run did:\n dry %+v\n run %+v", d, w)
		}
		for _, h := range hostNames {
			for _, rel := range files(t, roots[h]) {
				if sha(t, filepath.Join(roots[h], rel)) != before[h+"/"+rel] {
					t.Errorf("the dry run changed %s on %s", rel, h)
				}
			}
		}

		start := time.Now()
		code, stderr = runCluster(t, c, "--work-dir", work, hosts)
		t.Logf("warcdedup cluster: exit %d in %v\n%s", code, time.Since(start).Round(time.Millisecond), stderr)
		sameAsBaseline(t, b, code, work, roots, false)

		// Run again: the job is complete, nothing is submitted.
		code2, stderr2 := runCluster(t, c, "--work-dir", work, hosts)
		if code2 != code || !strings.Contains(stderr2, "nothing submitted") {
			t.Errorf("second run: exit %d\n%s", code2, stderr2)
		}
	})

	t.Run("one URL for all (SWAP), a fault in every stage", func(t *testing.T) {
		dir := filepath.Join(base, "swap")
		roots := spread(t, src, dir)
		st := storagetest.StartSWAP(t, storageHosts(roots)...)
		hosts := hostsFile(t, dir, roots, st, true)
		work := filepath.Join(dir, "work")
		args := []string{"--work-dir", work, hosts}
		// Each task named freezes itself once (SIGSTOP) at the point
		// named, for the fault below to strike it there.
		// The task cancelled freezes as it starts: scancel sends SIGCONT
		// before SIGTERM, and a task frozen midway could finish what was
		// left in between and rightly claim its result (it did in one of
		// two runs of .ci/run), leaving no cancellation to see.
		env := []string{"WARCDEDUP_TEST_FREEZE=hash@store2:mid,resolve#1:start,rewrite@store3:mid,rehash@store1:mid,verify:start,account:start"}
		start := time.Now()
		m := startCluster(t, c, env, args...)
		step := func(what string) { t.Logf("+%5.1fs %s", time.Since(start).Seconds(), what) }

		// hash: store2 crashes under its task; Slurm requeues the job,
		// which waits for the node and runs again when it is back.
		frozen(t, m, work, "hash@store2", 0)
		step("hash@store2 frozen: crashing store2")
		c.KillNode("store2")
		c.WaitNodeState("store2", time.Minute, "down*", "down")
		c.StartNode("store2")
		step("store2 back")

		// resolve: a task of the array is cancelled; the monitor requeues
		// it and mends the dependency of the rewrites waiting for it.
		frozen(t, m, work, "resolve", 1)
		step("resolve 001 frozen: scancel")
		scancel(t, c, jobOf(t, work, "resolve", 1))

		// rewrite: store3 crashes in the middle of its rewrite.
		frozen(t, m, work, "rewrite@store3", 0)
		step("rewrite@store3 frozen: crashing store3")
		c.KillNode("store3")
		c.WaitNodeState("store3", time.Minute, "down*", "down")
		c.StartNode("store3")
		step("store3 back")

		// hash again: only store1's slurmd dies; its task goes on.
		pid := frozen(t, m, work, "rehash@store1", 0)
		step("rehash@store1 frozen: killing store1's slurmd")
		c.KillSlurmd("store1")
		syscall.Kill(pid, syscall.SIGCONT)
		c.WaitNodeState("store1", time.Minute, "down*", "down")
		c.StartNode("store1")
		step("store1 back")

		// verify: cancelled as it starts.
		frozen(t, m, work, "verify", 0)
		step("verify frozen: scancel")
		scancel(t, c, jobOf(t, work, "verify", 0))

		// account: the monitor is killed, the task cancelled meanwhile;
		// the same command resumes the job and runs the task again.
		frozen(t, m, work, "account", 0)
		step("account frozen: killing the monitor, scancel")
		m.cmd.Process.Kill()
		<-m.done
		scancel(t, c, jobOf(t, work, "account", 0))
		first := m.stderr.String()
		m = startCluster(t, c, env, args...)
		code := m.wait(t, 5*time.Minute)
		step("done")
		t.Logf("first monitor:\n%s\nsecond monitor: exit %d\n%s", first, code, m.stderr.String())
		for _, want := range []string{"resolve 001 (Slurm job", "verify (Slurm job", "retry 1 of 3"} {
			if !strings.Contains(first, want) {
				t.Errorf("the first monitor did not say %q", want)
			}
		}
		if !strings.Contains(m.stderr.String(), "resuming job") || !strings.Contains(m.stderr.String(), "account (Slurm job") {
			t.Errorf("the second monitor did not resume the job and retry the account")
		}
		sameAsBaseline(t, b, code, work, roots, true)
		// store3's rewrite ran again, most often once the others had
		// replaced their files, and then read originals there where their
		// logs put them. Which host finishes first is Slurm's choice, so
		// this is shown, not required: remote_test.go proves the reading
		// of another host's replaced files, and sameAsBaseline the result.
		if r := remoteReads(t, work, "store3"); r.Moved == 0 {
			t.Logf("rewrite@store3 read no original from a file another host had replaced this time: %+v", r)
		}
	})
}

// TestClusterStorageDown runs the job with one storage host's nginx down:
// records that must be read from it are stale, left out of the numbered
// manifest (the exit status says so), no revisit on another host refers
// to an original there, and the other hosts are deduplicated among
// themselves with nothing lost. With the comparing resolve
// (--compare-in-resolve), which reads every copy over HTTP, its files
// stay as they were and none of its records is numbered a duplicate;
// comparing each duplicate once (the default), its own rewrite reads its
// files from its disk and may rewrite its duplicates of originals it can
// read, while the others' duplicates of its originals, kept apart by
// their rewrites, are found stale by the collisions task.
func TestClusterStorageDown(t *testing.T) {
	needCluster(t)
	base := t.TempDir()
	os.Chmod(base, 0o755)
	src := filepath.Join(base, "pristine")
	pristine(t, src)
	c := slurmtest.Start(t, hostNames...)
	for _, comparing := range []bool{true, false} {
		t.Run(fmt.Sprintf("comparing resolve %v", comparing), func(t *testing.T) {
			storageDown(t, c, src, filepath.Join(base, fmt.Sprint(comparing)), comparing)
		})
	}
}

func storageDown(t *testing.T, c *slurmtest.Cluster, src, base string, comparing bool) {
	roots := spread(t, src, base)
	st := storagetest.Start(t, storageHosts(roots)...)
	hosts := hostsFile(t, base, roots, st, false)
	down := "store2"
	before := map[string]string{}
	for _, rel := range files(t, roots[down]) {
		before[rel] = sha(t, filepath.Join(roots[down], rel))
	}
	st.Stop(down)
	work := filepath.Join(base, "work")
	args := []string{"--work-dir", work, "--http-retries", "0", hosts}
	if comparing {
		args = append([]string{"--compare-in-resolve"}, args...)
	}
	code, stderr := runCluster(t, c, args...)
	t.Logf("exit %d\n%s", code, stderr)
	rep := readStats(t, work)
	tot := rep.Totals
	if code != 1 || rep.Exit != 1 || tot.StaleLines == 0 || tot.Violations != 0 || tot.RevisitsWritten == 0 {
		t.Errorf("exit %d (stats.json %d), totals %+v: want exit 1, stale lines, revisits and no violation", code, rep.Exit, tot)
	}
	if !strings.Contains(strings.Join(rep.ExitReason, "\n"), "stale manifest lines left out") {
		t.Errorf("exit reasons %q do not name the stale lines", rep.ExitReason)
	}
	if comparing {
		for rel, want := range before {
			if sha(t, filepath.Join(roots[down], rel)) != want {
				t.Errorf("%s on %s, whose storage was down, changed", rel, down)
			}
		}
	}
	// No class with duplicates on other hosts keeps its original on the
	// host that was down; with the comparing resolve, none of its records
	// is numbered as a duplicate either.
	onDown := map[string]bool{}
	for rel := range before {
		onDown[manifest.EscapeFile(rel)] = true
	}
	f, err := os.Open(filepath.Join(work, "numbered.manifest"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := manifest.NewReader(f, "numbered.manifest")
	kept := map[string]string{} // digest ext -> file of copy 1
	var downLines int
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
		class := fmt.Sprintf("%s %d", l.Digest, l.Class)
		if onDown[l.File] {
			downLines++
		}
		switch {
		case l.IsKept():
			kept[class] = l.File
		case onDown[l.File]:
			if comparing {
				t.Errorf("%s %d on %s is numbered a duplicate", l.File, l.Offset, down)
			}
		case onDown[kept[class]]:
			t.Errorf("%s %d refers to an original on %s (%s)", l.File, l.Offset, down, kept[class])
		}
	}
	if downLines == 0 {
		t.Errorf("no line of %s's files left: the ones that needed no reading should be", down)
	}
}

func scancel(t *testing.T, c *slurmtest.Cluster, id string) {
	t.Helper()
	if out, err := c.Run("scancel", id); err != nil {
		t.Fatalf("%v %s", err, out)
	}
}

// jobOf returns the Slurm job ID of a task from the monitor's state.
func jobOf(t *testing.T, work, step string, task int) string {
	t.Helper()
	var st struct {
		Steps map[string]struct {
			Tasks []struct {
				Slurm string `json:"slurm"`
			} `json:"tasks"`
		} `json:"steps"`
	}
	data, err := os.ReadFile(filepath.Join(work, "cluster-state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st.Steps[step].Tasks[task].Slurm
}

// frozen waits until a task has frozen itself (WARCDEDUP_TEST_FREEZE) and
// returns its process ID.
func frozen(t *testing.T, m *monitor, work, step string, task int) int {
	t.Helper()
	name := filepath.Join(work, "tasks", step, strconv.Itoa(task)+".frozen")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if data, err := os.ReadFile(name); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && stopped(pid) {
				return pid
			}
		}
		select {
		case <-m.done:
			t.Fatalf("warcdedup cluster ended (exit %d) before %s froze:\n%s", m.code, step, m.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %d did not freeze:\n%s", step, task, m.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopped reports whether process pid is stopped (state T).
func stopped(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && bytes.HasPrefix(stat[i+1:], []byte(" T"))
}
