package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"warcdedup/internal/fspath"
	"warcdedup/internal/progress"
	"warcdedup/report"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// Options of a job on a cluster.
type Options struct {
	WorkDir  string
	Params   Params
	Settings Settings
	// Again starts a new job even when the work directory's last one, with
	// the same parameters, completed.
	Again bool
	// TaskRetries is how many times a failed task is run again before the
	// job stops.
	TaskRetries int
	Poll        time.Duration // between looks at the jobs
	Sbatch      []string      // options for every sbatch (--partition=..., --account=...)
	Display     *progress.Display
	Scheduler   Scheduler
}

// State is what the monitor knows of a job's Slurm jobs, kept in
// cluster-state.json so that the same command resumes after an
// interruption: it follows the jobs still queued, and submits again what
// Slurm has lost.
type State struct {
	Job      string                `json:"job"` // Spec.ID
	Steps    map[string]*StepState `json:"steps"`
	Complete bool                  `json:"complete"`
	Stopped  string                `json:"stopped,omitempty"` // why the job stopped, if it did
}

// StepState is a step's Slurm jobs.
type StepState struct {
	Tasks []TaskState `json:"tasks"`
	// Dependency is the one its pending jobs were last given.
	Dependency string `json:"dependency"`
}

// TaskState is one task's Slurm job.
type TaskState struct {
	Slurm    string `json:"slurm,omitempty"` // "12", or "12_3" for a task of an array; "" before submission
	Attempts int    `json:"attempts"`        // runs the monitor asked for after the first
}

// Stopped is the error of a job that cannot go on: a task failed more
// often than allowed, or in a way no retry mends.
type Stopped struct{ Why string }

func (e *Stopped) Error() string { return e.Why }

// monitor submits a job's plan and follows it.
type monitor struct {
	opt   Options
	wd    workDir
	spec  *Spec
	plan  *Plan
	state *State
	sched Scheduler
	show  *progress.Display

	done        map[string]bool      // "STEP/N" of the tasks with a result
	completedAt map[string]time.Time // tasks Slurm says completed whose result is not there yet
	stage       *progress.Stage      // the stage shown
	stageName   string
	shown       int64 // done units given to stage

	lock   *os.File // the work directory's lock
	runLog *os.File

	// collisions is whether the job's collisions steps (Step.IfApart) have
	// work: unknown until every rewrite is done (decideCollisions).
	collisions collisions

	// resumedStopped is set when the monitor resumes a job that had
	// stopped, until its first look at the tasks: a task that had failed
	// for good then is run again like any failed task, as what failed it
	// may have been mended since (the packages a hash refused moved away);
	// if it fails for good again, the job stops again.
	resumedStopped bool
}

// collisions is what the monitor knows of the collisions steps' work.
type collisions int

const (
	collisionsUnknown collisions = iota // a rewrite is not done yet
	collisionsNeeded                    // a rewrite kept duplicates apart: the steps run
	collisionsNone                      // none kept apart: the steps are recorded as not needed
)

// Run runs a job on the cluster, or resumes the work directory's job, and
// follows it to its end: the result is the account of the job (its
// report, as run's). With a job in the work directory that completed with
// the same parameters, it submits nothing and returns that job's result.
// Interrupted, it returns ctx's error; the Slurm jobs go on, and Run
// follows them again when called again (it says whether anything was
// submitted).
func Run(ctx context.Context, opt Options) (*stage.Result, error) {
	if opt.Params.Index != "" {
		ix, err := opt.Params.CheckIndex()
		if err != nil {
			return nil, err
		}
		if res, err := committedAlready(opt, ix); res != nil || err != nil {
			if res != nil && opt.Display != nil {
				opt.Display.Print("warcdedup: crawl %s is committed to the index %s: nothing to do (committed crawls are never rewritten; warcdedup index verify checks their files)",
					opt.Params.Crawl, ix.Dir)
			}
			return res, err
		}
	}
	m, err := newMonitor(opt)
	if m != nil {
		defer m.close()
	}
	if err != nil {
		return nil, err
	}
	if m.state.Complete {
		return m.result()
	}
	return m.follow(ctx)
}

// Cancel cancels the Slurm jobs of the work directory's job.
func Cancel(opt Options) error {
	m, err := open(opt)
	if m != nil {
		defer m.close()
	}
	if err != nil {
		return err
	}
	if m.spec == nil || m.state.Complete {
		return errors.New("no job to cancel in " + string(m.wd))
	}
	n, err := m.cancelAll()
	if err != nil {
		return err
	}
	m.state.Stopped = "cancelled"
	m.show.Print("warcdedup: cancelled %d Slurm jobs of job %s", n, m.spec.ID)
	return m.saveState()
}

// lockFile is held by the monitor: one warcdedup at a time follows a
// work directory's job.
const lockFile = ".lock"

// open locks the work directory and reads its job, if any.
func open(opt Options) (*monitor, error) {
	abs, err := fspath.Abs(opt.WorkDir)
	if err != nil {
		return nil, err
	}
	m := &monitor{opt: opt, wd: workDir(abs), sched: opt.Scheduler, show: opt.Display,
		done: map[string]bool{}, completedAt: map[string]time.Time{}}
	if m.show == nil {
		m.show = progress.NewPlain(io.Discard, "warcdedup")
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	lk, err := lock(m.wd.file(lockFile), false)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("%s: another warcdedup is using this work directory", abs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: locking the work directory: %w", abs, err)
	}
	m.lock = lk
	if f, err := os.OpenFile(m.wd.file(workdir.RunLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
		m.runLog = f
		m.show.Tee(f)
	}
	if spec, err := workdir.ReadJSON[Spec](m.wd.file(specFile)); err == nil {
		m.spec = &spec
	} else if !errors.Is(err, os.ErrNotExist) {
		return m, err
	}
	state, err := workdir.ReadJSON[State](m.wd.file(stateFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return m, err
	}
	m.state = &state
	return m, nil
}

func (m *monitor) close() {
	m.show.Tee(nil)
	if m.runLog != nil {
		m.runLog.Close()
	}
	if m.lock != nil {
		m.lock.Close()
	}
}

// newMonitor opens the work directory and decides the job: the one there,
// resumed, or a new one.
func newMonitor(opt Options) (*monitor, error) {
	m, err := open(opt)
	if err != nil {
		return m, err
	}
	same := m.spec != nil && m.spec.Params.Equal(&opt.Params) && m.state.Job == m.spec.ID
	switch {
	case same && m.state.Complete && !opt.Again:
		m.show.Print("warcdedup: the job of %s in %s is complete: nothing submitted (the hosts' files were not looked at; --again deduplicates what changed since)",
			m.spec.Created.Local().Format("2006-01-02 15:04"), m.wd)
		return m, nil
	case same && !opt.Again:
		m.spec.Settings = opt.Settings
		m.show.Print("warcdedup: resuming job %s of %s in %s", m.spec.ID, m.spec.Created.Local().Format("2006-01-02 15:04"), m.wd)
		m.resumedStopped = m.state.Stopped != ""
		m.state.Stopped = ""
		// Every task that has not succeeded gets its retries again.
		for _, ss := range m.state.Steps {
			for i := range ss.Tasks {
				ss.Tasks[i].Attempts = 0
			}
		}
	default:
		if m.spec != nil && !m.state.Complete {
			// Another job's tasks must not run on as this one's.
			if n, err := m.cancelAll(); err != nil {
				return m, err
			} else if n > 0 {
				m.show.Print("warcdedup: cancelled %d Slurm jobs of the earlier job %s (other parameters)", n, m.spec.ID)
			}
		}
		m.spec = &Spec{ID: newJobID(), Created: time.Now().UTC(), Params: opt.Params, Settings: opt.Settings}
		m.state = &State{Job: m.spec.ID}
		m.show.Print("warcdedup: job %s: %s %d hosts in %d hash ranges, work directory %s", m.spec.ID,
			map[bool]string{true: "dry run on", false: "deduplicating"}[m.spec.DryRun], len(m.spec.Hosts), m.spec.Ranges, m.wd)
	}
	if err := workdir.WriteJSON(m.wd.file(specFile), m.spec); err != nil {
		return m, err
	}
	m.plan = NewPlan(m.spec)
	if m.state.Steps == nil {
		m.state.Steps = map[string]*StepState{}
	}
	for _, s := range m.plan.Steps {
		if ss := m.state.Steps[s.Name]; ss == nil || len(ss.Tasks) != s.Tasks {
			m.state.Steps[s.Name] = &StepState{Tasks: make([]TaskState, s.Tasks)}
		}
	}
	if err := m.writeScripts(); err != nil {
		return m, err
	}
	return m, m.saveState()
}

func (m *monitor) saveState() error { return workdir.WriteJSON(m.wd.file(stateFile), m.state) }

// script is a step's batch script.
func (m *monitor) script(s *Step) string { return m.wd.file(slurmDir, s.Name+".sh") }

// writeScripts writes each step's batch script: it runs the step's task
// (the array index, for an array) with warcdedup cluster-task.
func (m *monitor) writeScripts() error {
	for i := range m.plan.Steps {
		s := &m.plan.Steps[i]
		where := "any node"
		if s.Host >= 0 {
			where = "node " + m.spec.Hosts[s.Host].Name
		}
		text := fmt.Sprintf(`#!/bin/sh
# warcdedup cluster, job %s: step %s (%s), run on %s.
# Written by warcdedup cluster, which submits it and follows it; the task
# writes its result to tasks/%s/ and does nothing when it is there already.
exec %s cluster-task --work-dir %s %s "${SLURM_ARRAY_TASK_ID:-0}"
`, m.spec.ID, s.Name, s.Stage, where, s.Name, shellQuote(m.spec.Binary), shellQuote(string(m.wd)), shellQuote(s.Name))
		if err := workdir.WriteFile(m.script(s), []byte(text)); err != nil {
			return err
		}
		if err := os.Chmod(m.script(s), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// submission is the sbatch of some tasks of a step.
func (m *monitor) submission(s *Step, tasks []int) *Submission {
	sub := &Submission{Name: "wd-" + m.spec.ID[:6] + "-" + s.Name, Script: m.script(s), Chdir: string(m.wd),
		Output: m.wd.file(slurmDir, s.Name+"-%j.out"), Dependency: m.dependency(s), Extra: m.opt.Sbatch}
	if s.Host >= 0 {
		sub.Node = m.spec.Hosts[s.Host].Name
	}
	if s.Array() {
		sub.Array = tasks
		sub.Output = m.wd.file(slurmDir, s.Name+"-%A_%a.out")
	}
	return sub
}

// dependency is what a step's jobs wait for: every task of the steps it
// depends on that has not succeeded yet, each named (a dependency on a
// whole array stays failed once a task failed, even after the task is run
// again; one on its tasks is met when they succeed).
func (m *monitor) dependency(s *Step) string {
	var ids []string
	for _, d := range s.Deps {
		for i, ts := range m.state.Steps[d].Tasks {
			if !m.isDone(d, i) && ts.Slurm != "" {
				ids = append(ids, ts.Slurm)
			}
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return "afterok:" + strings.Join(ids, ":")
}

func taskKey(step string, task int) string { return fmt.Sprintf("%s/%d", step, task) }

// isDone reports whether a task has its result.
func (m *monitor) isDone(step string, task int) bool {
	k := taskKey(step, task)
	if m.done[k] {
		return true
	}
	if m.wd.readMarker(m.spec.ID, step, task) != nil {
		m.done[k] = true
		return true
	}
	return false
}

// slurmJobs lists the Slurm job IDs of the job's tasks (an array's once).
func (m *monitor) slurmJobs() []string {
	var ids []string
	for _, ss := range m.state.Steps {
		for _, ts := range ss.Tasks {
			if ts.Slurm != "" {
				base, _, _ := strings.Cut(ts.Slurm, "_")
				ids = append(ids, base)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// cancelAll cancels every Slurm job of the job that has not finished.
func (m *monitor) cancelAll() (int, error) {
	jobs, err := m.sched.Query(m.slurmJobs())
	if err != nil {
		return 0, err
	}
	var ids []string
	for _, name := range m.stepNames() {
		for _, ts := range m.state.Steps[name].Tasks {
			if j, ok := jobs[ts.Slurm]; ok && !j.Finished() {
				ids = append(ids, ts.Slurm)
			}
		}
	}
	return len(ids), m.sched.Cancel(ids)
}

// stepNames lists the steps of the state in plan order.
func (m *monitor) stepNames() []string {
	var names []string
	for name := range m.state.Steps {
		names = append(names, name)
	}
	plan := NewPlan(m.spec)
	slices.SortFunc(names, func(a, b string) int {
		ia, ib := slices.IndexFunc(plan.Steps, func(s Step) bool { return s.Name == a }), slices.IndexFunc(plan.Steps, func(s Step) bool { return s.Name == b })
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	return names
}

// follow submits what needs submitting and follows the jobs until the
// account is done, a task fails for good, or ctx ends.
func (m *monitor) follow(ctx context.Context) (*stage.Result, error) {
	poll := m.opt.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	queryFailures, submitFailures := 0, 0
	for {
		wait := poll
		finished, err := m.tick()
		var stop *Stopped
		var sub *submitError
		switch {
		case errors.As(err, &stop):
			m.endStage("", err)
			m.state.Stopped = stop.Why
			if n, cerr := m.cancelAll(); cerr == nil && n > 0 {
				m.show.Print("warcdedup: cancelled the %d Slurm jobs still queued", n)
			}
			m.saveState()
			return nil, err
		case errors.As(err, &sub):
			// No controller answers, or it refuses the job: tried again
			// as a failed task is (--task-retries), waiting longer each
			// time, for a controller that restarts.
			submitFailures++
			if submitFailures > m.opt.TaskRetries {
				m.endStage("", err)
				m.saveState()
				return nil, fmt.Errorf("%w (%d tries): does a Slurm controller answer? %s", err, submitFailures, m.submitted("the same command submits the rest and follows them"))
			}
			wait = min(poll<<min(submitFailures-1, 16), time.Minute)
			m.show.Print("warcdedup: warning: %v: trying again in %s (retry %d of %d)", err, progress.Duration(wait), submitFailures, m.opt.TaskRetries)
		case err != nil:
			// Slurm may be restarting: try again, for a while.
			queryFailures++
			m.show.Print("warcdedup: warning: %v", err)
			if queryFailures > int(10*time.Minute/poll) {
				return nil, fmt.Errorf("%w: %s", err, m.submitted("the same command follows them again"))
			}
		default:
			queryFailures, submitFailures = 0, 0
		}
		if finished {
			m.endStage("", nil)
			m.state.Complete = true
			if err := m.saveState(); err != nil {
				return nil, err
			}
			return m.result()
		}
		if err := m.pause(ctx, wait); err != nil {
			m.endStage("", err)
			m.saveState()
			return nil, fmt.Errorf("%w: %s", err, m.submitted("the same command follows them again"))
		}
	}
}

// submitted says what of the job is in Slurm's hands: the jobs submitted,
// which go on without the monitor, then what the same command does
// (then), or that nothing was submitted.
func (m *monitor) submitted(then string) string {
	n := len(m.slurmJobs())
	if n == 0 {
		return "nothing was submitted to Slurm; the same command submits the job"
	}
	return fmt.Sprintf("the job's %d Slurm jobs submitted go on; %s", n, then)
}

// submitError is an sbatch that failed: the step's tasks are not in
// Slurm's hands.
type submitError struct {
	step string
	err  error
}

func (e *submitError) Error() string { return fmt.Sprintf("submitting %s: %v", e.step, e.err) }
func (e *submitError) Unwrap() error { return e.err }

// result reads the job's account.
func (m *monitor) result() (*stage.Result, error) {
	f, err := os.Open(m.wd.file(workdir.StatsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rep, err := report.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return &stage.Result{Report: rep, WorkDir: string(m.wd)}, nil
}

// failedTask is a task Slurm ended badly.
type failedTask struct {
	step *Step
	task int
	job  JobState
}

// tick looks at every task once: it submits those never submitted or that
// Slurm has lost, runs failed ones again (requeue), mends the dependencies
// of the jobs waiting for them, and shows the progress. finished is set
// when the account is done.
func (m *monitor) tick() (finished bool, err error) {
	jobs, err := m.sched.Query(m.slurmJobs())
	if err != nil {
		return false, err
	}
	t := &tick{m: m, jobs: jobs, submit: map[string][]int{}, mend: map[string]bool{}}
	for _, phase := range []func() error{m.decideCollisions, t.look, t.retry, t.submitAll, t.mendDependencies} {
		if err := phase(); err != nil {
			return false, err
		}
	}
	if err := m.saveState(); err != nil {
		return false, err
	}
	m.display(jobs)
	return m.isDone(kindAccount, 0), nil
}

// tick is one look at a job's tasks, in phases: what each task needs
// (look), failed tasks run again (retry), submissions (submitAll), then
// the dependencies of the jobs that wait for what changed
// (mendDependencies).
type tick struct {
	m    *monitor
	jobs map[string]JobState // the Slurm jobs of the job's tasks, as squeue and sacct say
	// submit are the tasks to submit, by step; failed the tasks Slurm
	// ended badly; mend the steps whose pending jobs need their dependency
	// set again.
	submit map[string][]int
	failed []failedTask
	mend   map[string]bool
}

// decideCollisions decides, once every rewrite is done, whether the
// collisions steps (Step.IfApart) have work: they do when a rewrite kept
// a duplicate apart (its result counts them). When none did, each of
// their tasks not submitted is recorded as done without Slurm (a result
// that says it was not needed), so that the steps after them wait for
// the rewrites alone; one an earlier monitor submitted runs as it is.
// What it decides follows from the rewrites' results, which never
// change: a monitor that resumes the job decides the same.
func (m *monitor) decideCollisions() error {
	if m.collisions != collisionsUnknown {
		return nil
	}
	var apart int64
	conditional := false
	for _, s := range m.plan.Steps {
		conditional = conditional || s.IfApart
		if s.Kind != kindRewrite {
			continue
		}
		for i := range s.Tasks {
			mk := m.wd.readMarker(m.spec.ID, s.Name, i)
			if mk == nil {
				return nil
			}
			if mk.Rewrite != nil {
				apart += mk.Rewrite.Apart
			}
		}
	}
	if !conditional || apart > 0 {
		m.collisions = collisionsNeeded
		return nil
	}
	now := time.Now().UTC()
	for _, s := range m.plan.Steps {
		if !s.IfApart {
			continue
		}
		for i, ts := range m.state.Steps[s.Name].Tasks {
			if ts.Slurm != "" || m.isDone(s.Name, i) {
				continue
			}
			mk := &Marker{Job: m.spec.ID, Step: s.Name, Task: i, Started: now, Finished: now, NotNeeded: true,
				Note: "not needed: the rewrites kept no duplicate apart"}
			if err := workdir.WriteJSON(m.wd.taskFile(s.Name, i, ".json"), mk); err != nil {
				return err
			}
			m.done[taskKey(s.Name, i)] = true
		}
	}
	m.collisions = collisionsNone
	m.show.Print("warcdedup: the rewrites kept no duplicate apart: no collisions to resolve, their steps not submitted")
	return nil
}

// pause waits until the next look at the jobs, at most d, or until ctx
// ends. While the collisions steps wait for every rewrite to be done
// (decideCollisions), it looks at the rewrites' result files (no Slurm
// command) every tenth of a second and ends as soon as they are all
// there, so that the steps after the rewrites are submitted without
// waiting out the poll.
func (m *monitor) pause(ctx context.Context, d time.Duration) error {
	end := time.After(d)
	var tick <-chan time.Time
	if m.collisions == collisionsUnknown {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end:
			return nil
		case <-tick:
			if m.rewritesDone() {
				return nil
			}
		}
	}
}

// rewritesDone reports whether every rewrite has its result.
func (m *monitor) rewritesDone() bool {
	for _, s := range m.plan.Steps {
		if s.Kind != kindRewrite {
			continue
		}
		for i := range s.Tasks {
			if !m.isDone(s.Name, i) {
				return false
			}
		}
	}
	return true
}

// held reports, for each step, whether its tasks wait to be submitted:
// a collisions step before decideCollisions has decided, and every step
// after one.
func (m *monitor) held() map[string]bool {
	held := map[string]bool{}
	for _, s := range m.plan.Steps {
		h := s.IfApart && m.collisions == collisionsUnknown
		for _, d := range s.Deps {
			h = h || held[d]
		}
		held[s.Name] = h
	}
	return held
}

// look sorts the tasks that have no result: never submitted, or lost by
// Slurm (to submit), waiting for a dependency Slurm will never see met
// (to mend), completed without a result (given a minute to show on this
// host's view of the file system), or failed. A step held (monitor.held)
// is not submitted yet.
func (t *tick) look() error {
	m := t.m
	held := m.held()
	for si := range m.plan.Steps {
		s := &m.plan.Steps[si]
		ss := m.state.Steps[s.Name]
		for i := range ss.Tasks {
			if m.isDone(s.Name, i) {
				continue
			}
			ts := &ss.Tasks[i]
			if ts.Slurm == "" {
				if !held[s.Name] {
					t.submit[s.Name] = append(t.submit[s.Name], i)
				}
				continue
			}
			j, known := t.jobs[ts.Slurm]
			switch {
			case !known:
				// Purged, or the cluster lost its state: submit it again.
				if ts.Attempts >= m.opt.TaskRetries {
					return &Stopped{fmt.Sprintf("%s: Slurm lost job %s %d times", m.taskName(s, i), ts.Slurm, ts.Attempts+1)}
				}
				ts.Attempts++
				m.show.Print("warcdedup: %s: Slurm no longer knows job %s: submitting it again (retry %d of %d)",
					m.taskName(s, i), ts.Slurm, ts.Attempts, m.opt.TaskRetries)
				t.submit[s.Name] = append(t.submit[s.Name], i)
			case !j.Finished():
				if j.State == "PENDING" && j.Reason == "DependencyNeverSatisfied" {
					t.mend[s.Name] = true
				}
			case j.State == "COMPLETED" && j.Exit == 0:
				if err := m.awaitResult(s, i, ts, j); err != nil {
					return err
				}
			default:
				t.failed = append(t.failed, failedTask{s, i, j})
			}
		}
	}
	return nil
}

// awaitResult gives the result of a task Slurm says completed a moment to
// show on this host's view of a network file system; not forever.
func (m *monitor) awaitResult(s *Step, i int, ts *TaskState, j JobState) error {
	k := taskKey(s.Name, i)
	if m.completedAt[k].IsZero() {
		m.completedAt[k] = time.Now()
	} else if time.Since(m.completedAt[k]) > time.Minute {
		return &Stopped{fmt.Sprintf("%s: Slurm job %s completed on %s, but its result is not in %s: is the work directory on a file system every node shares, at the same path?",
			m.taskName(s, i), ts.Slurm, j.Node, m.wd.taskFile(s.Name, i, ".json"))}
	}
	return nil
}

// retry runs each failed task again (scontrol requeue, or a new
// submission), up to the retries allowed; a task that failed for good
// stops the job. The steps waiting for it get their dependency mended.
func (t *tick) retry() error {
	m := t.m
	for _, f := range t.failed {
		ts := &m.state.Steps[f.step.Name].Tasks[f.task]
		why := m.failure(f)
		switch {
		case f.job.Exit == ExitPermanent && !m.resumedStopped:
			return &Stopped{why}
		case ts.Attempts >= m.opt.TaskRetries:
			return &Stopped{fmt.Sprintf("%s (after %d retries)", why, ts.Attempts)}
		}
		ts.Attempts++
		m.show.Print("warcdedup: %s: retry %d of %d", why, ts.Attempts, m.opt.TaskRetries)
		if err := m.sched.Requeue([]string{ts.Slurm}); err != nil {
			m.show.Print("warcdedup: %v: submitting it again instead", err)
			t.submit[f.step.Name] = append(t.submit[f.step.Name], f.task)
		}
		for _, d := range m.plan.Dependents(f.step.Name) {
			t.mend[d] = true
		}
	}
	m.resumedStopped = false
	return nil
}

// submitAll submits the tasks to submit, in plan order: a step's
// dependencies have their IDs before it is submitted. Each submission is
// recorded at once: a monitor killed then must not submit it twice.
func (t *tick) submitAll() error {
	m := t.m
	for si := range m.plan.Steps {
		s := &m.plan.Steps[si]
		tasks := t.submit[s.Name]
		if len(tasks) == 0 {
			continue
		}
		slices.Sort(tasks)
		sub := m.submission(s, tasks)
		id, err := m.sched.Submit(sub)
		if err != nil {
			m.saveState()
			return &submitError{s.Name, err}
		}
		ss := m.state.Steps[s.Name]
		for _, i := range tasks {
			ss.Tasks[i].Slurm = id
			if s.Array() {
				ss.Tasks[i].Slurm = fmt.Sprintf("%s_%d", id, i)
			}
		}
		ss.Dependency = sub.Dependency
		if err := m.saveState(); err != nil {
			return err
		}
		for _, d := range m.plan.Dependents(s.Name) {
			t.mend[d] = true
		}
	}
	return nil
}

// mendDependencies tells a job waiting for a task that was run again, or
// submitted again under a new ID, what it waits for now.
func (t *tick) mendDependencies() error {
	m := t.m
	for si := range m.plan.Steps {
		s := &m.plan.Steps[si]
		ss := m.state.Steps[s.Name]
		want := m.dependency(s)
		if !t.mend[s.Name] && !newIDs(want, ss.Dependency) {
			// Tasks that succeeded since leave the dependency met as it is.
			continue
		}
		for _, id := range t.pending(s) {
			if err := m.sched.SetDependency(id, want); err != nil {
				return err
			}
		}
		ss.Dependency = want
	}
	return nil
}

// pending lists the Slurm jobs (an array's once) of a step's tasks that
// wait in the queue, not submitted in this tick.
func (t *tick) pending(s *Step) []string {
	var ids []string
	for i, ts := range t.m.state.Steps[s.Name].Tasks {
		if j, ok := t.jobs[ts.Slurm]; ok && j.State == "PENDING" && !t.m.isDone(s.Name, i) && !slices.Contains(t.submit[s.Name], i) {
			base, _, _ := strings.Cut(ts.Slurm, "_")
			if !slices.Contains(ids, base) {
				ids = append(ids, base)
			}
		}
	}
	return ids
}

// newIDs reports whether dependency want names a job that had does not.
func newIDs(want, had string) bool {
	old := strings.Split(strings.TrimPrefix(had, "afterok:"), ":")
	for _, id := range strings.Split(strings.TrimPrefix(want, "afterok:"), ":") {
		if id != "" && !slices.Contains(old, id) {
			return true
		}
	}
	return false
}

// taskName names a task in messages: the step, and an array's range.
func (m *monitor) taskName(s *Step, task int) string {
	if s.Array() {
		return fmt.Sprintf("%s %s", s.Name, rangeName(task, s.Tasks))
	}
	return s.Name
}

// failure says how a task failed: Slurm's state and exit status, and the
// task's own last word.
func (m *monitor) failure(f failedTask) string {
	why := fmt.Sprintf("%s (Slurm job %s on %s) ended %s", m.taskName(f.step, f.task), f.job.ID, orNone(f.job.Node), f.job.State)
	if f.job.Signal != 0 {
		why += fmt.Sprintf(", signal %d", f.job.Signal)
	} else if f.job.State == "FAILED" {
		why += fmt.Sprintf(", exit status %d", f.job.Exit)
	}
	if msg, err := os.ReadFile(m.wd.taskFile(f.step.Name, f.task, ".error")); err == nil {
		why += ": " + strings.TrimSpace(string(msg))
	}
	return why
}

func orNone(s string) string {
	if s == "" {
		return "no node"
	}
	return s
}

// display shows the progress of the first stage that is not done: its
// tasks' units done of their total, and how many tasks are done, running
// and waiting (and for what).
func (m *monitor) display(jobs map[string]JobState) {
	var stage string
	for _, s := range m.plan.Steps {
		for i := range s.Tasks {
			if stage == "" && !m.isDone(s.Name, i) {
				stage = s.Stage
			}
		}
	}
	if stage != m.stageName {
		m.endStage(stage, nil)
	}
	if stage == "" {
		return
	}
	var done, total int64
	var tasks, finished, running, retried int
	unit := "bytes"
	waiting := map[string]bool{}
	for _, s := range m.plan.Steps {
		if s.Stage != stage {
			continue
		}
		ss := m.state.Steps[s.Name]
		for i, ts := range ss.Tasks {
			tasks++
			retried += ts.Attempts
			if p, err := workdir.ReadJSON[Progress](m.wd.taskFile(s.Name, i, ".progress")); err == nil && p.Job == m.spec.ID {
				unit = p.Unit
				total += p.Total
				done += p.Done
				if m.isDone(s.Name, i) {
					done += p.Total - p.Done
				}
			}
			if m.isDone(s.Name, i) {
				finished++
				continue
			}
			j := jobs[ts.Slurm]
			switch {
			case j.State == "RUNNING":
				running++
			case j.State == "PENDING" && j.Reason != "" && j.Reason != "None" && j.Reason != "Dependency" && j.Reason != "Priority" && j.Reason != "Resources":
				waiting[j.Reason] = true
			}
		}
	}
	if m.stage == nil {
		m.stage = m.show.Start(stage, unit, total)
		m.stage.Unit = unit
		m.shown = 0
	}
	m.stage.Unit = unit
	m.stage.SetTotal(total)
	m.stage.Add(done - m.shown)
	m.shown = done
	note := fmt.Sprintf("tasks %d/%d done, %d running", finished, tasks, running)
	if retried > 0 {
		note += fmt.Sprintf(", %d retried", retried)
	}
	if len(waiting) > 0 {
		var why []string
		for w := range waiting {
			why = append(why, w)
		}
		slices.Sort(why)
		note += "; waiting: " + strings.Join(why, ", ")
	}
	m.stage.SetNote(note)
}

// endStage ends the stage shown; next is the one to show next. A stage
// the job stopped in (err, not nil) is shown stopped or interrupted,
// never done: a task of it may have failed.
func (m *monitor) endStage(next string, err error) {
	if m.stage != nil {
		m.stage.SetNote("")
		if err != nil {
			m.stage.End(err, "")
		} else {
			m.stage.Done(m.stageNote(m.stageName))
		}
		m.stage = nil
	}
	m.stageName = next
}

// stageNote is a finished stage's note: its task's note, or how many
// tasks it had.
func (m *monitor) stageNote(stage string) string {
	var notes []string
	tasks := 0
	for _, s := range m.plan.Steps {
		if s.Stage != stage {
			continue
		}
		for i := range s.Tasks {
			tasks++
			if mk := m.wd.readMarker(m.spec.ID, s.Name, i); mk != nil {
				notes = append(notes, mk.Note)
			}
		}
	}
	if len(notes) == 1 {
		return notes[0]
	}
	return progress.Plural(int64(tasks), "task", "")
}

// Describe shows the jobs a job is made of, for warcdedup cluster --plan:
// each step, what it waits for, and its sbatch command.
func Describe(opt Options) string {
	abs, err := fspath.Abs(opt.WorkDir)
	if err != nil {
		abs = opt.WorkDir
	}
	m := &monitor{opt: opt, wd: workDir(abs), spec: &Spec{ID: "JOBID-", Params: opt.Params, Settings: opt.Settings},
		state: &State{Steps: map[string]*StepState{}}, done: map[string]bool{}}
	m.plan = NewPlan(m.spec)
	var b strings.Builder
	fmt.Fprintf(&b, "# %d hosts, %d hash ranges; work directory %s\n", len(opt.Params.Hosts), opt.Params.Ranges, abs)
	if p := opt.Params; p.Index != "" {
		fmt.Fprintf(&b, "# crawl %s against the index %s, committed by the account as served at %s\n", p.Crawl, p.Index, p.CrawlURL)
	}
	b.WriteString(m.plan.String())
	b.WriteString("\n# sbatch commands (ID_STEP stands for the job ID that step's sbatch prints):\n")
	for i := range m.plan.Steps {
		s := &m.plan.Steps[i]
		tasks := make([]int, s.Tasks)
		for k := range tasks {
			tasks[k] = k
		}
		ts := make([]TaskState, s.Tasks)
		for k := range ts {
			ts[k].Slurm = "ID_" + s.Name
			if s.Array() {
				ts[k].Slurm += fmt.Sprintf("_%d", k)
			}
		}
		sub := m.submission(s, tasks)
		m.state.Steps[s.Name] = &StepState{Tasks: ts}
		fmt.Fprintf(&b, "sbatch")
		for _, a := range sub.Args() {
			fmt.Fprintf(&b, " %s", shellQuote(a))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
