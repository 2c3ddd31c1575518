package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Scheduler is what the monitor asks of Slurm.
type Scheduler interface {
	// Submit submits a batch job and returns its ID.
	Submit(req *Submission) (string, error)
	// Query returns what Slurm knows of the jobs (and every task of the
	// arrays) with these IDs, by job ID ("12", or "12_3" for a task).
	// Jobs it no longer knows are left out.
	Query(jobs []string) (map[string]JobState, error)
	// Requeue runs finished (failed, cancelled) jobs or tasks again.
	Requeue(ids []string) error
	// SetDependency replaces a pending job's dependency ("" for none).
	SetDependency(job, dependency string) error
	// Cancel cancels jobs or tasks.
	Cancel(ids []string) error
}

// Submission is one sbatch.
type Submission struct {
	Name       string   // --job-name
	Script     string   // the batch script
	Chdir      string   // --chdir
	Output     string   // --output, with Slurm's % patterns
	Node       string   // --nodelist, "" for any node
	Array      []int    // --array, nil for a single job
	Dependency string   // --dependency, "" for none
	Extra      []string // the user's own sbatch options (--partition, --account, ...)
}

// Args are sbatch's arguments.
func (s *Submission) Args() []string {
	args := []string{"--parsable", "--job-name=" + s.Name, "--chdir=" + s.Chdir, "--output=" + s.Output,
		// A job that Slurm runs again (after a node failure, or requeued
		// by the monitor) adds to its output instead of truncating it, and
		// may be requeued at all.
		"--open-mode=append", "--requeue",
		// A dependency that can no longer be met leaves the job pending,
		// for the monitor to mend once the task it waits for is retried.
		"--kill-on-invalid-dep=no"}
	if s.Node != "" {
		args = append(args, "--nodelist="+s.Node)
	}
	if len(s.Array) > 0 {
		var idx []string
		for _, i := range s.Array {
			idx = append(idx, strconv.Itoa(i))
		}
		args = append(args, "--array="+strings.Join(idx, ","))
	}
	if s.Dependency != "" {
		args = append(args, "--dependency="+s.Dependency)
	}
	args = append(args, s.Extra...)
	return append(args, s.Script)
}

// JobState is a job, or a task of an array, as Slurm shows it.
type JobState struct {
	ID       string // "12", or "12_3"
	State    string // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, NODE_FAIL, ...
	Reason   string // why it pends: Dependency, DependencyNeverSatisfied, BeginTime, ReqNodeNotAvail,...
	Node     string
	Exit     int // the exit status of its script
	Signal   int // the signal that ended it
	Restarts int // times Slurm requeued it
}

// Finished reports whether Slurm is done with the job, well or badly.
func (j *JobState) Finished() bool {
	switch j.State {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED":
		return true
	}
	return false
}

// Slurm is the Scheduler of the cluster that SLURM_CONF names (or the
// system's), through its commands sbatch, squeue, scontrol and scancel.
type Slurm struct {
	Env []string // added to this process's environment
}

func (s *Slurm) run(name string, args ...string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		for _, dir := range []string{"/usr/bin", "/usr/local/bin"} {
			if p := filepath.Join(dir, name); isExecutable(p) {
				path, err = p, nil
				break
			}
		}
		if err != nil {
			return "", fmt.Errorf("%s: not installed (Slurm's client commands are needed)", name)
		}
	}
	// A command that no controller answers gives up by itself (Slurm's
	// MessageTimeout); one that hangs past that must not hang the monitor.
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), s.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer in %s", commandTimeout)
		}
		return stdout.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// commandTimeout bounds one Slurm command.
const commandTimeout = 5 * time.Minute

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func (s *Slurm) Submit(req *Submission) (string, error) {
	out, err := s.run("sbatch", req.Args()...)
	if err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job ID", out)
	}
	return id, nil
}

// squeueFormat is one line per job or task, fields separated by "|".
const squeueFormat = "JobArrayID:|,State:|,Reason:|,NodeList:|,exit_code:|,RestartCnt:|"

func (s *Slurm) Query(jobs []string) (map[string]JobState, error) {
	out := map[string]JobState{}
	if len(jobs) == 0 {
		return out, nil
	}
	text, err := s.run("squeue", "--noheader", "--array", "--states=all", "--jobs="+strings.Join(jobs, ","), "--Format="+squeueFormat)
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id") {
			return out, nil // none of them is known any more
		}
		return nil, err
	}
	return parseSqueue(text)
}

// parseSqueue reads squeue's lines in squeueFormat.
func parseSqueue(text string) (map[string]JobState, error) {
	out := map[string]JobState{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) < 6 {
			return nil, fmt.Errorf("squeue printed %q: want %s", line, squeueFormat)
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		j := JobState{ID: f[0], State: f[1], Reason: f[2], Node: f[3]}
		// exit_code is the wait status: the exit status times 256, plus the
		// signal that ended the job.
		if code, err := strconv.Atoi(f[4]); err == nil {
			j.Exit, j.Signal = code>>8&0xff, code&0x7f
		}
		j.Restarts, _ = strconv.Atoi(f[5])
		// A state may carry a suffix ("CANCELLED by 0").
		j.State, _, _ = strings.Cut(j.State, " ")
		out[j.ID] = j
	}
	return out, nil
}

func (s *Slurm) Requeue(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.run("scontrol", "requeue", strings.Join(ids, ","))
	return err
}

func (s *Slurm) SetDependency(job, dependency string) error {
	_, err := s.run("scontrol", "update", "jobid="+job, "dependency="+dependency)
	if err != nil && strings.Contains(err.Error(), "no longer pending") {
		// It started meanwhile: what it waited for is done.
		return nil
	}
	return err
}

func (s *Slurm) Cancel(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.run("scancel", ids...)
	return err
}
