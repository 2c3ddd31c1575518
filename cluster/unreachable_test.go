package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// downSlurm is a cluster whose controller does not answer: every command
// fails as Slurm's do then.
type downSlurm struct{ submits int }

var errNoController = errors.New("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)")

func (d *downSlurm) Submit(*Submission) (string, error) { d.submits++; return "", errNoController }
func (d *downSlurm) Query([]string) (map[string]JobState, error) {
	return map[string]JobState{}, nil // nothing submitted: nothing asked
}
func (d *downSlurm) Requeue([]string) error             { return errNoController }
func (d *downSlurm) SetDependency(string, string) error { return errNoController }
func (d *downSlurm) Cancel([]string) error              { return errNoController }

// TestNoController proves that a job whose sbatch cannot reach a Slurm
// controller stops after --task-retries tries, saying so and that nothing
// was submitted, and that one interrupted before it submitted anything
// does not say its Slurm jobs go on.
func TestNoController(t *testing.T) {
	opt := func(dir string, d *downSlurm) Options {
		return Options{WorkDir: dir, TaskRetries: 2, Scheduler: d, Poll: time.Millisecond,
			Params:   Params{Hosts: []Host{{Name: "a", Root: "/a", URL: "http://a"}}, Ranges: 1, Algorithm: "sha1", Policy: "replay"},
			Settings: Settings{Binary: "/usr/bin/warcdedup"}}
	}
	t.Run("retries bounded", func(t *testing.T) {
		d := &downSlurm{}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := Run(ctx, opt(t.TempDir(), d))
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Unable to contact slurm controller") ||
			!strings.Contains(err.Error(), "nothing was submitted") || strings.Contains(err.Error(), "go on") {
			t.Errorf("err %v, want sbatch's error, saying nothing was submitted", err)
		}
		if d.submits != 3 {
			t.Errorf("sbatch was run %d times, want 3 (the first and 2 retries)", d.submits)
		}
	})
	t.Run("interrupted before anything was submitted", func(t *testing.T) {
		d := &downSlurm{}
		o := opt(t.TempDir(), d)
		o.TaskRetries, o.Poll = 1000, 50*time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := Run(ctx, o)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "nothing was submitted") || strings.Contains(err.Error(), "go on") {
			t.Errorf("err %v, want the interruption, saying nothing was submitted", err)
		}
	})
}
