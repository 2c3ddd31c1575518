package dedup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/crawlindex"
	"warcdedup/digest"
	"warcdedup/fixity"
	"warcdedup/gzmember"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/stage"
	"warcdedup/verify"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// The crash tests kill warcdedup (SIGKILL) at chosen points of a rewrite
// or an undo. A point is found by looking: the process is stopped
// (SIGSTOP) every millisecond or so, the work directory and the files are
// looked at while nothing changes under the look, and the process is
// killed there or let go on (SIGCONT).

// watch is what a kill point looks at: the work directory of a command
// started when its rewrite log had logBase bytes.
type watch struct {
	wd      string
	logBase int64
	start   time.Time
	// journaled is when the journal was first seen, zero until then.
	journaled time.Time
}

func newWatch(wd string) *watch {
	w := &watch{wd: wd, start: time.Now()}
	if fi, err := os.Stat(filepath.Join(wd, workdir.LogFile)); err == nil {
		w.logBase = fi.Size()
	}
	return w
}

// journalIntent is a file's intent in the log's journal, as the test reads
// it: its "# file" line and where and what the new version is.
type journalIntent struct {
	header  string
	path    string
	newSize int64
	newSHA  string
}

// intents reads the whole intents of the journal, if there is one.
func (w *watch) intents() []journalIntent {
	data, err := os.ReadFile(filepath.Join(w.wd, workdir.LogFile+".pending"))
	if err != nil {
		return nil
	}
	if w.journaled.IsZero() {
		w.journaled = time.Now()
	}
	var out []journalIntent
	var cur *journalIntent
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasSuffix(line, "\n") {
			break
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "# pending "):
			p := strings.SplitN(strings.TrimPrefix(line, "# pending "), " ", 6)
			if len(p) != 6 {
				return out
			}
			size, _ := strconv.ParseInt(p[3], 10, 64)
			path, err := manifest.UnescapeFile(p[5])
			if err != nil {
				path = p[5]
			}
			cur = &journalIntent{header: "# file " + strings.Join(p[:5], " "), path: path, newSize: size, newSHA: p[4]}
		case line == "# end" && cur != nil:
			out = append(out, *cur)
			cur = nil
		}
	}
	return out
}

// renamedNotLogged returns a file whose new version is in place while its
// entries are not in the log yet (they are in the journal only): the
// instant issue 20 items 1 and 7 kill at.
func (w *watch) renamedNotLogged() (string, bool) {
	intents := w.intents()
	if len(intents) == 0 {
		return "", false
	}
	f, err := os.Open(filepath.Join(w.wd, workdir.LogFile))
	if err != nil {
		return "", false
	}
	defer f.Close()
	tail, _ := io.ReadAll(io.NewSectionReader(f, w.logBase, 1<<40))
	for _, in := range intents {
		if bytes.Contains(tail, []byte(in.header+"\n")) {
			continue
		}
		if fi, err := os.Stat(in.path); err != nil || fi.Size() != in.newSize {
			continue
		}
		if sum, err := fileSum(in.path); err == nil && sum == in.newSHA {
			return filepath.Base(in.path), true
		}
	}
	return "", false
}

func fileSum(path string) (string, error) {
	_, sum, err := fixity.FileSum(path)
	return sum, err
}

// killPoint is where a crash test kills: at says, looking at the work
// directory, whether the point is reached, and what it is.
type killPoint struct {
	name string
	at   func(w *watch) (string, bool)
}

// atRenamedNotLogged kills once a file is renamed and not logged.
var atRenamedNotLogged = killPoint{"a file renamed, its entries not logged", func(w *watch) (string, bool) {
	name, ok := w.renamedNotLogged()
	return "after renaming " + name + ", before logging it", ok
}}

// atIntents kills once the journal holds n intents.
func atIntents(n int) killPoint {
	return killPoint{fmt.Sprintf("%d files journaled", n), func(w *watch) (string, bool) {
		got := len(w.intents())
		return fmt.Sprintf("with %d files journaled", got), got >= n
	}}
}

// atJournalAge kills d after the journal was first seen: somewhere in the
// files' replacements.
func atJournalAge(d time.Duration) killPoint {
	return killPoint{fmt.Sprintf("%v into the replacements", d), func(w *watch) (string, bool) {
		w.intents()
		if w.journaled.IsZero() || time.Since(w.journaled) < d {
			return "", false
		}
		return fmt.Sprintf("%v after the journal began (%d files journaled)", time.Since(w.journaled).Round(time.Millisecond), len(w.intents())), true
	}}
}

// atAge kills d after the command started, whatever it is doing.
func atAge(d time.Duration) killPoint {
	return killPoint{fmt.Sprintf("%v after the start", d), func(w *watch) (string, bool) {
		return fmt.Sprintf("%v after the start", time.Since(w.start).Round(time.Millisecond)), time.Since(w.start) >= d
	}}
}

// killAt runs cmd and kills it at p. It returns where it killed it (""
// if the command ended first) and the command's exit status otherwise.
func killAt(t *testing.T, cmd *exec.Cmd, wd string, p killPoint) (where string, status int) {
	t.Helper()
	r := startWatched(t, cmd, wd)
	if where, status = r.stopAt(p); where != "" {
		r.kill()
	}
	return where, status
}

// stopAt runs cmd until p holds, and leaves it stopped (SIGSTOP) there:
// where says where ("" if it ended first), finish continues it and gives
// its exit status and standard error once it ends.
func stopAt(t *testing.T, cmd *exec.Cmd, wd string, p killPoint) (where string, finish func() (int, []byte)) {
	t.Helper()
	r := startWatched(t, cmd, wd)
	if where, _ = r.stopAt(p); where == "" {
		return "", nil
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return where, r.finish
}

// watchedRun is a command started with its work directory watched
// (newWatch), to be stopped, killed or continued at a kill point.
type watchedRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	w      *watch
	stderr bytes.Buffer
	done   chan error // its Wait's
}

func startWatched(t *testing.T, cmd *exec.Cmd, wd string) *watchedRun {
	t.Helper()
	r := &watchedRun{t: t, cmd: cmd, w: newWatch(wd), done: make(chan error, 1)}
	cmd.Stderr = &r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- cmd.Wait() }()
	return r
}

// stopAt stops the command (SIGSTOP) once p holds and returns where; ""
// and its exit status if it ended first.
func (r *watchedRun) stopAt(p killPoint) (where string, status int) {
	pid := r.cmd.Process.Pid
	for {
		select {
		case err := <-r.done:
			return "", exitStatus(r.t, err, r.stderr.Bytes())
		case <-time.After(time.Millisecond):
		}
		if syscall.Kill(pid, syscall.SIGSTOP) != nil {
			continue
		}
		if !waitStopped(pid) {
			syscall.Kill(pid, syscall.SIGCONT)
			continue // it ended meanwhile: done says how
		}
		if what, ok := p.at(r.w); ok {
			return what, 0
		}
		syscall.Kill(pid, syscall.SIGCONT)
	}
}

// kill kills the stopped command and waits for it.
func (r *watchedRun) kill() {
	syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.done
}

// finish continues the stopped command and gives its exit status and
// standard error once it ends.
func (r *watchedRun) finish() (int, []byte) {
	syscall.Kill(r.cmd.Process.Pid, syscall.SIGCONT)
	err := <-r.done
	return exitStatus(r.t, err, r.stderr.Bytes()), r.stderr.Bytes()
}

// waitStopped waits until the process is stopped (state T in /proc), and
// reports whether it is.
func waitStopped(pid int) bool {
	for range 2000 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) {
			switch data[i+2] {
			case 'T', 't':
				return true
			case 'Z', 'X':
				return false
			}
		}
		time.Sleep(50 * time.Microsecond)
	}
	return false
}

func exitStatus(t *testing.T, err error, stderr []byte) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.Exited():
		if bytes.Contains(stderr, []byte("panic:")) {
			t.Fatalf("warcdedup panicked:\n%s", stderr)
		}
		return ee.ExitCode()
	}
	t.Fatalf("warcdedup: %v\n%s", err, stderr)
	return -1
}

// warcdedup returns the command warcdedup ARGS, quiet, two jobs.
func warcdedup(args ...string) *exec.Cmd {
	return exec.Command(binPath, append([]string{args[0], "-q", "-j", "2"}, args[1:]...)...)
}

// mustWarcdedup runs warcdedup ARGS and fails the test unless it exits 0.
func mustWarcdedup(t *testing.T, args ...string) {
	t.Helper()
	if out, err := warcdedup(args...).CombinedOutput(); err != nil {
		t.Fatalf("warcdedup %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// records lists the collection's records as warcsum does, with SHA-256
// payload digests: the record by record state a crash test compares.
func records(t *testing.T, dir string) []byte {
	t.Helper()
	inputs, err := warcsum.Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var damaged []string
	opt := warcsum.Options{Algorithm: digest.SHA256, Damage: func(err error) { damaged = append(damaged, err.Error()) }}
	if _, err := (&warcsum.Runner{Options: opt, Jobs: 2}).Run(inputs, &out); err != nil {
		t.Fatal(err)
	}
	if len(damaged) > 0 {
		t.Errorf("damaged records: %v", damaged)
	}
	return out.Bytes()
}

// noLoss checks, as warcsumcmp does, that every record of the original
// listing is in the collection now, as itself or as a revisit resolving
// to a response of the same SHA-256 payload, and that the files read whole.
func noLoss(t *testing.T, what string, original []byte, dir string) {
	t.Helper()
	now := records(t, dir)
	var violations []string
	st, err := verify.Rewrite(manifest.NewReader(bytes.NewReader(original), "original"), manifest.NewReader(bytes.NewReader(now), "now"),
		func(v string) { violations = append(violations, v) })
	if err != nil {
		t.Fatalf("%s: verify: %v", what, err)
	}
	if st.Violations > 0 {
		t.Errorf("%s: %d records lost: %v", what, st.Violations, stage.First(violations, 5))
	}
}

// crashCollection is the generated collection of the crash tests: its
// copies, how the uninterrupted job leaves it, and its records. Its
// .warc.gz files are written as Heritrix writes them (zlib, level 6), in a
// build with zlib: undo rebuilds every member, and gives every file back
// bit for bit.
type crashCollection struct {
	src          string            // the original files
	deduplicated map[string]string // SHA-256 of each file after an uninterrupted run
	original     map[string]string // SHA-256 of each file's uncompressed bytes before any run
	files        map[string]string // SHA-256 of each file before any run
	records      []byte            // warcsum of the original, SHA-256 digests
	names        []string
}

func newCrashCollection(t *testing.T, cfg gen.Config) *crashCollection {
	t.Helper()
	src, res := generated(t, cfg)
	zlibCollection(t, src)
	c := &crashCollection{src: src, original: hashUncompressed(t, src), files: hashTree(t, src), records: records(t, src), names: res.Names}
	ref := filepath.Join(t.TempDir(), "ref")
	copyTree(t, src, ref)
	mustWarcdedup(t, "run", "--work-dir", ref+".work", ref)
	c.deduplicated = hashTree(t, ref)
	return c
}

// afterRunUndo copies the collection into a new directory, runs the job
// and undoes it: the state issue 20 item 1 starts from.
func (c *crashCollection) afterRunUndo(t *testing.T) (coll, wd string) {
	t.Helper()
	coll = filepath.Join(t.TempDir(), "coll")
	copyTree(t, c.src, coll)
	wd = coll + ".work"
	mustWarcdedup(t, "run", "--work-dir", wd, coll)
	mustWarcdedup(t, "undo", "--work-dir", wd, coll)
	c.undone(t, "after run and undo", coll, wd)
	return coll, wd
}

// undone checks a collection after an undo that finished: every file as
// it was before any run, uncompressed and, where undo can rebuild every
// gzip member, bit for bit; and undo.json saying so.
func (c *crashCollection) undone(t *testing.T, what, coll, wd string) {
	t.Helper()
	sameTree(t, what+" (uncompressed)", hashUncompressed(t, coll), c.original)
	if !gzmember.Available() {
		return
	}
	sameTree(t, what+" (bit for bit)", hashTree(t, coll), c.files)
	data, err := os.ReadFile(filepath.Join(wd, workdir.UndoStatsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res UndoResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.BytesDiffer != 0 || res.BitExact == 0 || res.Stats.Members.Recompressed() != 0 {
		t.Errorf("%s: undo.json says %d files restored bit for bit, %d not (%v), members %+v", what, res.BitExact, res.BytesDiffer, res.Differ, res.Stats.Members)
	}
}

// zlibCollection writes every .warc.gz file under dir again with each
// gzip member compressed by zlib at level 6, as Heritrix writes them (in a
// build with zlib).
func zlibCollection(t *testing.T, dir string) {
	t.Helper()
	if !gzmember.Available() {
		return
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no .warc.gz file in %s (%v)", dir, err)
	}
	hdr := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0} // Java's GZIPOutputStream
	for _, name := range names {
		warctest.ZlibCopy(t, name, name, hdr, gzmember.Setting{Level: 6, MemLevel: 8, WindowBits: 15})
	}
}

// checkLogged checks that every file the log names has the size and
// SHA-256 of the log's last replacement of it, and no block is missing
// entries.
func checkLogged(t *testing.T, what, coll, wd string) {
	t.Helper()
	m, err := rewritelog.LoadFile(filepath.Join(wd, workdir.LogFile), time.Time{})
	if err != nil {
		t.Fatalf("%s: the log: %v", what, err)
	}
	for _, f := range m.Files() {
		if err := m.Incomplete(f.Name); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		v, ok := m.Version(f.Name)
		if !ok {
			t.Errorf("%s: the log has no \"# file\" line of %s", what, f.Name)
			continue
		}
		if sum, err := fileSum(filepath.Join(coll, f.Name)); err != nil || sum != v.NewSum {
			t.Errorf("%s: %s has %s (%v), the log's last replacement of it %s", what, f.Name, sum, err, v.NewSum)
		}
	}
	if _, err := os.Stat(filepath.Join(wd, workdir.LogFile+".pending")); err == nil {
		t.Errorf("%s: the journal is left after a finished command", what)
	}
}

var crashCfg = gen.Config{Files: 6, Records: 1200, DupRate: 0.4, Seed: 7, MeanPayload: 12 << 10, NonCandidates: true,
	Chunked: 0.1, ReplayVariants: 0.1, Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11, gen.ARCGz}}

// TestKillRunAfterUndo is issue 20 item 1: a collection deduplicated,
// undone, deduplicated again and that run killed between a file's rename
// and its entries reaching the log (the new version is byte for byte the
// first run's). The same command then finishes, equal to an uninterrupted
// run, and undo gives every file back.
func TestKillRunAfterUndo(t *testing.T) {
	c := newCrashCollection(t, crashCfg)
	for attempt := 1; ; attempt++ {
		coll, wd := c.afterRunUndo(t)
		where, _ := killAt(t, warcdedup("run", "--work-dir", wd, coll), wd, atRenamedNotLogged)
		if where == "" {
			if attempt == 10 {
				t.Fatal("in 10 runs no file was seen renamed and not logged")
			}
			continue
		}
		t.Logf("attempt %d: killed %s", attempt, where)
		noLoss(t, "killed", c.records, coll)
		cmd := warcdedup("run", "--work-dir", wd, coll)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the same run again: %v\n%s", err, out)
		}
		sameTree(t, "run again after the kill", hashTree(t, coll), c.deduplicated)
		checkLogged(t, "run again after the kill", coll, wd)
		if out, err := warcdedup("undo", "--work-dir", wd, coll).CombinedOutput(); err != nil {
			t.Fatalf("undo: %v\n%s", err, out)
		}
		c.undone(t, "undone", coll, wd)
		return
	}
}

// TestKillUndoAfterRename is issue 20 item 7 (c): an undo killed between a
// file's rename and its entries reaching the log. The undo run again
// finishes with exit status 0 (the file it restored before the kill is not
// refused), every file as it was.
func TestKillUndoAfterRename(t *testing.T) {
	c := newCrashCollection(t, crashCfg)
	for attempt := 1; ; attempt++ {
		coll := filepath.Join(t.TempDir(), "coll")
		copyTree(t, c.src, coll)
		wd := coll + ".work"
		mustWarcdedup(t, "run", "--work-dir", wd, coll)
		where, _ := killAt(t, warcdedup("undo", "--work-dir", wd, coll), wd, atRenamedNotLogged)
		if where == "" {
			if attempt == 10 {
				t.Fatal("in 10 undos no file was seen renamed and not logged")
			}
			continue
		}
		t.Logf("attempt %d: killed %s", attempt, where)
		noLoss(t, "killed", c.records, coll)
		if out, err := warcdedup("undo", "--work-dir", wd, coll).CombinedOutput(); err != nil {
			t.Fatalf("the same undo again: %v\n%s", err, out)
		}
		c.undone(t, "undone after the kill", coll, wd)
		checkLogged(t, "undone after the kill", coll, wd)
		return
	}
}

// TestCrashRunUndo is the crash test of issue 20: on a generated
// collection, deduplicated and undone once, each round runs the job again
// and kills it (SIGKILL) at a random point of its rewrite, sometimes twice,
// runs it to the end, then undoes it with kills at random points too, and
// runs the undo to the end. After every kill no record of the collection
// is lost (each is there, byte for byte by SHA-256, or a revisit resolving
// to a response of its payload: warcsumcmp's check); every finished run
// leaves the files as an uninterrupted run does, every finished undo as
// they were (uncompressed, record for record, and bit for bit: the
// collection's .warc.gz files are zlib's, whose members undo rebuilds),
// and both leave a log that names each file's version and no journal. It
// logs every kill and the outcome.
func TestCrashRunUndo(t *testing.T) {
	if testing.Short() {
		t.Skip("kills warcdedup more than 20 times")
	}
	start := time.Now()
	c := newCrashCollection(t, crashCfg)
	snap := filepath.Join(t.TempDir(), "snap")
	coll0, wd0 := c.afterRunUndo(t)
	copyTree(t, coll0, snap)
	copyTree(t, wd0, snap+".work")
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("WARCDEDUP_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(20, seed))
	t.Logf("collection: %d files; seed %d (WARCDEDUP_CRASH_SEED repeats it)", len(c.names), seed)
	// Ten rounds, and more (up to twenty) while fewer than 20 kills were
	// made: a command may end before its kill point comes.
	const rounds = 10
	kills, finished := 0, 0
	points := func(undo bool) killPoint {
		switch n := rng.IntN(4); {
		case n == 0:
			return atRenamedNotLogged
		case n == 1:
			return atIntents(1 + rng.IntN(len(c.names)-1))
		case undo:
			return atAge(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
		default:
			return atJournalAge(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
		}
	}
	// phase kills a command at random points until it ends on its own,
	// at most maxKills times, checking after each kill that nothing is
	// lost, and returns its exit status.
	phase := func(round int, what, coll, wd string, maxKills int, args ...string) int {
		for k := 0; ; k++ {
			cmd := warcdedup(args...)
			if k == maxKills {
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				status := exitStatus(t, cmd.Run(), stderr.Bytes())
				if status != 0 {
					t.Errorf("round %d: %s, run to the end: exit %d\n%s", round, what, status, stderr.Bytes())
				}
				return status
			}
			p := points(what == "undo")
			where, status := killAt(t, cmd, wd, p)
			if where == "" {
				finished++
				t.Logf("round %d: %s finished (exit %d) before the kill meant for %s", round, what, status, p.name)
				if status != 0 {
					t.Errorf("round %d: %s: exit %d", round, what, status)
				}
				return status
			}
			kills++
			noLoss(t, fmt.Sprintf("round %d, %s killed %s", round, what, where), c.records, coll)
			t.Logf("kill %2d: round %d, %s killed %s: no record lost", kills, round, what, where)
		}
	}
	for round := 1; (round <= rounds || kills < 20 && round <= 2*rounds) && !t.Failed(); round++ {
		coll := filepath.Join(t.TempDir(), "coll")
		wd := coll + ".work"
		copyTree(t, snap, coll)
		copyTree(t, snap+".work", wd)
		if phase(round, "run", coll, wd, 1+rng.IntN(2), "run", "--work-dir", wd, coll) == 0 {
			sameTree(t, fmt.Sprintf("round %d: the run finished", round), hashTree(t, coll), c.deduplicated)
			noLoss(t, fmt.Sprintf("round %d: the run finished", round), c.records, coll)
			checkLogged(t, fmt.Sprintf("round %d: the run finished", round), coll, wd)
		}
		if phase(round, "undo", coll, wd, 1+rng.IntN(2), "undo", "--work-dir", wd, coll) == 0 {
			c.undone(t, fmt.Sprintf("round %d: the undo finished", round), coll, wd)
			checkLogged(t, fmt.Sprintf("round %d: the undo finished", round), coll, wd)
		}
	}
	t.Logf("%d kills (%d commands finished before their kill) in %v: %s", kills, finished, time.Since(start).Round(time.Second),
		map[bool]string{true: "FAILED", false: "every end state as it must be"}[t.Failed()])
	if kills < 20 && !t.Failed() {
		t.Errorf("only %d kills, want at least 20", kills)
	}
}

// TestSoak is the long crash test (make soak, not in make test: set
// WARCDEDUP_SOAK=1): the rounds of TestCrashRunUndo, more of them and with
// up to three kills per command, then rounds on a crawl index: run --index
// of a crawl deduplicated against a committed one, index remove --restore
// of the committed crawl, index remove and undo of the other, each killed
// at random points and run to the end. After every kill no record is lost;
// after every command run to the end, the index verifies (--deep), the
// removal left the remaining crawl whole on its own, and the undo gave
// the crawl's files back. It logs every kill and the outcome; at least
// 200 kills in all.
func TestSoak(t *testing.T) {
	if os.Getenv("WARCDEDUP_SOAK") != "1" {
		t.Skip("the soak runs with WARCDEDUP_SOAK=1 (make soak)")
	}
	start := time.Now()
	rounds, indexRounds := 45, 22
	if n, err := strconv.Atoi(os.Getenv("WARCDEDUP_SOAK_ROUNDS")); err == nil {
		rounds, indexRounds = n, n/2
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("WARCDEDUP_SOAK_SEED"), 10, 64); err == nil {
		seed = s
	}
	s := &soak{t: t, rng: rand.New(rand.NewPCG(20, seed)), kills: map[string]int{}}
	t.Logf("seed %d (WARCDEDUP_SOAK_SEED repeats it)", seed)
	s.collectionRounds(rounds)
	if !t.Failed() {
		s.indexRounds(indexRounds, 200)
	}
	total := s.total()
	t.Logf("%d kills in %v (%v), %d commands finished before their kill: %s", total, time.Since(start).Round(time.Second), s.kills, s.finished,
		map[bool]string{true: "FAILED", false: "every end state as it must be"}[t.Failed()])
	if total < 200 && !t.Failed() {
		t.Errorf("only %d kills, want at least 200", total)
	}
}

// soak is the state of TestSoak: its random source and its counts.
type soak struct {
	t        *testing.T
	rng      *rand.Rand
	kills    map[string]int // by command
	finished int
}

// total is the number of kills made.
func (s *soak) total() int {
	n := 0
	for _, k := range s.kills {
		n += k
	}
	return n
}

// point picks a kill point: a file renamed and not logged, a number of
// files journaled, or a time after the start up to full (the command's
// uninterrupted time).
func (s *soak) point(files int, full time.Duration) killPoint {
	switch s.rng.IntN(4) {
	case 0:
		return atRenamedNotLogged
	case 1:
		return atIntents(1 + s.rng.IntN(max(files-1, 1)))
	default:
		return atAge(time.Duration(s.rng.Int64N(int64(full) + 1)))
	}
}

// phase runs the command args made by cmd, watching the work directory
// wd, killed up to maxKills times at random points, and then to the end;
// after each kill check says what must hold. It returns the last exit
// status.
func (s *soak) phase(what string, cmd func() *exec.Cmd, wd string, files int, full time.Duration, maxKills int, check func(where string)) int {
	t := s.t
	for k := 0; ; k++ {
		c := cmd()
		if k == maxKills {
			var stderr bytes.Buffer
			c.Stderr = &stderr
			status := exitStatus(t, c.Run(), stderr.Bytes())
			if status != 0 {
				t.Errorf("%s, run to the end: exit %d\n%s", what, status, stderr.Bytes())
			}
			return status
		}
		p := s.point(files, full)
		where, status := killAt(t, c, wd, p)
		if where == "" {
			s.finished++
			if status != 0 {
				t.Errorf("%s: exit %d before the kill meant for %s", what, status, p.name)
			}
			return status
		}
		cmdName, _, _ := strings.Cut(what, " (")
		s.kills[cmdName]++
		check(where)
		t.Logf("kill: %s killed %s: as it must be", what, where)
	}
}

// collectionRounds are TestCrashRunUndo's rounds.
func (s *soak) collectionRounds(rounds int) {
	t := s.t
	c := newCrashCollection(t, crashCfg)
	snap := filepath.Join(t.TempDir(), "snap")
	coll0, wd0 := c.afterRunUndo(t)
	copyTree(t, coll0, snap)
	copyTree(t, wd0, snap+".work")
	full := 600 * time.Millisecond
	for round := 1; round <= rounds && !t.Failed(); round++ {
		coll := filepath.Join(t.TempDir(), "coll")
		wd := coll + ".work"
		copyTree(t, snap, coll)
		copyTree(t, snap+".work", wd)
		lost := func(what string) func(string) {
			return func(where string) {
				noLoss(t, fmt.Sprintf("round %d, %s killed %s", round, what, where), c.records, coll)
			}
		}
		run := func() *exec.Cmd { return warcdedup("run", "--work-dir", wd, coll) }
		if s.phase(fmt.Sprintf("run (round %d)", round), run, wd, len(c.names), full, 1+s.rng.IntN(3), lost("run")) == 0 {
			sameTree(t, fmt.Sprintf("round %d: the run finished", round), hashTree(t, coll), c.deduplicated)
			checkLogged(t, fmt.Sprintf("round %d: the run finished", round), coll, wd)
		}
		undo := func() *exec.Cmd { return warcdedup("undo", "--work-dir", wd, coll) }
		if s.phase(fmt.Sprintf("undo (round %d)", round), undo, wd, len(c.names), full, 1+s.rng.IntN(3), lost("undo")) == 0 {
			c.undone(t, fmt.Sprintf("round %d: the undo finished", round), coll, wd)
			checkLogged(t, fmt.Sprintf("round %d: the undo finished", round), coll, wd)
		}
		rm(coll, wd)
	}
}

func rm(paths ...string) {
	for _, p := range paths {
		os.RemoveAll(p)
	}
}

// indexRounds are the rounds on a crawl index: crawl-0 committed, then
// crawl-1 run against it, crawl-0 removed with --restore, crawl-1 removed
// and undone; more than rounds (up to twice) while fewer than minKills
// kills were made in all.
func (s *soak) indexRounds(rounds, minKills int) {
	t := s.t
	src := filepath.Join(t.TempDir(), "crawls")
	monthly(t, src)
	originalRecords := records(t, src)
	crawl1Records := records(t, filepath.Join(src, "crawl-1"))
	crawl1Original := hashUncompressed(t, filepath.Join(src, "crawl-1"))
	snap := filepath.Join(t.TempDir(), "snap")
	copyTree(t, src, snap)
	if out, err := exec.Command(binPath, "run", "-q", "-j", "2", "--index", snap+".ix", filepath.Join(snap, "crawl-0")).CombinedOutput(); err != nil {
		t.Fatalf("crawl-0: %v\n%s", err, out)
	}
	// The uninterrupted commands, and their times.
	ref := filepath.Join(t.TempDir(), "ref")
	copyTree(t, snap, ref)
	copyTree(t, snap+".ix", ref+".ix")
	timed := func(args ...string) time.Duration {
		start := time.Now()
		if out, err := exec.Command(binPath, args...).CombinedOutput(); err != nil {
			t.Fatalf("warcdedup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return time.Since(start)
	}
	fullRun := timed("run", "-q", "-j", "2", "--index", ref+".ix", filepath.Join(ref, "crawl-1"))
	deduplicated := hashTree(t, ref)
	fullRemove := timed("index", "remove", "-j", "2", "--restore", "--index", ref+".ix", "crawl-0")
	timed("index", "remove", "--index", ref+".ix", "crawl-1")
	fullUndo := timed("undo", "-q", "-j", "2", "--index", ref+".ix", filepath.Join(ref, "crawl-1"))
	t.Logf("crawl index: run --index %v, index remove --restore %v, undo %v", fullRun.Round(time.Millisecond), fullRemove.Round(time.Millisecond), fullUndo.Round(time.Millisecond))
	files := 3
	for round := 1; (round <= rounds || s.total() < minKills && round <= 2*rounds) && !t.Failed(); round++ {
		crawls, ix := filepath.Join(t.TempDir(), "crawls"), filepath.Join(t.TempDir(), "ix")
		copyTree(t, snap, crawls)
		copyTree(t, snap+".ix", ix)
		wd := filepath.Join(ix, "work", "crawl-1")
		crawl1 := filepath.Join(crawls, "crawl-1")
		lost := func(what string, want []byte, dir string) func(string) {
			return func(where string) {
				noLoss(t, fmt.Sprintf("round %d, %s killed %s", round, what, where), want, dir)
			}
		}
		verified := func(what string) {
			out, err := exec.Command(binPath, "index", "verify", "--deep", "--index", ix).CombinedOutput()
			if err != nil {
				t.Errorf("round %d: %s: index verify --deep: %v\n%s", round, what, err, out)
			}
		}
		committed := func(crawl string) bool {
			x, err := crawlindex.Open(ix)
			return err != nil || x.Registry.Crawl(crawl) != nil
		}

		run := func() *exec.Cmd { return exec.Command(binPath, "run", "-q", "-j", "2", "--index", ix, crawl1) }
		if s.phase(fmt.Sprintf("run --index (round %d)", round), run, wd, files, fullRun, 1+s.rng.IntN(2), lost("run --index", originalRecords, crawls)) == 0 {
			sameTree(t, fmt.Sprintf("round %d: run --index finished", round), hashTree(t, crawls), deduplicated)
			verified("run --index finished")
		}
		remove := func() *exec.Cmd {
			if !committed("crawl-0") {
				// The killed remove had committed the removal.
				return exec.Command("true")
			}
			return exec.Command(binPath, "index", "remove", "-j", "2", "--restore", "--index", ix, "crawl-0")
		}
		if s.phase(fmt.Sprintf("remove --restore (round %d)", round), remove, wd, files, fullRemove, 1+s.rng.IntN(2), lost("remove --restore", originalRecords, crawls)) == 0 {
			verified("index remove --restore finished")
			noLoss(t, fmt.Sprintf("round %d: crawl-1 on its own after crawl-0's removal", round), crawl1Records, crawl1)
		}
		if out, err := exec.Command(binPath, "index", "remove", "--index", ix, "crawl-1").CombinedOutput(); err != nil {
			t.Fatalf("round %d: index remove crawl-1: %v\n%s", round, err, out)
		}
		undo := func() *exec.Cmd { return exec.Command(binPath, "undo", "-q", "-j", "2", "--index", ix, crawl1) }
		if s.phase(fmt.Sprintf("undo --index (round %d)", round), undo, wd, files, fullUndo, 1+s.rng.IntN(2), lost("undo --index", crawl1Records, crawl1)) == 0 {
			sameTree(t, fmt.Sprintf("round %d: the undo finished (uncompressed)", round), hashUncompressed(t, crawl1), crawl1Original)
			checkLogged(t, fmt.Sprintf("round %d: the undo finished", round), crawls, wd)
		}
		rm(crawls, ix)
	}
}
