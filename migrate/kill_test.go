package migrate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/archname"
	"warcdedup/convert"
)

// The test binary re-executed as a conversion to kill: MIGRATE_CHILD holds
// "COLLECTION WORKDIR KEEPDIR HOOK", HOOK the number of the step at which
// the process kills itself (0: never; KEEPDIR "-" for none).
func TestMain(m *testing.M) {
	if arg := os.Getenv("MIGRATE_CHILD"); arg != "" {
		os.Exit(child(strings.Split(arg, " ")))
	}
	os.Exit(m.Run())
}

func child(args []string) int {
	killAt, _ := strconv.Atoi(args[3])
	c := &Converter{Options: Options{WorkDir: args[1], Jobs: 2}}
	if args[2] != "-" {
		c.KeepARC = args[2]
	}
	steps := 0
	c.Hook = func(step, arc string) {
		steps++
		if steps == killAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	res, err := c.Run(context.Background(), args[0], nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, o := range res.Files {
		if o.Status.Left() {
			fmt.Fprintf(os.Stderr, "%s: %s: %s\n", o.ARC, o.Status, o.Reason)
			return 1
		}
	}
	return 0
}

// TestKillAnywhere kills conversions with SIGKILL at random points, at the
// steps between which a file's state changes and at random times (inside
// writes, syncs and proofs), and checks after each kill that no ARC was
// removed without its proved WARC in place, and no ARC changed; each
// collection is then converted to the end by reruns, and every ARC is
// proved, independently, to be in its WARC record for record.
func TestKillAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes: not in -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	originals := filepath.Join(dir, "orig")
	genCollection(t, originals, 11)
	orig := snapshot(t, originals)
	rng := rand.New(rand.NewPCG(24, 1))

	// How long a whole conversion takes here, for the random times.
	full := func() time.Duration {
		coll := filepath.Join(dir, "timing")
		copyTree(t, originals, coll)
		start := time.Now()
		if out, err := runChild(exe, coll, filepath.Join(dir, "timing.work"), "-", 0).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return time.Since(start)
	}()

	kills, rounds := 0, 0
	for kills < 34 {
		rounds++
		coll, work := filepath.Join(dir, fmt.Sprintf("coll%d", rounds)), filepath.Join(dir, fmt.Sprintf("work%d", rounds))
		keep := "-"
		if rounds%2 == 0 {
			keep = filepath.Join(dir, fmt.Sprintf("keep%d", rounds))
		}
		copyTree(t, originals, coll)
		for try := 0; ; try++ {
			if try > 40 {
				t.Fatalf("round %d: no end after %d runs", rounds, try)
			}
			hook := 0
			var cmd *exec.Cmd
			var timer *time.Timer
			switch rng.IntN(3) {
			case 0, 1:
				hook = 1 + rng.IntN(4*4)
				cmd = runChild(exe, coll, work, keep, hook)
			default:
				cmd = runChild(exe, coll, work, keep, 0)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if hook == 0 {
				d := time.Duration(rng.Int64N(int64(full) + 1))
				timer = time.AfterFunc(d, func() { cmd.Process.Signal(syscall.SIGKILL) })
			}
			err := cmd.Wait()
			if timer != nil {
				timer.Stop()
			}
			var exit *exec.ExitError
			killed := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled()
			checkAfterKill(t, orig, coll, work, keep)
			if killed {
				kills++
				continue
			}
			if err != nil {
				t.Fatalf("round %d: the rerun failed: %v: %s", rounds, err, stderr.String())
			}
			break
		}
		checkConverted(t, originals, coll, filepath.Join(work, MapFile))
		for name := range snapshot(t, coll) {
			if strings.Contains(name, ".tmp-") {
				t.Errorf("round %d: %s left behind", rounds, name)
			}
		}
		if keep != "-" {
			kept := snapshot(t, keep)
			for name, sum := range orig {
				if archname.IsARC(name) && kept[name] != sum {
					t.Errorf("round %d: %s not kept byte for byte", rounds, name)
				}
			}
		}
	}
	t.Logf("%d SIGKILLs in %d rounds (a whole conversion: %v); every round ended converted and proved", kills, rounds, full.Round(time.Millisecond))
}

func runChild(exe, coll, work, keep string, hook int) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("MIGRATE_CHILD=%s %s %s %d", coll, work, keep, hook))
	return cmd
}

// checkAfterKill: every ARC is in the collection unchanged, or its WARC is
// there with a proof that names both files' bytes (and, with a keep
// directory, the ARC is kept); a WARC beside its ARC is one its proof
// names.
func checkAfterKill(t *testing.T, orig map[string]string, coll, work, keep string) {
	t.Helper()
	now := snapshot(t, coll)
	var kept map[string]string
	if keep != "-" {
		if _, err := os.Stat(keep); err == nil {
			kept = snapshot(t, keep)
		}
	}
	for name, sum := range orig {
		if !archname.IsARC(name) {
			if now[name] != sum {
				t.Fatalf("%s changed", name)
			}
			continue
		}
		warcName := convert.OutputName(name, false)
		p, err := readProof(filepath.Join(work, ProofDir, name+proofExt))
		if have, ok := now[name]; ok {
			if have != sum {
				t.Fatalf("%s changed", name)
			}
			if w, ok := now[warcName]; ok && (err != nil || p.File.WARCSHA256 != w || p.File.ARCSHA256 != sum) {
				t.Fatalf("%s is beside %s, which no proof names (%v)", warcName, name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s was removed without a proof: %v", name, err)
		}
		if w, ok := now[warcName]; !ok || w != p.File.WARCSHA256 || p.File.ARCSHA256 != sum {
			t.Fatalf("%s was removed, and %s is not its proved WARC (%q; proof %s from %s)", name, warcName, w, p.File.WARCSHA256, p.File.ARCSHA256)
		}
		if keep != "-" && kept[name] != sum {
			t.Fatalf("%s was removed without being kept", name)
		}
	}
}
