package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"warcdedup/internal/jobtest"
)

// TestInterruptLeavesNoTemporaryFiles proves that warccdx interrupted
// (Ctrl-C, or SIGTERM from a batch system) while it updates an index
// removes its temporary files (about 100 bytes a line): the signal killed
// it and they stayed in the temporary directory.
func TestInterruptLeavesNoTemporaryFiles(t *testing.T) {
	jobtest.InterruptibleChildren()
	dir := t.TempDir()
	binary := filepath.Join(dir, "warccdx")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// An index of 300,000 records of one file, and a log that makes the
	// first a revisit, moving every other: long enough a run to be
	// interrupted once its temporary files are there.
	index, log := filepath.Join(dir, "index.cdxj"), filepath.Join(dir, "rewrite.log")
	f, err := os.Create(index)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range 300000 {
		fmt.Fprintf(w, "x)/%07d 20240101000000 {\"url\":\"http://x/%d\",\"mime\":\"text/html\",\"status\":\"200\",\"digest\":\"D%d\",\"length\":\"1000\",\"offset\":\"%d\",\"filename\":\"f.warc.gz\"}\n", i, i, i, i*1000)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	entry := "f.warc.gz 0 1000 0 500 revisit sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA http://y/ 2024-01-01T00:00:00Z\n"
	if err := os.WriteFile(log, []byte("# run 2024-06-01T00:00:00Z\n"+entry), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(binary, "-q", "-T", tmp, "--sort-memory", "1M", "--log", log, "-o", filepath.Join(dir, "out"), index)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the update has temporary files; the deadline
			// only keeps a broken run from hanging the test.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("no temporary file in a minute")
				}
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want status 2 (interrupted before the end)", err)
			}
			entries, _ := os.ReadDir(tmp)
			for _, e := range entries {
				t.Errorf("temporary file %s left behind", e.Name())
			}
		})
	}
}
