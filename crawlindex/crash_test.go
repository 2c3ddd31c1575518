package crawlindex

import (
	"errors"
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
	"warcdedup/atomicfile"
)

// The crash tests run this test binary as the process that commits: with
// these set, TestMain commits and exits instead of running the tests.
const (
	envCommitDir = "CRAWLINDEX_TEST_COMMIT_DIR"
	envCommitAdd = "CRAWLINDEX_TEST_COMMIT_ADD"
	// envKillAt: the process kills itself (SIGKILL) at that step of the
	// commit and its compaction (counted from 1; see builder.step).
	envKillAt = "CRAWLINDEX_TEST_KILL_AT"
	// envFanout: the policy's fanout, every run of class 0.
	envFanout = "CRAWLINDEX_TEST_FANOUT"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envCommitDir); dir != "" {
		name, originals, _ := strings.Cut(os.Getenv(envCommitAdd), ":")
		var opt CommitOptions
		if n, _ := strconv.Atoi(os.Getenv(envKillAt)); n > 0 {
			steps := 0
			opt.step = func(string) error {
				if steps++; steps == n {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				}
				return nil
			}
		}
		if f, _ := strconv.Atoi(os.Getenv(envFanout)); f > 0 {
			opt.Policy = oneClass(f)
		}
		if _, err := CommitWith(dir, Change{Add: &Crawl{Name: name, Location: "/nowhere"}, Originals: originals}, opt); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// oneClass is a policy under which every run of a test is of class 0:
// fanout runs of a partition are merged.
func oneClass(fanout int) Policy { return Policy{Fanout: fanout, Base: 1 << 40} }

// TestCommitKilled kills a process committing a crawl of many originals at
// random instants: the index then is the generation before, or the new
// one whole, never a mix; the next commit works and clears what the
// killed one left.
func TestCommitKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a committing process many times")
	}
	work := t.TempDir()
	var digests []string
	for i := range 200000 {
		digests = append(digests, digestOf("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[i%32], i))
	}
	jan := originals(t, work, "jan", digests[:1000]...)
	feb := originals(t, work, "feb", digests...)
	commitFeb := func(dir string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), envCommitDir+"="+dir, envCommitAdd+"=feb:"+feb)
		return cmd
	}
	// How long a whole commit takes.
	ref := filepath.Join(t.TempDir(), "index")
	if _, err := Commit(ref, Change{Add: &Crawl{Name: "jan"}, Originals: jan}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if out, err := commitFeb(ref).CombinedOutput(); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	full := time.Since(start)
	rng := rand.New(rand.NewPCG(5, 6))
	outcomes := map[int]int{}
	for i := range 10 {
		dir := filepath.Join(t.TempDir(), "index")
		if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan"}, Originals: jan}); err != nil {
			t.Fatal(err)
		}
		cmd := commitFeb(dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Up to a little after a whole commit: some kills find it done.
		time.Sleep(time.Duration(rng.Int64N(int64(full) * 13 / 10)))
		cmd.Process.Signal(syscall.SIGKILL)
		werr := cmd.Wait()
		ix, err := Open(dir)
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		g := ix.Registry.Generation
		outcomes[g]++
		t.Logf("kill %d: %v, generation %d", i, werr, g)
		var st VerifyStats
		counts, err := ix.verifyPartitions(&st, func(f string, a ...any) { t.Errorf("kill %d: "+f, append([]any{i}, a...)...) })
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case g == 1 && (counts["jan"] != 1000 || counts["feb"] != 0 || ix.Registry.Crawl("feb") != nil):
			t.Errorf("kill %d: the old generation holds %v", i, counts)
		case g == 2 && (counts["feb"] != 200000 || ix.Registry.Crawl("feb") == nil):
			t.Errorf("kill %d: the new generation holds %v", i, counts)
		case g != 1 && g != 2:
			t.Errorf("kill %d: generation %d", i, g)
		}
		// The next commit works, and clears what the killed one left.
		mar := originals(t, t.TempDir(), "mar", digests[:10]...)
		if _, err := Commit(dir, Change{Add: &Crawl{Name: "mar"}, Originals: mar}); err != nil {
			t.Errorf("kill %d: the next commit: %v", i, err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp") {
				t.Errorf("kill %d: %s left after the next commit", i, e.Name())
			}
		}
	}
	t.Logf("generation after the kill: %v (a commit takes %v)", outcomes, full)
}

// stepCase is a commit of feb into an index holding jan, under a policy
// that merges every two runs of a partition: the commit's generation,
// then a compaction's.
type stepCase struct {
	work          string
	jan, feb, mar string
	pol           Policy
}

func newStepCase(t *testing.T) *stepCase {
	rng := rand.New(rand.NewPCG(7, 8))
	ds := randomDigestsIn(rng, 300, "ABCDEF")
	c := &stepCase{work: t.TempDir(), pol: oneClass(2)}
	c.jan = originals(t, c.work, "jan", ds[:100]...)
	c.feb = originals(t, c.work, "feb", ds[100:200]...)
	c.mar = originals(t, c.work, "mar", ds[200:]...)
	return c
}

// base makes the index holding jan.
func (c *stepCase) base(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := CommitWith(dir, Change{Add: &Crawl{Name: "jan", Location: "/nowhere"}, Originals: c.jan}, CommitOptions{Policy: c.pol}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// steps are the names of the steps of feb's commit, in order.
func (c *stepCase) steps(t *testing.T) []string {
	var names []string
	if _, err := CommitWith(c.base(t), Change{Add: &Crawl{Name: "feb", Location: "/nowhere"}, Originals: c.feb},
		CommitOptions{Policy: c.pol, step: func(s string) error { names = append(names, s); return nil }}); err != nil {
		t.Fatal(err)
	}
	return names
}

// check proves that the index in dir, after feb's commit was stopped at
// step i (of names), is whole: the generation before, the commit's or
// its compaction's, as far as the commit got (CURRENT moved at each
// "CURRENT renamed"), holding the lines it must; that the next commit
// works, clears what was left, and compacts what the stopped one did not.
func (c *stepCase) check(t *testing.T, dir string, names []string, i int) {
	t.Helper()
	want := 1
	for _, s := range names[:i] {
		if s == "CURRENT renamed" {
			want++
		}
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatalf("stopped after %q (step %d): %v", names[i-1], i, err)
	}
	if g := ix.Registry.Generation; g != want {
		t.Errorf("stopped after %q (step %d): generation %d, want %d", names[i-1], i, g, want)
	}
	lines := fileLines(t, c.jan)
	if want > 1 {
		lines = append(lines, fileLines(t, c.feb)...)
	}
	if got := indexLines(t, ix); !slices.Equal(got, sortedLines(lines)) {
		t.Errorf("stopped after %q: %d lines, want %d", names[i-1], len(got), len(lines))
	}
	verifyClean(t, ix)
	if ix, err = CommitWith(dir, Change{Add: &Crawl{Name: "mar", Location: "/nowhere"}, Originals: c.mar}, CommitOptions{Policy: c.pol}); err != nil {
		t.Fatalf("the next commit: %v", err)
	}
	lines = append(lines, fileLines(t, c.mar)...)
	if got := indexLines(t, ix); !slices.Equal(got, sortedLines(lines)) {
		t.Errorf("after the next commit: %d lines, want %d", len(got), len(lines))
	}
	for key, runs := range runsOf(t, ix) {
		if len(runs) > 1 {
			t.Errorf("after the next commit, partition %s: runs %v", key, runs)
		}
	}
	verifyClean(t, ix)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp") {
			t.Errorf("%s left after the next commit", e.Name())
		}
	}
}

// TestCommitStepFails makes each step of a commit and of its compaction
// before CURRENT moves fail in turn (as a full disk or an I/O error
// would): the commit returns the failure (a *CompactionError with the
// committed index once the change is committed), and the index is whole,
// as check proves. (Once CURRENT moved, nothing fails a generation: the
// steps after are killed, by TestCommitKilledAtEachStep.)
func TestCommitStepFails(t *testing.T) {
	c := newStepCase(t)
	names := c.steps(t)
	t.Logf("%d steps: %s", len(names), strings.Join(names, ", "))
	published := 0
	for _, s := range names {
		if s == "CURRENT renamed" {
			published++
		}
	}
	if !slices.Contains(names, "run written") || published != 2 {
		t.Fatalf("the steps of a commit and its compaction: %v", names)
	}
	fail := errors.New("injected")
	for i := 1; i <= len(names); i++ {
		if names[i-1] == "CURRENT renamed" || names[i-1] == "marked" {
			continue
		}
		dir := c.base(t)
		steps := 0
		ix, err := CommitWith(dir, Change{Add: &Crawl{Name: "feb", Location: "/nowhere"}, Originals: c.feb},
			CommitOptions{Policy: c.pol, step: func(string) error {
				if steps++; steps == i {
					return fail
				}
				return nil
			}})
		committed := slices.Contains(names[:i], "CURRENT renamed")
		var ce *CompactionError
		switch {
		case !errors.Is(err, fail):
			t.Errorf("failed after %q (step %d): %v", names[i-1], i, err)
		case committed && (!errors.As(err, &ce) || ix == nil || ix.Registry.Crawl("feb") == nil):
			t.Errorf("failed after %q, once committed: %v, index %v", names[i-1], err, ix)
		case !committed && (errors.As(err, &ce) || ix != nil):
			t.Errorf("failed after %q, before the commit: %v", names[i-1], err)
		}
		c.check(t, dir, names, i)
	}
}

// TestCommitKilledAtEachStep kills (SIGKILL) the process committing at
// each step of its commit and of its compaction in turn: the index is
// whole, as check proves.
func TestCommitKilledAtEachStep(t *testing.T) {
	c := newStepCase(t)
	names := c.steps(t)
	for i := 1; i <= len(names); i++ {
		dir := c.base(t)
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), envCommitDir+"="+dir, envCommitAdd+"=feb:"+c.feb, envKillAt+"="+strconv.Itoa(i), envFanout+"=2")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("step %d (%s): the commit ended %v, not killed\n%s", i, names[i-1], err, out)
		}
		c.check(t, dir, names, i)
	}
	t.Logf("killed at each of %d steps: %s", len(names), strings.Join(names, ", "))
}

// TestCommitClearsTemporaryCurrent: a commit killed between writing CURRENT's
// temporary file and renaming it leaves that file (TestCommitKilled hits
// the window now and then); the next commit removes it.
func TestCommitClearsTemporaryCurrent(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(t.TempDir(), "index")
	jan := originals(t, work, "jan", digestOf('A', 1), digestOf('B', 2))
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan"}, Originals: jan}); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, atomicfile.TempPrefix+currentFile+"-1143199639")
	if err := os.WriteFile(left, []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	feb := originals(t, work, "feb", digestOf('C', 3))
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "feb"}, Originals: feb}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("%s left after the next commit (stat: %v)", filepath.Base(left), err)
	}
}
