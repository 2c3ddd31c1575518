package slurmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestKillStepsTakesTheTree proves that killSteps kills what holds a node's
// slurmd log (as slurmstepd does) and every process below it, children that
// closed the log included, and nothing else. It needs no Slurm.
func TestKillStepsTakesTheTree(t *testing.T) {
	c := &Cluster{t: t, dir: t.TempDir(), slurmd: map[string]*daemon{}}
	log := filepath.Join(c.dir, "log", "slurmd-n1.log")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	// The "step" holds the log; its children do not.
	step := exec.Command("sh", "-c", `exec 3>>"$0"; sleep 300.1 3>&- & sh -c 'sleep 300.2' 3>&- & wait`, log)
	bystander := exec.Command("sleep", "300.3")
	for _, cmd := range []*exec.Cmd{step, bystander} {
		// A group of its own, so that a failed run leaves nothing behind.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !running("sleep 300.1") || !running("sleep 300.2") {
		if time.Now().After(deadline) {
			t.Fatal("the step's children did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}

	c.killSteps("n1")
	step.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for running("sleep 300.1") || running("sleep 300.2") {
		if time.Now().After(deadline) {
			t.Fatal("killSteps left a child of the step running")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !running("sleep 300.3") {
		t.Error("killSteps killed a process outside the step")
	}
}

// TestKillStepsTakesStrays proves that killSteps also kills a process that
// left the step's tree but carries the node's job environment, and spares
// one of another node or another cluster.
func TestKillStepsTakesStrays(t *testing.T) {
	c := &Cluster{t: t, dir: t.TempDir(), conf: "/tmp/slurmtest-x/slurm.conf", slurmd: map[string]*daemon{}}
	for _, tc := range []struct {
		sleep string
		env   []string
		dies  bool
	}{
		{"300.4", []string{"SLURM_CONF=" + c.conf, "SLURMD_NODENAME=n1"}, true},
		{"300.5", []string{"SLURM_CONF=" + c.conf, "SLURMD_NODENAME=n2"}, false},
		{"300.6", []string{"SLURM_CONF=/tmp/other/slurm.conf", "SLURMD_NODENAME=n1"}, false},
	} {
		cmd := exec.Command("sleep", tc.sleep)
		cmd.Env = tc.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		c.killSteps("n1")
		select {
		case <-done:
			if !tc.dies {
				t.Errorf("sleep with %v was killed", tc.env)
			}
		case <-time.After(time.Second):
			if tc.dies {
				t.Errorf("sleep with %v was not killed", tc.env)
			}
		}
	}
}
