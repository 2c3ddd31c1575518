package slurmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Starting a cluster costs seconds and the fault cases tens of seconds, so
// these tests run only when asked: `make test-cluster`.
func smoke(t *testing.T) {
	t.Helper()
	if os.Getenv("WARCDEDUP_TEST_CLUSTER") != "1" {
		t.Skip("cluster smoke test: set WARCDEDUP_TEST_CLUSTER=1 (make test-cluster)")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func run(t *testing.T, c *Cluster, name string, args ...string) string {
	t.Helper()
	out, err := c.Run(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestJobs proves the things the cluster command relies on: --nodelist
// pins a job to a node and $SLURMD_NODENAME names it, an array runs every
// task once, and --dependency=afterok holds the array until the first job
// has succeeded. It also times the cluster's start and stop and the
// latency of a trivial job.
func TestJobs(t *testing.T) {
	smoke(t)
	start := time.Now()
	c := Start(t, "store1", "store2", "store3")
	t.Logf("cluster of 3 nodes up in %v", time.Since(start).Round(time.Millisecond))
	work := t.TempDir()

	first := c.Submit("--nodelist=store2", "--chdir="+work, "--output=first.out",
		"--wrap", `sleep 1; echo "$SLURMD_NODENAME" > first.node; date +%s.%N > first.end`)
	array := c.Submit("--array=0-3", "--dependency=afterok:"+first, "--chdir="+work, "--output=task-%a.out",
		"--wrap", `date +%s.%N > task-$SLURM_ARRAY_TASK_ID.start; echo "$SLURM_ARRAY_TASK_ID $SLURMD_NODENAME $(pwd)"`)
	for _, j := range c.WaitJob(first, time.Minute) {
		if j.State != "COMPLETED" || j.Node != "store2" {
			t.Errorf("pinned job %s: %+v, want COMPLETED on store2", first, j)
		}
	}
	if got := readFile(t, filepath.Join(work, "first.node")); got != "store2\n" {
		t.Errorf("$SLURMD_NODENAME in the job pinned to store2: %q", got)
	}
	tasks := c.WaitJob(array, time.Minute)
	if len(tasks) != 4 {
		t.Errorf("array %s: %d tasks %+v, want 4", array, len(tasks), tasks)
	}
	var firstEnd float64
	fmt.Sscan(readFile(t, filepath.Join(work, "first.end")), &firstEnd)
	for i, j := range tasks {
		if j.ID != fmt.Sprintf("%s_%d", array, i) || j.State != "COMPLETED" {
			t.Errorf("task %d: %+v, want %s_%d COMPLETED", i, j, array, i)
			continue
		}
		out := strings.Fields(readFile(t, filepath.Join(work, fmt.Sprintf("task-%d.out", i))))
		if len(out) != 3 || out[0] != fmt.Sprint(i) || out[1] != j.Node || out[2] != work {
			t.Errorf("task %d on %s printed %q, want its index, node and work directory", i, j.Node, out)
		}
		var started float64
		fmt.Sscan(readFile(t, filepath.Join(work, fmt.Sprintf("task-%d.start", i))), &started)
		if started < firstEnd {
			t.Errorf("task %d started %.3fs before the job it depends on ended", i, firstEnd-started)
		} else {
			t.Logf("task %d on %s started %.2fs after its dependency ended", i, j.Node, started-firstEnd)
		}
	}

	// Latency of a trivial job, submission to COMPLETED as a client sees it.
	for i := range 5 {
		t0 := time.Now()
		id := c.Submit("--output=/dev/null", "--wrap", "true")
		c.WaitJob(id, time.Minute)
		t.Logf("trivial job %d: submitted to completed in %v", i, time.Since(t0).Round(time.Millisecond))
	}

	t0 := time.Now()
	c.Stop()
	t.Logf("cluster stopped in %v", time.Since(t0).Round(time.Millisecond))
	if left := c.leftovers(); len(left) > 0 {
		t.Errorf("processes left after Stop: %v", left)
	}
}

// leftovers lists live processes that still use the cluster's directory:
// daemons, step daemons and job scripts (all name or hold a file in it).
func (c *Cluster) leftovers() []string {
	var left []string
	for _, pid := range processTree(func(pid int) bool { return usesDir(pid, c.dir) }) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		left = append(left, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return left
}

func usesDir(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	if strings.Contains(string(cmdline), dir) {
		return true
	}
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(fds)
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			return true
		}
	}
	return false
}

// watcher logs every change of a job's and a node's state with the time
// since it was made, so that a test's log shows what a client would see.
type watcher struct {
	t     *testing.T
	c     *Cluster
	job   string
	node  string
	start time.Time
	last  string
}

func (c *Cluster) watch(t *testing.T, job, node string) *watcher {
	return &watcher{t: t, c: c, job: job, node: node, start: time.Now()}
}

// until polls until done accepts the job's first record and the node's
// state, and returns them.
func (w *watcher) until(what string, timeout time.Duration, done func(j Job, node string) bool) (Job, string) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		jobs, err := w.c.Jobs(w.job)
		if err != nil {
			w.t.Fatal(err)
		}
		states, err := w.c.NodeStates()
		if err != nil {
			w.t.Fatal(err)
		}
		j, n := jobs[0], states[w.node]
		if s := fmt.Sprintf("job %s %s reason=%s restarts=%d | node %s %s", j.ID, j.State, j.Reason, j.Restarts, w.node, n); s != w.last {
			w.t.Logf("+%5.1fs %s", time.Since(w.start).Seconds(), s)
			w.last = s
		}
		if done(j, n) {
			return j, n
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: not after %v", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running reports whether a live process has exactly this command line.
func running(cmdline string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ") == cmdline {
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && !strings.HasPrefix(string(stat[i+1:]), " Z") {
				return true
			}
		}
	}
	return false
}

// TestNodeCrash proves what a client sees when a node dies under a running
// job: the node turns DOWN after SlurmdTimeout, Slurm requeues the batch
// job (PENDING, Restarts=1), the job waits for its node, runs again when
// the node's slurmd is back, and a job that depends on it runs after it
// with no help from the client.
func TestNodeCrash(t *testing.T) {
	smoke(t)
	c := Start(t)
	work := t.TempDir()
	// The first attempt hangs in a command line no other process has, so
	// the test can tell that KillNode killed it.
	const hang = "sleep 297.5"
	job := c.Submit("--nodelist=store3", "--chdir="+work, "--output=job.out", "--open-mode=append", "--wrap",
		`echo "$SLURMD_NODENAME ${SLURM_RESTART_COUNT:-0}" >> attempts; [ -n "$SLURM_RESTART_COUNT" ] || `+hang)
	after := c.Submit("--dependency=afterok:"+job, "--chdir="+work, "--output=after.out", "--wrap", "echo after")
	w := c.watch(t, job, "store3")
	w.until("job running", time.Minute, func(j Job, _ string) bool { return j.State == "RUNNING" && running(hang) })

	c.KillNode("store3")
	if running(hang) {
		t.Errorf("KillNode left the job's process %q running", hang)
	}
	killed := time.Now()
	j, _ := w.until("node down", time.Minute, func(_ Job, n string) bool { return strings.HasPrefix(n, "down") })
	t.Logf("store3 down %.1fs after the crash", time.Since(killed).Seconds())
	j, _ = w.until("job requeued", time.Minute, func(j Job, _ string) bool { return j.State == "PENDING" })
	if j.Restarts != 1 {
		t.Errorf("requeued job: %+v, want Restarts=1", j)
	}
	// Pinned to a node that is down, it waits for the node.
	w.until("job waits for its node", 30*time.Second, func(j Job, _ string) bool {
		return strings.HasPrefix(j.Reason, "ReqNodeNotAvail")
	})

	restart := time.Now()
	c.StartNode("store3")
	t.Logf("store3 back in %.1fs", time.Since(restart).Seconds())
	for _, j := range c.WaitJob(job, time.Minute) {
		if j.State != "COMPLETED" || j.Restarts != 1 {
			t.Errorf("job after the crash: %+v, want COMPLETED with Restarts=1", j)
		}
	}
	t.Logf("job completed %.1fs after the node came back", time.Since(restart).Seconds())
	if got := readFile(t, filepath.Join(work, "attempts")); got != "store3 0\nstore3 1\n" {
		t.Errorf("attempts: %q, want one on store3 before the crash and one after", got)
	}
	for _, j := range c.WaitJob(after, time.Minute) {
		if j.State != "COMPLETED" {
			t.Errorf("dependent job: %+v, want COMPLETED", j)
		}
	}
}

// TestSlurmdKilled proves that killing only a node's slurmd does not kill
// its running job: the job completes once, with no restart, and the node
// turns DOWN until its slurmd is back. A job sent to the node meanwhile
// fails to launch, is requeued, and runs once when the node is back.
func TestSlurmdKilled(t *testing.T) {
	smoke(t)
	c := Start(t)
	work := t.TempDir()
	job := c.Submit("--nodelist=store1", "--chdir="+work, "--output=job.out", "--wrap", `echo "job $SLURMD_NODENAME" >> attempts; sleep 3`)
	w := c.watch(t, job, "store1")
	w.until("job running", time.Minute, func(j Job, _ string) bool { return j.State == "RUNNING" })
	c.KillSlurmd("store1")
	late := c.Submit("--nodelist=store1", "--chdir="+work, "--output=late.out", "--wrap", `echo "late $SLURMD_NODENAME ${SLURM_RESTART_COUNT:-0}" >> attempts`)
	w.until("node down", time.Minute, func(_ Job, n string) bool { return strings.HasPrefix(n, "down") })
	j, _ := w.until("job finished", time.Minute, func(j Job, _ string) bool { return Finished(j.State) })
	if j.State != "COMPLETED" || j.Restarts != 0 {
		t.Errorf("job whose slurmd died: %+v, want COMPLETED with no restart", j)
	}
	lw := c.watch(t, late, "store1")
	if j, _ := lw.until("late job requeued", time.Minute, func(j Job, _ string) bool { return j.Restarts > 0 }); j.State != "PENDING" {
		t.Errorf("job sent to the dead node: %+v, want PENDING again", j)
	}
	c.StartNode("store1")
	for _, j := range c.WaitJob(late, time.Minute) {
		if j.State != "COMPLETED" || j.Restarts != 1 {
			t.Errorf("job sent to the dead node, after its return: %+v, want COMPLETED with Restarts=1", j)
		}
	}
	if got := readFile(t, filepath.Join(work, "attempts")); got != "job store1\nlate store1 1\n" {
		t.Errorf("attempts: %q, want each job once", got)
	}
	c.WaitNodeState("store1", 30*time.Second, "idle")
}

// TestRetry proves how a client retries array tasks that were cancelled or
// failed: `scontrol requeue JOB_TASK` runs the task again, but a job that
// depends on the array stays PENDING with reason DependencyNeverSatisfied;
// `scontrol update jobid=J dependency=afterok:A_0:A_1:...` naming the tasks
// releases it, while afterok on the whole array stays failed.
func TestRetry(t *testing.T) {
	smoke(t)
	c := Start(t)
	work := t.TempDir()
	// Task 1 hangs on its first attempt (the test cancels it); task 2
	// fails on its first attempt.
	array := c.Submit("--array=0-3", "--chdir="+work, "--output=task-%a.out", "--open-mode=append", "--wrap", `
		echo "$SLURM_ARRAY_TASK_ID ${SLURM_RESTART_COUNT:-0}" >> attempts
		if [ -z "$SLURM_RESTART_COUNT" ]; then
			[ "$SLURM_ARRAY_TASK_ID" = 1 ] && sleep 297.25
			[ "$SLURM_ARRAY_TASK_ID" = 2 ] && exit 3
		fi
		exit 0`)
	tasks := make([]string, 4)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("%s_%d", array, i)
	}
	onArray := c.Submit("--dependency=afterok:"+array, "--chdir="+work, "--output=/dev/null", "--wrap", "true")
	onTasks := c.Submit("--dependency=afterok:"+strings.Join(tasks, ":"), "--chdir="+work, "--output=/dev/null", "--wrap", "true")

	// RUNNING comes before the script starts; wait until it hangs.
	c.watch(t, tasks[1], "store1").until("task 1 hanging", time.Minute, func(Job, string) bool { return running("sleep 297.25") })
	run(t, c, "scancel", tasks[1])
	for _, id := range []string{tasks[0], tasks[2], tasks[3]} {
		c.WaitJob(id, time.Minute)
	}
	want := map[string]string{tasks[0]: "COMPLETED", tasks[1]: "CANCELLED", tasks[2]: "FAILED", tasks[3]: "COMPLETED"}
	for id, state := range want {
		if j := c.WaitJob(id, time.Minute); j[0].State != state {
			t.Errorf("task %s: %+v, want %s", id, j[0], state)
		}
	}
	for _, id := range []string{onArray, onTasks} {
		c.watch(t, id, "store1").until("dependency failed", 30*time.Second, func(j Job, _ string) bool {
			return j.State == "PENDING" && j.Reason == "DependencyNeverSatisfied"
		})
	}

	run(t, c, "scontrol", "requeue", tasks[1]+","+tasks[2])
	for _, id := range []string{tasks[1], tasks[2]} {
		if j := c.WaitJob(id, time.Minute); j[0].State != "COMPLETED" || j[0].Restarts != 1 {
			t.Errorf("requeued task %s: %+v, want COMPLETED with Restarts=1", id, j[0])
		}
	}
	time.Sleep(3 * time.Second) // three scheduler passes
	for _, id := range []string{onArray, onTasks} {
		if j, err := c.Jobs(id); err != nil || j[0].Reason != "DependencyNeverSatisfied" {
			t.Errorf("job %s depending on the retried tasks: %+v %v, want still DependencyNeverSatisfied", id, j, err)
		}
	}

	run(t, c, "scontrol", "update", "jobid="+onTasks, "dependency=afterok:"+strings.Join(tasks, ":"))
	if j := c.WaitJob(onTasks, time.Minute); j[0].State != "COMPLETED" {
		t.Errorf("job released by naming the tasks: %+v, want COMPLETED", j[0])
	}
	run(t, c, "scontrol", "update", "jobid="+onArray, "dependency=afterok:"+array)
	time.Sleep(3 * time.Second)
	if j, err := c.Jobs(onArray); err != nil || j[0].Reason != "DependencyNeverSatisfied" {
		t.Errorf("job depending on the whole array after update: %+v %v, want still DependencyNeverSatisfied", j, err)
	}
	run(t, c, "scancel", onArray)
	if got := readFile(t, filepath.Join(work, "attempts")); len(strings.Split(strings.TrimSpace(got), "\n")) != 6 {
		t.Errorf("attempts: %q, want 6 (four tasks, two retried)", got)
	}
	if running("sleep 297.25") {
		t.Error("the cancelled task's process is still running")
	}
}

// TestConfig proves that Config's nodes, CPUs and Extra lines reach the
// running cluster, an Extra line overriding the generated setting.
func TestConfig(t *testing.T) {
	smoke(t)
	c := StartConfig(t, Config{Nodes: []string{"a", "b"}, CPUs: 3, Extra: []string{"SlurmdTimeout=42"}})
	out := run(t, c, "scontrol", "show", "config")
	if !strings.Contains(out, "SlurmdTimeout           = 42 sec") {
		t.Errorf("SlurmdTimeout not overridden:\n%s", out)
	}
	out = run(t, c, "sinfo", "--noheader", "--Node", "--format=%N %c %t")
	if got := strings.Fields(out); strings.Join(got, " ") != "a 3 idle b 3 idle" {
		t.Errorf("sinfo: %q, want nodes a and b with 3 CPUs, idle", out)
	}
}
