package dedup

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/scripts/gen"
)

// The hostile campaign's findings on the replacement of a file (its tests
// TestWriterOpeningBeforeRenameLosesNothing and
// TestFileReplacedBeforeRenameKept, on the attack branch), here under
// names of their own: a writer that opens a file, or another process
// that renames a file over it, between the last check and the rename is
// lost with exit 0. The replacement now exchanges the new version with the
// file (package inplace) and checks what it took from the name.

// replaceRaceCfg is a small generated collection: a few files, each rewritten.
var replaceRaceCfg = gen.Config{Files: 4, Records: 400, DupRate: 0.4, Seed: 11, MeanPayload: 6 << 10, NonCandidates: true,
	Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11}}

// stopBeforeRename starts cmd and stops it (SIGSTOP) at the first look at
// which the log's journal holds an intent whose file is not renamed yet
// (its size is not the new version's). It returns that file with the
// process stopped, or "" if the command ended first (it is then waited
// for).
func stopBeforeRename(t *testing.T, cmd *exec.Cmd, wd string, done chan error) (string, int) {
	t.Helper()
	w := newWatch(wd)
	pid := cmd.Process.Pid
	for {
		select {
		case err := <-done:
			done <- err
			return "", pid
		case <-time.After(time.Millisecond):
		}
		if syscall.Kill(pid, syscall.SIGSTOP) != nil {
			continue
		}
		if !waitStopped(pid) {
			syscall.Kill(pid, syscall.SIGCONT)
			continue
		}
		if in := w.intents(); len(in) > 0 {
			last := in[len(in)-1]
			if fi, err := os.Stat(last.path); err == nil && fi.Size() != last.newSize {
				return last.path, pid
			}
		}
		syscall.Kill(pid, syscall.SIGCONT)
	}
}

// renameRace is an interference with a file that a run or an undo has
// journaled and not renamed yet, and what must be kept of it.
type renameRace struct {
	// attempts is how many times each command is stopped at the intent;
	// every tries them all (the window is hit only sometimes), else the
	// first hit ends the case.
	attempts int
	every    bool
	// interfere acts on the victim while the command is stopped, and
	// returns what to wait for once the command has ended.
	interfere func(t *testing.T, victim string) (wait func() error)
	// want is what the victim must hold (contain, if contains) after the
	// command ended; lost says what is lost if it does not.
	want     []byte
	contains bool
	lost     string
}

// check runs the race against run and against undo (after a run).
func (r renameRace) check(t *testing.T) {
	src, _ := generated(t, replaceRaceCfg)
	for _, command := range []string{"run", "undo"} {
		t.Run(command, func(t *testing.T) {
			hits := 0
			for attempt := 1; attempt <= r.attempts; attempt++ {
				coll := filepath.Join(t.TempDir(), "coll")
				wd := coll + ".work"
				copyTree(t, src, coll)
				if err := os.MkdirAll(wd, 0o755); err != nil {
					t.Fatal(err)
				}
				if command == "undo" {
					mustWarcdedup(t, "run", "--work-dir", wd, coll)
				}
				cmd := exec.Command(binPath, command, "-q", "-j", "1", "--work-dir", wd, coll)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				victim, pid := stopBeforeRename(t, cmd, wd, done)
				if victim == "" {
					<-done
					continue
				}
				wait := r.interfere(t, victim)
				syscall.Kill(pid, syscall.SIGCONT)
				status := exitStatus(t, <-done, stderr.Bytes())
				if err := wait(); err != nil {
					t.Fatalf("the other process: %v", err)
				}
				hits++
				data, err := os.ReadFile(victim)
				if err != nil {
					t.Fatal(err)
				}
				if r.contains && !bytes.Contains(data, r.want) {
					// A writer whose open was interrupted (by the SIGCHLD of
					// the SIGCONT above) and started again found the new
					// version under the name: kept beside the file, and
					// named, when the name was given back.
					data = keptBeside(t, victim, r.want, stderr.Bytes())
				}
				if kept := r.contains && bytes.Contains(data, r.want) || !r.contains && bytes.Equal(data, r.want); !kept {
					t.Fatalf("attempt %d: %s: %s while %s had journaled the file (and not renamed it) is lost (%d bytes there now); %s exited %d\n%s",
						attempt, filepath.Base(victim), r.lost, command, len(data), command, status, stderr.Bytes())
				}
				t.Logf("attempt %d: %s kept, %s exited %d: %s", attempt, filepath.Base(victim), command, status, bytes.TrimSpace(stderr.Bytes()))
				if !r.every {
					return
				}
			}
			if hits == 0 {
				t.Fatalf("%s was never stopped between journaling a file and renaming it", command)
			}
		})
	}
}

// TestReplaceWriterOpeningBeforeRename: a process that opens a file
// of the collection for appending (a crawler or a log writer writing under
// the final name, which README promises is refused) while a run or an
// undo has journaled the file and not renamed it yet. The open waits for
// the read lease; if the command is past its last look for writers (the
// window holds the new version's fsync, its close and the rename), it
// renames the new version over the file anyway, exits 0, and the writer's
// bytes go to the old inode: lost. Stopping the command at the journal's
// intent lands in that window about one time in four to six; the test
// tries up to 40 times for each command.
func TestReplaceWriterOpeningBeforeRename(t *testing.T) {
	marker := []byte("WARC/1.0\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:appended-by-the-writer>\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
	renameRace{attempts: 40, every: true, want: marker, contains: true, lost: "the record a writer appended",
		interfere: func(t *testing.T, victim string) func() error {
			// The writer: its open waits for the lease to be given up.
			wrote := make(chan error, 1)
			go func() {
				f, err := os.OpenFile(victim, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					wrote <- err
					return
				}
				_, err = f.Write(marker)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				wrote <- err
			}()
			waitOpenReachedLease(t, victim, wrote)
			return func() error { return <-wrote }
		}}.check(t)
}

// keptBeside returns what the new version of victim kept beside it
// (atomicfile.KeptSuffix) holds, if one holding want is there and the
// command's stderr names it; nil otherwise.
func keptBeside(t *testing.T, victim string, want, stderr []byte) []byte {
	t.Helper()
	kept, _ := filepath.Glob(victim + atomicfile.KeptSuffix + "*")
	for _, k := range kept {
		data, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, want) && bytes.Contains(stderr, []byte(k)) {
			t.Logf("%s: the writer's record is in %s, named by the command", filepath.Base(victim), filepath.Base(k))
			return data
		}
	}
	return nil
}

// waitOpenReachedLease waits until the writer's open of victim has
// found the file and reached the kernel's lease check: the command's lease
// on it is being broken (/proc/locks says BREAKING), or the open went
// through at once (wrote has its result, put back), as it does where no
// lease is held. Until then the writer may not have looked the name up
// yet: on a loaded machine its open can come after the command went on
// and renamed the file, or stop between finding the name and the lease
// check for longer than the command needs to replace the file, the
// window no look can close (see inplace.writerGuard); either way the
// case this test makes would not be made.
func waitOpenReachedLease(t *testing.T, victim string, wrote chan error) {
	t.Helper()
	fi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	// /proc/locks names a file by its device (major:minor, hex) and inode.
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	file := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		select {
		case err := <-wrote:
			wrote <- err
			return
		default:
		}
		locks, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(locks), "\n") {
			f := strings.Fields(line)
			if len(f) >= 6 && f[1] == "LEASE" && f[2] == "BREAKING" && f[5] == file {
				return
			}
		}
	}
	t.Fatalf("the writer's open of %s neither waits for a lease nor went through in 30 s", victim)
}

// TestReplaceFileRenamedOverBeforeRename: another process replaces a file of
// the collection by renaming a new file over it (rsync, a repair tool)
// after the run's (or undo's) check that the file is still the one it
// read and before its own rename: the command renames its new version,
// made from the old file, over the other process's file, which is lost,
// and exits 0. Stopping the command once the file's intent is in the
// journal is always in that window.
func TestReplaceFileRenamedOverBeforeRename(t *testing.T) {
	other := []byte("WARC/1.0\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:the-other-process-file>\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
	renameRace{attempts: 10, want: other, lost: "the file another process renamed into place",
		interfere: func(t *testing.T, victim string) func() error {
			tmp := victim + ".incoming"
			if err := os.WriteFile(tmp, other, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, victim); err != nil {
				t.Fatal(err)
			}
			return func() error { return nil }
		}}.check(t)
}
