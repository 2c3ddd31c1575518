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

// TestInterruptLeavesNoTemporaryFiles proves that warcsumcmp interrupted
// (Ctrl-C, or SIGTERM from a batch system) removes the temporary files of
// its comparison, up to about three times the two manifests: the signal
// killed it and they stayed in the temporary directory.
func TestInterruptLeavesNoTemporaryFiles(t *testing.T) {
	jobtest.InterruptibleChildren()
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	f, err := os.Create(m)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	for i := range 300000 {
		d := make([]byte, 32)
		for j := range d {
			d[j] = alphabet[(i>>(j%16)+j)%32]
		}
		fmt.Fprintf(w, "f%d.warc %d 100 http://example.com/%d 2024-01-01T00:00:00Z sha1:%s\n", i%50, i*100, i, d)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(binary, "-q", "-T", tmp, "--sort-memory", "1M", m, m)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the comparison has temporary files; the deadline
			// only keeps a broken run from hanging the test.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
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
				t.Errorf("exit %v, want status 2", err)
			}
			entries, _ := os.ReadDir(tmp)
			for _, e := range entries {
				t.Errorf("temporary file %s left behind", e.Name())
			}
		})
	}
}
