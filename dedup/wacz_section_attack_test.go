package dedup

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/internal/jobtest"
)

// TestRunWACZForeignFileAtStagedName proves that a file another process
// puts at a member's staged name while the run writes that member's new
// version beside its package (a valid WARC of its own) is never written
// into the package in the member's place: the rewrite refuses the member
// (its new version is never put over a file there), Finish leaves the
// member as it was, the foreign file stays, and an undo then gives back
// every member bit for bit.
func TestRunWACZForeignFileAtStagedName(t *testing.T) {
	foreign := foreignWARC(t)
	for attempt := 1; attempt <= 30; attempt++ {
		j := newWACZJob(t)
		dir := j.dir
		put, out := whileWritten(t, exec.Command(binPath, j.args...), dir, func(staged string) {
			if err := os.WriteFile(staged, foreign, 0o644); err != nil {
				t.Fatal(err)
			}
		})
		if put == "" {
			continue
		}
		t.Logf("put a foreign file at %s (attempt %d); the run said:\n%s", put, attempt, out)
		if got, err := os.ReadFile(put); err != nil || !bytes.Equal(got, foreign) {
			t.Errorf("the foreign file at %s is gone or changed (%v)", put, err)
		}
		for k, sum := range waczMemberSums(t, dir) {
			if sum == sha256Hex(foreign) {
				t.Fatalf("%s is now the foreign file put at %s", k, put)
			}
		}
		os.Remove(put)
		j.undone(t, "after the run")
		return
	}
	t.Fatal("never caught a member's new version being written")
}

// whileWritten runs cmd, stops it when a member's new version is being
// written beside its package (a temporary file, nothing at its staged
// name yet), calls act with that staged name, and lets it run to its
// end. It returns the staged name ("" if the command ended first) and
// its stderr.
func whileWritten(t *testing.T, cmd *exec.Cmd, dir string, act func(staged string)) (string, string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := cmd.Process.Pid
	put := ""
	for put == "" {
		select {
		case <-done:
			return "", stderr.String()
		case <-time.After(time.Millisecond):
		}
		if syscall.Kill(pid, syscall.SIGSTOP) != nil {
			continue
		}
		if !waitStopped(pid) {
			syscall.Kill(pid, syscall.SIGCONT)
			continue
		}
		partial, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+".*.warcdedup-member-*"))
		for _, p := range partial {
			base := strings.TrimPrefix(filepath.Base(p), atomicfile.TempPrefix)
			staged := filepath.Join(dir, base[:strings.LastIndex(base, "-")])
			if _, err := os.Stat(staged); err == nil {
				continue
			}
			act(staged)
			put = staged
			break
		}
		syscall.Kill(pid, syscall.SIGCONT)
	}
	err := <-done
	exitStatus(t, err, stderr.Bytes()) // any status: a refusal may say so
	return put, stderr.String()
}

// foreignWARC is a gzipped WARC file of one resource record, of no
// package.
func foreignWARC(t *testing.T) []byte {
	t.Helper()
	body := "not a member of any package"
	rec := fmt.Sprintf("WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"+
		"WARC-Date: 2020-01-01T00:00:00Z\r\nWARC-Target-URI: http://foreign.example/\r\nContent-Type: text/plain\r\n"+
		"Content-Length: %d\r\n\r\n%s\r\n\r\n", len(body), body)
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write([]byte(rec))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestRunWACZKilledInPlaceThenUndone proves that a run killed while
// members' new versions are put at their staged names (some put, or all
// put and the packages being written anew), then undone at once with no
// rerun, gives back every WARC member bit for bit, and that a run after
// that undo finishes.
func TestRunWACZKilledInPlaceThenUndone(t *testing.T) {
	put := func(dir string) killPoint {
		return killPoint{"a member's new version put", func(w *watch) (string, bool) {
			got, _ := filepath.Glob(filepath.Join(dir, ".*.warcdedup-member"))
			return fmt.Sprintf("with %d new versions put", len(got)), len(got) > 0
		}}
	}
	rebuilding := func(dir string) killPoint {
		return killPoint{"a package being written anew", func(w *watch) (string, bool) {
			got, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+"*.wacz-*"))
			return fmt.Sprintf("with %d packages being written", len(got)), len(got) > 0
		}}
	}
	for _, point := range []func(dir string) killPoint{put, rebuilding} {
		t.Run(point("").name, func(t *testing.T) {
			for attempt := 1; attempt <= 40; attempt++ {
				j := newWACZJob(t)
				dir, wd, args := j.dir, j.wd, j.args
				where, _ := killAt(t, exec.Command(binPath, args...), wd, point(dir))
				if where == "" {
					continue
				}
				t.Logf("killed %s (attempt %d)", where, attempt)
				j.undone(t, "after the kill")
				if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
					t.Errorf("left beside the packages after the undo: %v", left)
				}
				out, err := exec.Command(binPath, args...).CombinedOutput()
				if status := exitStatus(t, err, out); status != 0 {
					t.Fatalf("a run after the undo: exit %d:\n%s", status, out)
				}
				return
			}
			t.Fatal("the run was never killed there")
		})
	}
}

// TestRunWACZPackageWrittenDuringMemberRewrite proves that a package
// written by another process (one byte overwritten with itself: same
// size, same bytes, a write) while one of its members is rewritten where
// it lies is never written anew from the version read: the file written
// stays the package (same inode), and the run does not exit 0.
func TestRunWACZPackageWrittenDuringMemberRewrite(t *testing.T) {
	for attempt := 1; attempt <= 30; attempt++ {
		dir, _ := jobtest.GeneratedWACZ(t, false)
		wd := filepath.Join(t.TempDir(), "work")
		if err := os.MkdirAll(wd, 0o755); err != nil {
			t.Fatal(err)
		}
		var pkg string
		var ino uint64
		done := make(chan error, 1)
		args := []string{"run", "-q", "-j", "2", "--work-dir", wd, dir}
		cmd := exec.Command(binPath, args...)
		staged, out := whileWritten(t, cmd, dir, func(staged string) {
			base := strings.TrimPrefix(filepath.Base(staged), ".")
			pkg = filepath.Join(dir, base[:strings.Index(base, "#")])
			fi, err := os.Stat(pkg)
			if err != nil {
				t.Fatal(err)
			}
			ino = fi.Sys().(*syscall.Stat_t).Ino
			// The open waits for the run's read lease to be given up,
			// once it runs again.
			go func() {
				f, err := os.OpenFile(pkg, os.O_RDWR, 0)
				if err != nil {
					done <- err
					return
				}
				defer f.Close()
				b := make([]byte, 1)
				if _, err := f.ReadAt(b, 0); err != nil {
					done <- err
					return
				}
				_, err = f.WriteAt(b, 0)
				done <- err
			}()
		})
		if staged == "" {
			continue
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(pkg)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Sys().(*syscall.Stat_t).Ino; got != ino {
			t.Errorf("%s was written anew after another process wrote it; the run said:\n%s", pkg, out)
		}
		if cmd.ProcessState.ExitCode() == 0 {
			t.Errorf("the run exited 0 though %s was written under it:\n%s", pkg, out)
		}
		t.Logf("the run said:\n%s", out)
		return
	}
	t.Fatal("never caught a member's new version being written")
}
