package crawlindex

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The crash test runs this test binary as the process that commits: with
// these set, TestMain commits and exits instead of running the tests.
const (
	envCommitDir = "CRAWLINDEX_TEST_COMMIT_DIR"
	envCommitAdd = "CRAWLINDEX_TEST_COMMIT_ADD"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envCommitDir); dir != "" {
		name, originals, _ := strings.Cut(os.Getenv(envCommitAdd), ":")
		if _, err := Commit(dir, Change{Add: &Crawl{Name: name, Location: "/nowhere"}, Originals: originals}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

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
