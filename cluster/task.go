package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"warcdedup/digest"
	"warcdedup/internal/syssort"
	"warcdedup/policy"
	"warcdedup/source"
	"warcdedup/workdir"
)

// ExitPermanent is the exit status of a task that failed in a way no retry
// can mend (a hosts file naming one file on two hosts, a task sent to the
// wrong node): the monitor stops the job and says why instead of retrying.
const ExitPermanent = 3

// PermanentError is such a failure.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

func permanent(format string, args ...any) error {
	return &PermanentError{fmt.Errorf(format, args...)}
}

// Task is one task of a job's plan, run on the node Slurm sent it to
// (warcdedup cluster-task). It reads the job from the work directory,
// does its step's work for its host or hash range, and writes its result
// (Marker) last: a task that finds its result there has nothing to do, so
// Slurm may run it again (a requeue after a node failure) at any time.
type Task struct {
	WorkDir string
	Step    string
	Index   int       // the array index; 0 for a single task
	Log     io.Writer // messages (Slurm's output file of the job)
}

// task is a Task at work.
type task struct {
	*Task
	wd     workDir
	spec   *Spec
	plan   *Plan
	step   *Step
	host   *Host // the host of a pinned step
	algo   digest.Algorithm
	policy policy.Policy
	sorter syssort.Sorter
	prog   *progressWriter
	marker *Marker
	http   *source.HTTP // the task's reads over HTTP, once one is made
}

// Run does the task.
func (t *Task) Run(ctx context.Context) (err error) {
	k, err := t.load()
	if err != nil {
		return err
	}
	// One instance of a task at a time: a task Slurm runs twice (a
	// requeue racing a late start) waits for the other and then finds
	// its result.
	lk, err := lock(k.wd.taskFile(t.Step, t.Index, ".lock"), true)
	if err != nil {
		return err
	}
	defer lk.Close()
	if k.wd.readMarker(k.spec.ID, t.Step, t.Index) != nil {
		fmt.Fprintf(t.Log, "warcdedup: %s %d: done already\n", t.Step, t.Index)
		return nil
	}
	k.begin()
	defer func() { k.end(err) }()
	if err := k.work(ctx); err != nil {
		return err
	}
	if err := k.claim(); err != nil {
		return err
	}
	k.removeConsumed()
	return nil
}

// load reads the job and finds the task's step in its plan, and the host
// of a pinned step, which must be the node the task runs on.
func (t *Task) load() (*task, error) {
	wd := workDir(t.WorkDir)
	spec, err := workdir.ReadJSON[Spec](wd.file(specFile))
	if err != nil {
		return nil, permanent("reading the job: %w", err)
	}
	plan := NewPlan(&spec)
	step := plan.Step(t.Step)
	if step == nil || t.Index < 0 || t.Index >= step.Tasks {
		return nil, permanent("job %s has no task %s %d", spec.ID, t.Step, t.Index)
	}
	k := &task{Task: t, wd: wd, spec: &spec, plan: plan, step: step}
	if step.Host >= 0 {
		k.host = &spec.Hosts[step.Host]
		if node := os.Getenv("SLURMD_NODENAME"); node != "" && node != k.host.Name {
			return nil, permanent("task %s runs on node %s, not on %s", t.Step, node, k.host.Name)
		}
	}
	if k.algo, err = digest.ParseLabel(spec.Algorithm); err != nil {
		return nil, permanent("%v", err)
	}
	if k.policy, err = policy.Parse(spec.Policy); err != nil {
		return nil, permanent("%v", err)
	}
	return k, nil
}

// begin starts the task's attempt: its result to come, its scratch
// directory, its progress file.
func (k *task) begin() {
	t := k.Task
	os.Remove(k.wd.taskFile(t.Step, t.Index, ".error"))
	restarts, _ := strconv.Atoi(os.Getenv("SLURM_RESTART_COUNT"))
	k.marker = &Marker{Job: k.spec.ID, Step: t.Step, Task: t.Index, Node: os.Getenv("SLURMD_NODENAME"), Slurm: slurmJobID(),
		Restarts: restarts, Started: time.Now().UTC()}
	tmp := k.wd.file(workdir.TmpDir, fmt.Sprintf("%s-%d", t.Step, t.Index))
	os.RemoveAll(tmp)
	k.sorter = syssort.Sorter{TempDir: tmp, Memory: k.spec.SortMemory, Parallel: k.spec.Jobs, Compress: syssort.Compressor()}
	k.prog = startProgress(k.wd.taskFile(t.Step, t.Index, ".progress"), k.spec.ID)
	if testHooks {
		k.prog.midway = func() { k.freezeForTest("mid") }
	}
	fmt.Fprintf(t.Log, "warcdedup: %s %d of job %s on %s (attempt %d)\n", t.Step, t.Index, k.spec.ID, k.marker.Node, restarts+1)
}

// end ends the attempt; a failed one says why, in its log and in the
// task's error file, which the monitor reads.
func (k *task) end(err error) {
	t := k.Task
	k.prog.stop()
	if err != nil {
		msg := fmt.Sprintf("%s %d: %v\n", t.Step, t.Index, err)
		fmt.Fprint(t.Log, "warcdedup: error: "+msg)
		workdir.WriteFile(k.wd.taskFile(t.Step, t.Index, ".error"), []byte(msg))
	}
	os.RemoveAll(k.sorter.TempDir)
}

// work does the step's work. A task told to stop (scancel) claims
// nothing, even with its work done: it is run again.
func (k *task) work(ctx context.Context) error {
	if err := k.freezeForTest("start"); err != nil {
		return err
	}
	var err error
	switch k.step.Kind {
	case kindHash:
		err = k.hash(ctx)
	case kindResolve:
		err = k.resolve(ctx)
	case kindRewrite:
		err = k.rewrite(ctx)
	case kindCollide:
		err = k.collide(ctx)
	case kindRewriteCollisions:
		err = k.rewriteCollisions(ctx)
	case kindHashAgain:
		err = k.hashAgain(ctx)
	case kindVerify:
		err = k.verify(ctx)
	case kindAccount:
		err = k.account(ctx)
	default:
		err = permanent("step %s: unknown kind %q", k.step.Name, k.step.Kind)
	}
	if err != nil {
		return err
	}
	if err := k.freezeForTest("end"); err != nil {
		return err
	}
	return ctx.Err()
}

// claim writes the task's result: the task is done.
func (k *task) claim() error {
	t := k.Task
	k.marker.Finished = time.Now().UTC()
	var st source.HTTPStats // none read, when the task made no client
	if k.http != nil {
		st = k.http.Stats()
	}
	k.marker.HTTP = &st
	if err := workdir.WriteJSON(k.wd.taskFile(t.Step, t.Index, ".json"), k.marker); err != nil {
		return err
	}
	fmt.Fprintf(t.Log, "warcdedup: %s %d: done in %s\n", t.Step, t.Index, k.marker.Finished.Sub(k.marker.Started).Round(time.Millisecond))
	return nil
}

func slurmJobID() string {
	if a := os.Getenv("SLURM_ARRAY_JOB_ID"); a != "" {
		return a + "_" + os.Getenv("SLURM_ARRAY_TASK_ID")
	}
	return os.Getenv("SLURM_JOB_ID")
}

// name is the task as messages name it.
func (k *task) name() string {
	if k.step.Array() {
		return fmt.Sprintf("%s %s", k.step.Name, rangeName(k.Index, k.step.Tasks))
	}
	return k.step.Name
}

// Error, Warn and Note write a stage's messages to the task's log (Slurm's
// output of its job): the task is the stages' stage.Messages.
func (k *task) Error(err error) { fmt.Fprintf(k.Log, "warcdedup: error: %v\n", err) }
func (k *task) Warn(err error)  { fmt.Fprintf(k.Log, "warcdedup: warning: %v\n", err) }

// Note writes a detail to the task's log: not a warning, something looked
// up afterwards.
func (k *task) Note(format string, args ...any) {
	fmt.Fprintf(k.Log, "warcdedup: note: "+format+"\n", args...)
}

// progressWriter keeps a task's progress file up to date: what it has done
// of how much, in what unit, read by the monitor.
type progressWriter struct {
	name string
	job  string
	// midway, if set, is called when the work is seen part done.
	midway func()
	unit   atomic.Pointer[string]
	done   atomic.Int64
	total  atomic.Int64
	quit   chan struct{}
	ended  chan struct{}
}

// Progress is a task's progress file.
type Progress struct {
	Job     string    `json:"job"`
	Unit    string    `json:"unit"`
	Done    int64     `json:"done"`
	Total   int64     `json:"total"`
	Updated time.Time `json:"updated"`
}

func startProgress(name, job string) *progressWriter {
	p := &progressWriter{name: name, job: job, quit: make(chan struct{}), ended: make(chan struct{})}
	unit := "bytes"
	p.unit.Store(&unit)
	go func() {
		defer close(p.ended)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				p.write()
				return
			case <-t.C:
				p.write()
			}
		}
	}()
	return p
}

func (p *progressWriter) write() {
	workdir.WriteJSON(p.name, Progress{Job: p.job, Unit: *p.unit.Load(), Done: p.done.Load(), Total: p.total.Load(), Updated: time.Now().UTC()})
}

func (p *progressWriter) stop() {
	close(p.quit)
	<-p.ended
}

// Begin starts counting anew, in unit, out of total (progress.Meter).
func (p *progressWriter) Begin(unit string, total int64) {
	p.unit.Store(&unit)
	p.total.Store(total)
	p.done.Store(0)
}

// Set records the units done (progress.Meter); the first that finds the
// work part done calls midway.
func (p *progressWriter) Set(done int64) {
	p.done.Store(done)
	if p.midway != nil && done > 0 && done < p.total.Load() {
		p.midway()
	}
}
