package dedup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/collock"
	"warcdedup/internal/jobtest"
	"warcdedup/workdir"
)

// heldJob is a warcdedup job stopped while it holds its collection's
// locks: its run log is a FIFO nobody reads yet, which run and undo open
// right after taking them (run.open, undo's open), so it waits there,
// before it has touched a file, until finish reads it.
type heldJob struct {
	cmd    *exec.Cmd
	wd     string
	out    bytes.Buffer
	done   chan struct{}
	err    error
	logged []byte // the run log as it was before (an undo's work directory has one)
}

// holdJob starts warcdedup ARGS (its work directory wd) and returns once
// it holds the lock of dir, or waits at its run log (then the test fails:
// it should hold the lock by then).
func holdJob(t *testing.T, wd, dir string, args ...string) *heldJob {
	t.Helper()
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	h := &heldJob{wd: wd, done: make(chan struct{})}
	logName := filepath.Join(wd, workdir.RunLog)
	h.logged, _ = os.ReadFile(logName)
	os.Remove(logName)
	if err := syscall.Mkfifo(logName, 0o644); err != nil {
		t.Fatal(err)
	}
	h.cmd = exec.Command(binPath, args...)
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.err = h.cmd.Wait(); close(h.done) }()
	holding := fmt.Sprintf("process %d:", h.cmd.Process.Pid)
	atLog := func() bool { // a thread blocked opening its run log (a FIFO without reader)
		threads, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", h.cmd.Process.Pid))
		for _, th := range threads {
			if w, _ := os.ReadFile(th); string(w) == "wait_for_partner" {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(2 * time.Minute); !strings.HasPrefix(collock.Holder(dir), holding) && !atLog(); {
		select {
		case <-h.done:
			t.Fatalf("warcdedup %s ended before it held %s: %v\n%s", strings.Join(args, " "), dir, h.err, h.out.String())
		default:
		}
		if time.Now().After(deadline) {
			h.kill()
			t.Fatalf("warcdedup %s does not hold %s", strings.Join(args, " "), dir)
		}
		time.Sleep(time.Millisecond)
	}
	if got := collock.Holder(dir); !strings.HasPrefix(got, holding) {
		t.Errorf("warcdedup %s, at its run log, does not hold %s (held by %q)", strings.Join(args, " "), dir, got)
	}
	return h
}

// finish lets the job go on to its end and returns its error.
func (h *heldJob) finish(t *testing.T) error {
	t.Helper()
	logName := filepath.Join(h.wd, workdir.RunLog)
	f, err := os.Open(logName) // the job's opening for writing returns
	if err != nil {
		t.Fatal(err)
	}
	logged, _ := io.ReadAll(f)
	f.Close()
	<-h.done
	h.restoreLog(append(h.logged, logged...))
	if h.err != nil {
		return fmt.Errorf("%v\n%s", h.err, h.out.String())
	}
	return nil
}

// kill kills the job (SIGKILL) where it waits.
func (h *heldJob) kill() {
	h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.done
	h.restoreLog(h.logged)
}

func (h *heldJob) restoreLog(data []byte) {
	logName := filepath.Join(h.wd, workdir.RunLog)
	os.Remove(logName)
	os.WriteFile(logName, data, 0o644)
}

// exitOf is a finished command's exit status and output.
func exitOf(cmd *exec.Cmd) (int, string) {
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, string(out)
}

// TestDirLock proves that two jobs on one collection with different work
// directories never work at once: while a run or an undo holds the
// collection, another run or undo is refused at once (exit status 2,
// the message naming the directory and the process holding it), having
// changed nothing; the holder then finishes, and the job refused runs
// when tried again. Assess, which only reads, goes on beside a run; a
// job killed lets its lock go with it.
func TestDirLock(t *testing.T) {
	// args replaces W0, W1, W2 by the work directories and C by the
	// collection.
	type args []string
	cases := []struct {
		name      string
		before    []args // jobs run to their end first
		holder    args
		kill      bool // the holder is killed (SIGKILL) where it waits, before the other job
		contender args
		refused   bool
	}{
		{name: "a run refuses a run with another work directory", holder: args{"run", "--work-dir", "W1", "C"},
			contender: args{"run", "--work-dir", "W2", "C"}, refused: true},
		{name: "a run refuses an undo", before: []args{{"run", "--work-dir", "W0", "C"}}, holder: args{"run", "--work-dir", "W1", "C"},
			contender: args{"undo", "--work-dir", "W0", "C"}, refused: true},
		{name: "an undo refuses a run", before: []args{{"run", "--work-dir", "W0", "C"}}, holder: args{"undo", "--work-dir", "W0", "C"},
			contender: args{"run", "--work-dir", "W1", "C"}, refused: true},
		{name: "an undo refuses an undo", before: []args{{"run", "--work-dir", "W0", "C"}, {"run", "--work-dir", "W1", "C"}},
			holder: args{"undo", "--work-dir", "W0", "C"}, contender: args{"undo", "--work-dir", "W1", "C"}, refused: true},
		{name: "assess goes on beside a run", holder: args{"run", "--work-dir", "W1", "C"},
			contender: args{"assess", "--work-dir", "W2", "C"}},
		{name: "a killed run's lock goes with it", holder: args{"run", "--work-dir", "W1", "C"}, kill: true,
			contender: args{"run", "--work-dir", "W2", "C"}},
	}
	src, _ := generated(t, attackCfg)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			coll := filepath.Join(t.TempDir(), "coll")
			copyTree(t, src, coll)
			expand := func(a args) []string {
				out := []string{a[0], "-q", "-j", "2"}
				for _, s := range a[1:] {
					switch {
					case s == "C":
						s = coll
					case len(s) == 2 && s[0] == 'W':
						s = coll + ".w" + s[1:]
					}
					out = append(out, s)
				}
				return out
			}
			for _, a := range c.before {
				mustWarcdedup(t, expand(a)...)
			}
			holderArgs := expand(c.holder)
			h := holdJob(t, holderArgs[len(holderArgs)-2], coll, holderArgs...)
			if c.kill {
				h.kill()
			}
			before := hashTree(t, coll)
			status, out := exitOf(exec.Command(binPath, expand(c.contender)...))
			if !c.refused {
				if status != 0 {
					t.Errorf("warcdedup %s: exit status %d, want 0\n%s", strings.Join(c.contender, " "), status, out)
				}
				if !c.kill {
					if err := h.finish(t); err != nil {
						t.Errorf("the holder: %v", err)
					}
				}
				return
			}
			if status != 2 {
				t.Errorf("warcdedup %s: exit status %d, want 2\n%s", strings.Join(c.contender, " "), status, out)
			}
			want := fmt.Sprintf("warcdedup: %s: another warcdedup job is working on this directory's files (its lock is held by process %d:", coll, h.cmd.Process.Pid)
			if !strings.Contains("\n"+out, "\n"+want) {
				t.Errorf("warcdedup %s said\n%s\nwant a line beginning %q", strings.Join(c.contender, " "), out, want)
			}
			sameTree(t, "the collection after the job refused", hashTree(t, coll), before)
			if err := h.finish(t); err != nil {
				t.Fatalf("the holder: %v", err)
			}
			// Tried again, it is not refused (it may find what the
			// holder did not its own to undo: exit status 1).
			if status, out := exitOf(exec.Command(binPath, expand(c.contender)...)); status == 2 || strings.Contains(out, "another warcdedup job") {
				t.Errorf("warcdedup %s once the holder ended: exit status %d\n%s", strings.Join(c.contender, " "), status, out)
			}
		})
	}
}

// TestDirLockNamedPackages proves the lock of a job on packages named
// one by one, in two subdirectories, by a multi-WACZ JSON: a run on one
// of those subdirectories refuses it, and it refuses a run on the other
// one, each refused job changing nothing.
func TestDirLockNamedPackages(t *testing.T) {
	dir, _ := jobtest.GeneratedMultiWACZ(t)
	jsonName := filepath.Join(dir, "collection.json")
	doc, err := os.ReadFile(jsonName)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	for i, p := range entries {
		sub := []string{"a", "b"}[i%2]
		os.MkdirAll(filepath.Join(dir, sub), 0o755)
		if err := os.Rename(p, filepath.Join(dir, sub, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
		old := fmt.Sprintf("%q", filepath.Base(p))
		if !bytes.Contains(doc, []byte(old)) {
			t.Fatalf("collection.json does not name %s:\n%s", old, doc)
		}
		doc = bytes.ReplaceAll(doc, []byte(old), []byte(fmt.Sprintf("%q", sub+"/"+filepath.Base(p))))
	}
	if err := os.WriteFile(jsonName, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	// Operands relative to the collection.
	cases := []struct {
		name              string
		holder, contender string
		refusedOn         string
	}{
		{"a run on a subdirectory refuses the packages named", "a", "collection.json", "a"},
		{"the packages named refuse a run on a subdirectory", "collection.json", "b", "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			coll := filepath.Join(t.TempDir(), "coll")
			copyTree(t, dir, coll)
			w1, w2 := coll+".w1", coll+".w2"
			in := func(name string) string { return filepath.Join(coll, name) }
			h := holdJob(t, w1, in(c.refusedOn), "run", "-q", "--work-dir", w1, in(c.holder))
			before := hashTree(t, coll)
			status, out := exitOf(exec.Command(binPath, "run", "-q", "--work-dir", w2, in(c.contender)))
			if status != 2 || !strings.Contains("\n"+out, "\nwarcdedup: "+in(c.refusedOn)+": another warcdedup job is working on this directory's files") {
				t.Errorf("the second run: exit status %d, want 2 and a message naming %s:\n%s", status, c.refusedOn, out)
			}
			sameTree(t, "the packages after the job refused", hashTree(t, coll), before)
			if err := h.finish(t); err != nil {
				t.Fatalf("the holder: %v", err)
			}
		})
	}
}
