package dedup

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/archname"
	"warcdedup/atomicfile"
	"warcdedup/migrate"
	"warcdedup/workdir"
)

// killWhen starts cmd and kills it (SIGKILL) the first time when says so,
// polling. It returns whether the kill came before the command ended, and
// how long the command ran.
func killWhen(t *testing.T, cmd *exec.Cmd, when func() bool) (bool, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	for {
		select {
		case <-done:
			return false, time.Since(start)
		default:
		}
		if when() {
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled(), time.Since(start)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// killDelays draws the instants at which commands of each kind (a first
// run, a resumed one) are killed: at random below the longest such a
// command is known to last, at first an uninterrupted command's time.
// A command that ends before its kill shows that its kind may last no
// longer than it ran, and the bound moves halfway to that: resumed
// commands are shorter than a whole one, and a whole one timed on a
// loaded machine may be far longer than the next, so that fixed bounds
// miss most kills (CI once had 28 of 40 runs end first); halfway, not all
// the way, so that one command that had little left to do does not keep
// every later kill of its kind in the first milliseconds.
type killDelays struct {
	rng   *rand.Rand
	bound map[string]time.Duration
	full  time.Duration
}

func newKillDelays(rng *rand.Rand, full time.Duration) *killDelays {
	return &killDelays{rng: rng, bound: map[string]time.Duration{}, full: full}
}

// draw returns a delay for a command of kind.
func (k *killDelays) draw(kind string) time.Duration {
	b, ok := k.bound[kind]
	if !ok {
		b = k.full
	}
	return time.Duration(k.rng.Int64N(int64(b) + 1))
}

// ended notes that a command of kind ended, by itself, after ran.
func (k *killDelays) ended(kind string, ran time.Duration) {
	b, ok := k.bound[kind]
	if !ok {
		b = k.full
	}
	if ran < b {
		k.bound[kind] = (b + ran) / 2
	}
}

// arcWARCName is the name the conversion gives an ARC file's WARC.
func arcWARCName(arc string) string {
	return strings.TrimSuffix(strings.TrimSuffix(arc, ".gz"), ".arc") + ".warc.gz"
}

// checkNoARCLost: every ARC gone from dir has its WARC there and its proof
// (or its conversion.map line) in the work directory wd.
func checkNoARCLost(t *testing.T, what, dir, wd string, arcs []string) {
	t.Helper()
	m, _ := os.ReadFile(filepath.Join(wd, migrate.MapFile))
	for _, a := range arcs {
		if _, err := os.Stat(filepath.Join(dir, a)); err == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, arcWARCName(a))); err != nil {
			t.Errorf("%s: %s is gone, its WARC not in place: %v", what, a, err)
		}
		if _, err := os.Stat(filepath.Join(wd, migrate.ProofDir, a+".proof")); err != nil && !bytes.Contains(m, []byte(a)) {
			t.Errorf("%s: %s is gone without a proof", what, a)
		}
	}
}

// tempLeft names the temporary files left in dir (recursively).
func tempLeft(dir string) []string {
	var left []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(fi.Name(), atomicfile.TempPrefix) {
			left = append(left, p)
		}
		return nil
	})
	return left
}

// readFixity reads the work directory's fixity.tsv: each replaced file's
// SHA-256 after the job.
func readFixity(t *testing.T, wd string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(wd, workdir.FixityFile))
	if err != nil {
		t.Fatal(err)
	}
	after := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if len(f) != 5 {
			t.Fatalf("fixity.tsv: %q: not 5 fields", line)
		}
		after[f[0]] = f[4]
	}
	return after
}

// TestLegacyJobKills is issue 24's kill proof of the legacy ARC job: on a
// mostly-ARC collection, warcdedup run --convert-arc killed (SIGKILL) at
// least 20 times, at the events of the conversion (a WARC being written,
// a proof written, an ARC gone) and at seeded random instants over a whole
// job, its resumed run killed again at a random instant; then warcdedup
// commit --to COPY killed at least 10 times the same way. After each kill
// no ARC is gone without its WARC and its proof, in the collection and
// in the second copy, and each file of the copy is its old version or the
// new one (fixity.tsv's SHA-256, the collection's); after the rerun, the
// job is done: no ARC left, nothing lost (warcsumcmp's check against the
// collection as it was), no temporary file left, and the copy equal to
// the collection by SHA-256.
//
// About half a minute: make test-crash runs it (WARCDEDUP_TEST_LEGACY_KILLS=1);
// WARCDEDUP_LEGACY_SEED repeats another seed.
func TestLegacyJobKills(t *testing.T) {
	if testing.Short() || os.Getenv("WARCDEDUP_TEST_LEGACY_KILLS") != "1" {
		t.Skip("kills warcdedup 30 times (about half a minute): make test-crash sets WARCDEDUP_TEST_LEGACY_KILLS=1")
	}
	seed := uint64(24)
	if s, err := strconv.ParseUint(os.Getenv("WARCDEDUP_LEGACY_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(24, seed))
	start := time.Now()
	src, _ := generated(t, arcCfg)
	arcs := arcNames(t, src)
	if len(arcs) < 4 {
		t.Fatalf("the generated collection has %d ARC files", len(arcs))
	}
	before := listing(t, src)
	pristine := hashTree(t, src)
	run := func(coll, wd string) *exec.Cmd {
		return exec.Command(binPath, "run", "-q", "--convert-arc", "-j", "2", "--work-dir", wd, coll)
	}
	commit := func(coll, wd, copyDir string) *exec.Cmd {
		return exec.Command(binPath, "commit", "-q", "--to", copyDir, "--work-dir", wd, coll)
	}
	exists := func(dir string, match func(string) bool) bool {
		entries, _ := os.ReadDir(dir)
		return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return match(e.Name()) })
	}
	isTemp := func(n string) bool { return strings.HasPrefix(n, atomicfile.TempPrefix) }
	after := func(d time.Duration) func() bool {
		at := time.Now().Add(d)
		return func() bool { return time.Now().After(at) }
	}

	// How long an uninterrupted job takes here.
	ref := filepath.Join(t.TempDir(), "ref")
	copyTree(t, src, ref)
	t0 := time.Now()
	if out, err := run(ref, ref+".work").CombinedOutput(); err != nil {
		t.Fatalf("warcdedup run: %v\n%s", err, out)
	}
	fullRun := time.Since(t0)
	want := hashTree(t, ref)

	// The job: each round a fresh collection, the run killed at a point,
	// the resumed run killed at a random instant, then run to the end.
	type point struct {
		name string
		// kind is a kill at a random instant's kind (see killDelays), ""
		// for a kill at an event.
		kind string
		when func(coll, wd string) func() bool
	}
	delays := newKillDelays(rng, fullRun)
	events := []point{
		{"as a WARC is written", "", func(coll, _ string) func() bool {
			return func() bool { return exists(coll, isTemp) }
		}},
		{"once a proof is written", "", func(_, wd string) func() bool {
			return func() bool {
				return exists(filepath.Join(wd, migrate.ProofDir), func(n string) bool { return strings.HasSuffix(n, ".proof") })
			}
		}},
		{"once an ARC is gone", "", func(coll, _ string) func() bool {
			return func() bool { return len(arcNames(t, coll)) < len(arcs) }
		}},
	}
	// Rounds go on (up to 20) until 20 kills were made: a resumed run
	// often ends before its kill comes.
	runKills, runEnded := 0, 0
	var coll, wd string
	for round := 0; round < 10 || runKills < 20 && round < 20; round++ {
		coll = filepath.Join(t.TempDir(), "coll")
		copyTree(t, src, coll)
		wd = coll + ".work"
		first := point{}
		if round < len(events) {
			first = events[round]
		} else {
			d := delays.draw("run")
			first = point{fmt.Sprintf("after %v", d.Round(time.Millisecond)), "run", func(string, string) func() bool { return after(d) }}
		}
		d := delays.draw("resumed run")
		second := point{fmt.Sprintf("resumed, after %v", d.Round(time.Millisecond)), "resumed run", func(string, string) func() bool { return after(d) }}
		for _, p := range []point{first, second} {
			what := fmt.Sprintf("run round %d, killed %s", round, p.name)
			if killed, ran := killWhen(t, run(coll, wd), p.when(coll, wd)); !killed {
				if p.kind != "" {
					delays.ended(p.kind, ran)
				}
				runEnded++
				t.Logf("%s: the run ended before the kill", what)
				continue
			}
			runKills++
			checkNoARCLost(t, what, coll, wd, arcs)
		}
		what := fmt.Sprintf("run round %d (%s; %s)", round, first.name, second.name)
		if out, err := run(coll, wd).CombinedOutput(); err != nil {
			t.Fatalf("%s: the rerun: %v\n%s", what, err, out)
		}
		if left := arcNames(t, coll); len(left) > 0 {
			t.Errorf("%s: ARC files left after the rerun: %v", what, left)
		}
		if v := lostRecords(t, before, listing(t, coll)); len(v) > 0 {
			t.Errorf("%s: records lost: %s", what, strings.Join(v, "\n"))
		}
		for _, d := range []string{coll, wd} {
			if left := tempLeft(d); len(left) > 0 {
				t.Errorf("%s: temporary files left: %v", what, left)
			}
		}
		if entries, _ := os.ReadDir(filepath.Join(wd, workdir.TmpDir)); len(entries) > 0 {
			t.Errorf("%s: %d files left in the work directory's %s", what, len(entries), workdir.TmpDir)
		}
		if got := hashTree(t, coll); len(got) != len(want) {
			t.Errorf("%s: %d files, an uninterrupted job leaves %d", what, len(got), len(want))
		}
		if t.Failed() {
			return
		}
	}

	// The second copy: the last round's job, committed to a copy of the
	// collection as it was, each commit killed at a point, the rerun
	// killed at a random instant, then run to the end.
	final := hashTree(t, coll)
	for name, sum := range readFixity(t, wd) {
		if final[name] != sum {
			t.Fatalf("fixity.tsv gives %s SHA-256 %s, the collection holds %s", name, sum, final[name])
		}
	}
	t0 = time.Now()
	refCopy := filepath.Join(t.TempDir(), "refcopy")
	copyTree(t, src, refCopy)
	if out, err := commit(coll, wd, refCopy).CombinedOutput(); err != nil {
		t.Fatalf("warcdedup commit: %v\n%s", err, out)
	}
	fullCommit := time.Since(t0)
	commitDelays := newKillDelays(rng, fullCommit)
	// checkCopy: each file of the copy is its old version or its new one,
	// an ARC gone only where its WARC is there in its new version.
	checkCopy := func(what, copyDir string) {
		t.Helper()
		got := hashTree(t, copyDir)
		for name, sum := range got {
			if isTemp(filepath.Base(name)) {
				continue
			}
			if sum != pristine[name] && sum != final[name] {
				t.Errorf("%s: the copy's %s is neither its old version nor its new one", what, name)
			}
		}
		for name := range pristine {
			if _, ok := got[name]; ok {
				continue
			}
			if !archname.IsARC(filepath.Base(name)) {
				t.Errorf("%s: %s gone from the copy", what, name)
			} else if w := arcWARCName(name); got[w] != final[w] {
				t.Errorf("%s: %s left the copy before its WARC %s was there", what, name, w)
			}
		}
	}
	commitEvents := []point{
		{"as a file is copied", "", func(_, copyDir string) func() bool {
			return func() bool { return exists(copyDir, isTemp) }
		}},
		{"once a converted WARC is in the copy", "", func(_, copyDir string) func() bool {
			return func() bool {
				return exists(copyDir, func(n string) bool { return strings.HasSuffix(n, ".warc.gz") && pristine[n] == "" })
			}
		}},
		{"once an ARC is gone", "", func(_, copyDir string) func() bool {
			return func() bool { return len(arcNames(t, copyDir)) < len(arcs) }
		}},
	}
	commitKills, commitEnded := 0, 0
	for round := 0; round < 5 || commitKills < 10 && round < 15; round++ {
		copyDir := filepath.Join(t.TempDir(), "copy")
		copyTree(t, src, copyDir)
		first := point{}
		if round < len(commitEvents) {
			first = commitEvents[round]
		} else {
			d := commitDelays.draw("commit")
			first = point{fmt.Sprintf("after %v", d.Round(time.Microsecond)), "commit", func(string, string) func() bool { return after(d) }}
		}
		d := commitDelays.draw("resumed commit")
		second := point{fmt.Sprintf("resumed, after %v", d.Round(time.Microsecond)), "resumed commit", func(string, string) func() bool { return after(d) }}
		for _, p := range []point{first, second} {
			what := fmt.Sprintf("commit round %d, killed %s", round, p.name)
			if killed, ran := killWhen(t, commit(coll, wd, copyDir), p.when(coll, copyDir)); !killed {
				if p.kind != "" {
					commitDelays.ended(p.kind, ran)
				}
				commitEnded++
				t.Logf("%s: the commit ended before the kill", what)
				continue
			}
			commitKills++
			checkCopy(what, copyDir)
			checkNoARCLost(t, what, copyDir, wd, arcs)
		}
		what := fmt.Sprintf("commit round %d (%s; %s)", round, first.name, second.name)
		if out, err := commit(coll, wd, copyDir).CombinedOutput(); err != nil {
			t.Fatalf("%s: the rerun: %v\n%s", what, err, out)
		}
		if left := tempLeft(copyDir); len(left) > 0 {
			t.Errorf("%s: temporary files left in the copy: %v", what, left)
		}
		sameTree(t, what+": the copy", hashTree(t, copyDir), final)
		if t.Failed() {
			return
		}
	}
	t.Logf("seed %d; an uninterrupted run %v, commit %v", seed, fullRun.Round(time.Millisecond), fullCommit.Round(time.Millisecond))
	t.Logf("run --convert-arc: %d SIGKILLs, %d runs ended before their kill; every rerun finished, nothing lost, no ARC gone without its proven WARC", runKills, runEnded)
	t.Logf("commit --to: %d SIGKILLs, %d commits ended before their kill; every rerun finished with the copy equal to the collection by SHA-256", commitKills, commitEnded)
	t.Logf("%d kills in all, %v", runKills+commitKills, time.Since(start).Round(time.Second))
	if runKills < 20 || commitKills < 10 {
		t.Errorf("%d kills of the run and %d of the commit: want at least 20 and 10", runKills, commitKills)
	}
}
