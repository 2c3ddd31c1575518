// Package slurmtest runs a real Slurm cluster on this machine for tests:
// Debian's munged, one slurmctld and one slurmd per node (slurmd -N NAME),
// every node at 127.0.0.1 on its own port, all state under a temporary
// directory, stopped when the test ends. Jobs run as root, as the daemons
// do.
//
// The nodes share this machine's file system, as the nodes of a real
// cluster share the work directory: a job starts in the directory sbatch
// was run from (or --chdir) and sees the submitting environment (sbatch's
// default --export=ALL), so binaries are found by absolute path or the
// client's PATH. $SLURMD_NODENAME names the node a job runs on.
//
// A client needs only SLURM_CONF (Env): slurm.conf names the cluster's
// munged socket (AuthInfo=socket=...), so sbatch, squeue and scontrol
// authenticate through it and never touch the system's munge. There is no
// accounting database, so sacct does not work: finished jobs stay visible
// to scontrol show job for MinJobAge (an hour here; 300 s
// on a cluster with the default).
//
// What a client sees when things fail, as observed with Slurm 22.05 (the
// smoke test, make test-cluster, checks all but the late restart):
//
//   - A node crashes under a batch job (KillNode): sinfo shows the node
//     "mix*" or "alloc*" (not responding), then "down*" about 14 s later;
//     the job goes back to PENDING with Restarts=1, reason BeginTime for
//     cred_expire (5 s here, 120 s by default), then, pinned with
//     --nodelist to the dead node, ReqNodeNotAvail,_UnavailableNodes:NODE.
//     When the node's slurmd is back (StartNode; ReturnToService=2 returns
//     it without scontrol update state=resume) the job runs again with
//     SLURM_RESTART_COUNT=1 and a job that depends on it (afterok) then
//     runs by itself. The rerun truncates the job's --output unless
//     --open-mode=append. A slurmd that comes back before the node was
//     marked down leaves the job RUNNING until slurmctld next asks the node
//     what runs there (every 20 pings, 40 s here), and then it is requeued.
//   - Only slurmd dies (KillSlurmd): the job goes on, ends COMPLETED with
//     no restart once the node is marked down, and runs once.
//   - A job launched at a node whose slurmd is dead but not yet marked
//     down fails to launch and is requeued (Restarts=1), never run twice.
//   - A task that is cancelled (scancel JOB_TASK) or fails ends CANCELLED
//     or FAILED; every job that depends on it stays PENDING with reason
//     DependencyNeverSatisfied, forever. To retry: scontrol requeue
//     JOB_TASK (it runs again, SLURM_RESTART_COUNT=1), then, once it has
//     completed, name the tasks in the dependent's dependency:
//     scontrol update jobid=DEPENDENT dependency=afterok:JOB_0:JOB_1:...
//     afterok on the whole array (afterok:JOB) stays failed even after
//     that update; cancel and resubmit such a dependent instead.
//
// Tests skip when the Slurm or MUNGE binaries are missing, unless the
// environment sets WARCDEDUP_REQUIRE_SLURM=1, in which case they fail.
package slurmtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Config describes a cluster; Start fills in the defaults.
type Config struct {
	// Nodes names the nodes; default store1, store2, store3.
	Nodes []string
	// CPUs is each node's number of job slots (default 2). The nodes share
	// this machine's cores; the number only bounds how many jobs a node
	// runs at once.
	CPUs int
	// Extra lines are appended to slurm.conf; a later setting overrides
	// an earlier one (SlurmdTimeout=30, say, for a slow machine).
	Extra []string
}

// Timeouts of the generated slurm.conf, tuned so that a test sees a node
// crash and a requeue in seconds rather than minutes (Slurm's defaults:
// SlurmdTimeout 300 s, MessageTimeout 10 s, cred_expire 120 s, which is
// also how long a requeued job waits before it may start again).
const (
	slurmdTimeout  = 6
	messageTimeout = 3
	credExpire     = 5
)

// Cluster is a running cluster.
type Cluster struct {
	t     testing.TB
	dir   string
	conf  string
	bins  map[string]string
	nodes []string
	ports map[string]int

	munged  *daemon
	ctld    *daemon
	slurmd  map[string]*daemon
	stopped bool
}

// Start runs a cluster of the named nodes (store1..store3 when none are
// named), waits until every node is idle, and stops it all when the test
// ends.
func Start(t testing.TB, nodes ...string) *Cluster {
	t.Helper()
	return StartConfig(t, Config{Nodes: nodes})
}

// StartConfig is Start with a Config.
func StartConfig(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	bins := binaries(t)
	if len(cfg.Nodes) == 0 {
		cfg.Nodes = []string{"store1", "store2", "store3"}
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = 2
	}
	c := &Cluster{
		t:      t,
		bins:   bins,
		nodes:  append([]string(nil), cfg.Nodes...),
		ports:  make(map[string]int),
		slurmd: make(map[string]*daemon),
	}
	c.dir = clusterDir(t)
	for _, sub := range []string{"state", "log", "spool"} {
		if err := os.MkdirAll(filepath.Join(c.dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Stops whatever did start, also when a step below fails.
	t.Cleanup(c.Stop)

	conf, err := c.slurmConf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.conf = filepath.Join(c.dir, "slurm.conf")
	if err := os.WriteFile(c.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	key := filepath.Join(c.dir, "munge.key")
	if out, err := exec.Command(bins["mungekey"], "-c", "-k", key).CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v\n%s", err, out)
	}
	c.munged = c.spawn("munged", filepath.Join(c.dir, "log", "munged.log"), bins["munged"],
		"--foreground", "--socket="+c.mungeSocket(), "--key-file="+key,
		"--pid-file="+filepath.Join(c.dir, "munged.pid"),
		"--seed-file="+filepath.Join(c.dir, "munged.seed"),
		"--log-file="+filepath.Join(c.dir, "log", "munged.log"))
	c.waitFor("munged socket", 10*time.Second, func() (bool, error) {
		conn, err := net.Dial("unix", c.mungeSocket())
		if err != nil {
			return false, c.exited(c.munged)
		}
		conn.Close()
		return true, nil
	})

	c.ctld = c.spawn("slurmctld", filepath.Join(c.dir, "log", "slurmctld.out"), bins["slurmctld"], "-D", "-f", c.conf)
	for _, n := range c.nodes {
		c.startSlurmd(n)
	}
	c.waitFor("every node idle", 30*time.Second, func() (bool, error) {
		states, err := c.NodeStates()
		if err != nil {
			return false, c.exited(append([]*daemon{c.ctld}, c.daemons()...)...)
		}
		for _, n := range c.nodes {
			if states[n] != "idle" {
				return false, c.exited(append([]*daemon{c.ctld}, c.daemons()...)...)
			}
		}
		return true, nil
	})
	return c
}

// clusterDir makes the directory that holds the cluster's files, removed
// when the test ends. It is not the test's temporary directory: munged
// wants every directory above its socket searchable by all (the test's is
// private), and the spool directories hold slurmstepd's unix sockets,
// whose paths must fit in 108 bytes.
func clusterDir(t testing.TB) string {
	dir, err := os.MkdirTemp("/tmp", "slurmtest-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (c *Cluster) mungeSocket() string { return filepath.Join(c.dir, "munge.sock") }

func (c *Cluster) slurmConf(cfg Config) (string, error) {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	seen := make(map[string]bool)
	for _, n := range cfg.Nodes {
		if n == "" || seen[n] || strings.ContainsAny(n, " \t=,[]%/") {
			return "", fmt.Errorf("slurmtest: node name %q empty, repeated or not a plain name", n)
		}
		seen[n] = true
	}
	ports, err := freePorts(len(cfg.Nodes) + 1)
	if err != nil {
		return "", err
	}
	for i, n := range cfg.Nodes {
		c.ports[n] = ports[i+1]
	}
	p("# Written by warcdedup's internal/slurmtest for one test.")
	p("ClusterName=warcdedup")
	p("SlurmctldHost=localhost(127.0.0.1)")
	p("SlurmctldPort=%d", ports[0])
	p("SlurmdPort=%d", c.ports[cfg.Nodes[0]])
	// The tests run as root, and so do the daemons and the jobs.
	p("SlurmUser=root")
	p("SlurmdUser=root")
	p("AuthType=auth/munge")
	p("CredType=cred/munge")
	// The clients read this file too (SLURM_CONF), so sbatch finds this
	// munged rather than the system's socket.
	p("AuthInfo=socket=%s,cred_expire=%d", c.mungeSocket(), credExpire)
	p("StateSaveLocation=%s/state", c.dir)
	p("SlurmdSpoolDir=%s/spool/%%n", c.dir)
	p("SlurmctldPidFile=%s/slurmctld.pid", c.dir)
	p("SlurmdPidFile=%s/slurmd-%%n.pid", c.dir)
	p("SlurmctldLogFile=%s/log/slurmctld.log", c.dir)
	p("SlurmdLogFile=%s/log/slurmd-%%n.log", c.dir)
	p("SlurmctldDebug=info")
	p("SlurmdDebug=info")
	p("LogTimeFormat=iso8601_ms")
	// No cgroups: the nodes share one machine and its process tree. A job's
	// processes are tracked by process group: proctrack/linuxproc, which
	// follows parent links, left a job's child running after scancel in 3
	// of 20 cancellations at job start here (the child was forked while
	// the tracker walked the tree); proctrack/pgid in none of 24.
	p("ProctrackType=proctrack/pgid")
	p("TaskPlugin=task/none")
	p("JobAcctGatherType=jobacct_gather/none")
	p("AccountingStorageType=accounting_storage/none")
	p("JobCompType=jobcomp/none")
	p("MpiDefault=none")
	p("MailProg=/bin/true")
	p("SelectType=select/cons_tres")
	p("SelectTypeParameters=CR_CPU")
	// A job starts within a second of its submission or of the end of the
	// job it depends on (defaults: a 3 s batch delay, a 60 s main loop,
	// a 30 s backfill loop).
	p("SchedulerType=sched/backfill")
	p("SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,sched_interval=1,bf_interval=1")
	p("SlurmdTimeout=%d", slurmdTimeout)
	p("MessageTimeout=%d", messageTimeout)
	p("TCPTimeout=1")
	p("KillWait=2")
	p("InactiveLimit=0")
	// Finished jobs stay visible to squeue and scontrol for the whole test.
	p("MinJobAge=3600")
	// A batch job on a node that fails is requeued, and a node that comes
	// back is used again without an administrator.
	p("JobRequeue=1")
	p("ReturnToService=2")
	// The nodes are declared, not measured: they share this machine.
	p("SlurmdParameters=config_overrides")
	for _, n := range cfg.Nodes {
		p("NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 Port=%d CPUs=%d State=UNKNOWN", n, c.ports[n], cfg.CPUs)
	}
	p("PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
	for _, l := range cfg.Extra {
		p("%s", l)
	}
	return b.String(), nil
}

// Env is what a client process needs, besides its own environment, to talk
// to the cluster: SLURM_CONF, which also names the munged socket.
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.conf} }

// Command runs a Slurm client (sbatch, squeue, scontrol, ...) against the
// cluster: the environment is the test's plus Env.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	bin, ok := c.bins[name]
	if !ok {
		bin = name
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	return cmd
}

// Run runs a Slurm client and returns its standard output; a failure is
// an error that carries its standard error.
func (c *Cluster) Run(name string, args ...string) (string, error) {
	cmd := c.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

// NodeStates maps each node to its state as sinfo abbreviates it: idle,
// alloc, mix, comp, down, drain, ..., with "*" appended while the node
// does not respond.
func (c *Cluster) NodeStates() (map[string]string, error) {
	out, err := c.Run("sinfo", "--noheader", "--Node", "--format=%N %t")
	if err != nil {
		return nil, err
	}
	states := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			states[f[0]] = f[1]
		}
	}
	return states, nil
}

// WaitNodeState waits until node's state (as NodeStates gives it) is one of
// states, and fails the test after timeout.
func (c *Cluster) WaitNodeState(node string, timeout time.Duration, states ...string) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("node %s %v", node, states), timeout, func() (bool, error) {
		all, err := c.NodeStates()
		if err != nil {
			return false, nil
		}
		for _, s := range states {
			if all[node] == s {
				return true, nil
			}
		}
		return false, nil
	})
}

// Submit runs sbatch --parsable with args and returns the job's id (an
// array's job id).
func (c *Cluster) Submit(args ...string) string {
	c.t.Helper()
	out, err := c.Run("sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.Atoi(id); err != nil {
		c.t.Fatalf("sbatch printed %q, not a job id", out)
	}
	return id
}

// Job is one job, or one task of an array, as scontrol shows it.
type Job struct {
	ID       string // "12", or "12_3" for task 3 of array 12
	State    string // PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, NODE_FAIL, ...
	Reason   string // why it pends: None, BeginTime, Dependency, DependencyNeverSatisfied, ...
	Node     string // NodeList, "(null)" before it runs
	Restarts int    // how many times Slurm requeued it
	ExitCode string // "status:signal"
}

// Jobs shows job id: the job, or every task of an array (tasks that have
// not started yet may show as one record, "12_[1-3]").
func (c *Cluster) Jobs(id string) ([]Job, error) {
	out, err := c.Run("scontrol", "--oneliner", "show", "job", id)
	if err != nil {
		return nil, err
	}
	var jobs []Job
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := make(map[string]string)
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		j := Job{ID: f["JobId"], State: f["JobState"], Reason: f["Reason"], Node: f["NodeList"], ExitCode: f["ExitCode"]}
		if task, ok := f["ArrayTaskId"]; ok {
			j.ID = f["ArrayJobId"] + "_" + task
		}
		j.Restarts, _ = strconv.Atoi(f["Restarts"])
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	return jobs, nil
}

// Finished reports whether state is one a job does not leave by itself.
func Finished(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED":
		return true
	}
	return false
}

// WaitJob waits until job id (every task, for an array) has finished and
// returns it; it fails the test after timeout.
func (c *Cluster) WaitJob(id string, timeout time.Duration) []Job {
	c.t.Helper()
	var jobs []Job
	c.waitFor("job "+id+" finished", timeout, func() (bool, error) {
		var err error
		if jobs, err = c.Jobs(id); err != nil {
			return false, nil
		}
		for _, j := range jobs {
			if !Finished(j.State) {
				return false, nil
			}
		}
		return true, nil
	})
	return jobs
}

// KillNode crashes node: its slurmd and every process of the jobs running
// on it (slurmstepd and the job's own processes, also those that left
// slurmstepd's tree) are killed at once, as
// when the host goes down. slurmctld notices within about 14 s: the node
// turns DOWN and its batch jobs are requeued. Wait for that
// (WaitNodeState(node, time.Minute, "down*")) before StartNode, as after a
// real crash; a node restarted sooner gets its lost jobs requeued only at
// slurmctld's next registration check, up to 40 s later.
func (c *Cluster) KillNode(node string) {
	c.t.Helper()
	c.killSteps(node)
	c.KillSlurmd(node)
}

// KillSlurmd kills only node's slurmd. Jobs running there go on to the end
// and report to slurmctld themselves; the node turns DOWN after
// SlurmdTimeout all the same.
func (c *Cluster) KillSlurmd(node string) {
	c.t.Helper()
	d, ok := c.slurmd[node]
	if !ok {
		c.t.Fatalf("slurmtest: no node %q", node)
	}
	d.kill()
}

// StartNode starts node's slurmd again (after KillNode or KillSlurmd) and
// waits until the node answers and is neither down nor failing to respond.
func (c *Cluster) StartNode(node string) {
	c.t.Helper()
	if d, ok := c.slurmd[node]; !ok {
		c.t.Fatalf("slurmtest: no node %q", node)
	} else if d.running() {
		c.t.Fatalf("slurmtest: node %s is running", node)
	}
	c.startSlurmd(node)
	addr := fmt.Sprintf("127.0.0.1:%d", c.ports[node])
	c.waitFor("node "+node+" back", 30*time.Second, func() (bool, error) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return false, c.exited(c.slurmd[node])
		}
		conn.Close()
		states, err := c.NodeStates()
		if err != nil {
			return false, nil
		}
		s := states[node]
		return s != "" && !strings.HasSuffix(s, "*") && !strings.HasPrefix(s, "down") && s != "unk", nil
	})
}

func (c *Cluster) startSlurmd(node string) {
	c.slurmd[node] = c.spawn("slurmd "+node, filepath.Join(c.dir, "log", "slurmd-"+node+".out"),
		c.bins["slurmd"], "-D", "-N", node, "-f", c.conf)
}

func (c *Cluster) daemons() []*daemon {
	var ds []*daemon
	for _, n := range c.nodes {
		if d := c.slurmd[n]; d != nil {
			ds = append(ds, d)
		}
	}
	return ds
}

// Stop kills every process of the cluster: job steps and the jobs'
// processes (as KillNode does), slurmd, slurmctld and munged. Start registers it as a cleanup; calling it twice is fine.
func (c *Cluster) Stop() {
	if c.t.Failed() && !c.stopped {
		c.logTails()
	}
	c.stopped = true
	for _, n := range c.nodes {
		c.killSteps(n)
		if d := c.slurmd[n]; d != nil {
			d.kill()
		}
	}
	for _, d := range []*daemon{c.ctld, c.munged} {
		if d != nil {
			d.kill()
		}
	}
}

// logTails shows the end of every daemon's log, for a failed test.
func (c *Cluster) logTails() {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "log", "*"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		lines = lines[max(0, len(lines)-25):]
		c.t.Logf("%s (end):\n%s", l, strings.Join(lines, "\n"))
	}
}

// killSteps kills node's slurmstepd processes and everything they started.
// slurmstepd leaves slurmd's process tree and session, and overwrites its
// environment with its title; what gives it away is the node's slurmd log,
// which it keeps open. A job's process that has left the tree (its parent
// died) still carries the job's environment: SLURM_CONF naming this
// cluster and SLURMD_NODENAME naming the node.
func (c *Cluster) killSteps(node string) {
	log := filepath.Join(c.dir, "log", "slurmd-"+node+".log")
	var daemonPid int
	if d := c.slurmd[node]; d != nil && d.running() {
		daemonPid = d.cmd.Process.Pid
	}
	jobEnv := []string{"SLURM_CONF=" + c.conf, "SLURMD_NODENAME=" + node}
	self := os.Getpid()
	killed := make(map[int]bool)
	// Stop, then look again: a process may fork between a scan and the
	// signal.
	for round := 0; round < 10; round++ {
		procs := processTree(func(pid int) bool {
			return pid != daemonPid && pid != self && (holdsFile(pid, log) || hasEnv(pid, jobEnv))
		})
		fresh := 0
		for _, pid := range procs {
			if !killed[pid] && pid != self {
				syscall.Kill(pid, syscall.SIGSTOP)
				killed[pid] = true
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	for pid := range killed {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	// Death is not instant; a crash is over when they are all gone.
	deadline := time.Now().Add(10 * time.Second)
	for pid := range killed {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && !bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}

// processTree lists the processes for which root returns true and all
// their descendants.
func processTree(root func(pid int) bool) []int {
	entries, _ := os.ReadDir("/proc")
	children := make(map[int][]int)
	var queue []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
		if root(pid) {
			queue = append(queue, pid)
		}
	}
	var all []int
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		all = append(all, pid)
		queue = append(queue, children[pid]...)
	}
	return all
}

// hasEnv reports whether process pid was started with every one of vars
// ("NAME=value") in its environment.
func hasEnv(pid int, vars []string) bool {
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return false
	}
	have := make(map[string]bool)
	for _, kv := range bytes.Split(env, []byte{0}) {
		have[string(kv)] = true
	}
	for _, v := range vars {
		if !have[v] {
			return false
		}
	}
	return true
}

func holdsFile(pid int, path string) bool {
	fds := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(fds)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

// waitFor polls done until it is true, and fails the test when done returns
// an error or timeout passes.
func (c *Cluster) waitFor(what string, timeout time.Duration, done func() (bool, error)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if ok {
			return
		}
		if err != nil {
			c.t.Fatalf("slurmtest: waiting for %s: %v", what, err)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("slurmtest: %s: not after %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// daemon is one process the cluster started.
type daemon struct {
	name string
	out  string // its standard output and error
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has been waited for
}

func (c *Cluster) spawn(name, out, bin string, args ...string) *daemon {
	c.t.Helper()
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), c.Env()...)
	// Its own process group takes its helpers (slurmctld's slurmscriptd)
	// down with it; Pdeathsig does so when the test binary dies without
	// running its cleanups (a test timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting %s: %v", name, err)
	}
	d := &daemon{name: name, out: out, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(d.done) }()
	return d
}

func (d *daemon) running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

func (d *daemon) kill() {
	if d.running() {
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-d.done
}

// exited returns an error naming the first of ds that is no longer
// running, with the end of its output.
func (c *Cluster) exited(ds ...*daemon) error {
	for _, d := range ds {
		if d != nil && !d.running() {
			out, _ := os.ReadFile(d.out)
			return fmt.Errorf("%s exited (%v): %s", d.name, d.cmd.ProcessState, bytes.TrimSpace(out))
		}
	}
	return nil
}

// binaries finds the programs the cluster needs, in PATH or in Debian's
// directories (/usr/sbin is not in every PATH).
func binaries(t testing.TB) map[string]string {
	t.Helper()
	bins := make(map[string]string)
	var missing []string
	for _, name := range []string{"munged", "mungekey", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue", "scontrol", "scancel"} {
		path, err := exec.LookPath(name)
		if err != nil {
			for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
				if p := filepath.Join(dir, name); isExecutable(p) {
					path, err = p, nil
					break
				}
			}
		}
		if err != nil {
			missing = append(missing, name)
			continue
		}
		bins[name] = path
	}
	if len(missing) > 0 {
		if os.Getenv("WARCDEDUP_REQUIRE_SLURM") == "1" {
			t.Fatalf("Slurm is required (WARCDEDUP_REQUIRE_SLURM=1) but %s not installed", strings.Join(missing, ", "))
		}
		t.Skipf("Slurm not installed (no %s)", strings.Join(missing, ", "))
	}
	return bins
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago (all are held until all are found, so none repeats).
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
