package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"warcdedup/report"
	"warcdedup/workdir"
)

// fakeSlurm is a scheduler that runs a job as soon as what it depends on
// has completed: the test's outcome function says whether its task
// succeeds (its result is written, as the task would) or how it fails.
type fakeSlurm struct {
	wd      workDir
	next    int
	jobs    map[string]*fakeJob
	order   []string
	outcome func(step string, task, run int) (state string, exit int)
	runs    map[string]int   // by "STEP/N"
	log     []string         // what the monitor asked for
	lose    string           // a task whose job Slurm forgets after it failed once ("STEP/N")
	apart   map[string]int64 // duplicates a rewrite step's result says it kept apart, by step
}

type fakeJob struct {
	JobState
	step string
	task int
	deps []string
}

func newFakeSlurm(wd workDir, outcome func(step string, task, run int) (string, int)) *fakeSlurm {
	return &fakeSlurm{wd: wd, jobs: map[string]*fakeJob{}, outcome: outcome, runs: map[string]int{}}
}

func parseDeps(d string) []string {
	if d == "" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(d, "afterok:"), ":")
}

func (f *fakeSlurm) Submit(req *Submission) (string, error) {
	f.next++
	id := strconv.Itoa(f.next)
	step := strings.TrimSuffix(filepath.Base(req.Script), ".sh")
	tasks := req.Array
	if tasks == nil {
		tasks = []int{0}
	}
	for _, i := range tasks {
		jid := id
		if req.Array != nil {
			jid = fmt.Sprintf("%s_%d", id, i)
		}
		f.jobs[jid] = &fakeJob{JobState: JobState{ID: jid, State: "PENDING", Reason: "Dependency"}, step: step, task: i, deps: parseDeps(req.Dependency)}
		f.order = append(f.order, jid)
	}
	f.log = append(f.log, fmt.Sprintf("submit %s %v after %q", step, req.Array, req.Dependency))
	return id, nil
}

func (f *fakeSlurm) Query(ids []string) (map[string]JobState, error) {
	out := map[string]JobState{}
	for jid, j := range f.jobs {
		base, _, _ := strings.Cut(jid, "_")
		if slices.Contains(ids, base) {
			out[jid] = j.JobState
		}
	}
	return out, nil
}

func (f *fakeSlurm) Requeue(ids []string) error {
	for _, id := range ids {
		j := f.jobs[id]
		j.State, j.Reason = "PENDING", "BeginTime"
		j.Restarts++
		f.log = append(f.log, "requeue "+j.step)
	}
	return nil
}

func (f *fakeSlurm) SetDependency(base, dep string) error {
	for jid, j := range f.jobs {
		if b, _, _ := strings.Cut(jid, "_"); b == base && j.State == "PENDING" {
			j.deps, j.Reason = parseDeps(dep), "Dependency"
		}
	}
	f.log = append(f.log, fmt.Sprintf("dependency %s %q", base, dep))
	return nil
}

func (f *fakeSlurm) Cancel(ids []string) error {
	for _, id := range ids {
		f.jobs[id].State = "CANCELLED"
		f.log = append(f.log, "cancel "+f.jobs[id].step)
	}
	return nil
}

// advance runs every job whose dependencies have completed, and marks the
// others that can never run.
func (f *fakeSlurm) advance(t *testing.T) {
	spec, err := workdir.ReadJSON[Spec](f.wd.file(specFile))
	if err != nil {
		t.Fatal(err)
	}
	// What had ended before this pass: a job runs in the pass after its
	// dependencies, as the monitor sees it.
	ended := map[string]string{}
	for jid, j := range f.jobs {
		ended[jid] = j.State
	}
	for _, jid := range f.order {
		j := f.jobs[jid]
		if j == nil || j.State != "PENDING" {
			continue
		}
		ready := true
		for _, d := range j.deps {
			switch state, ok := ended[d]; {
			case !ok || state == "FAILED" || state == "CANCELLED":
				j.Reason, ready = "DependencyNeverSatisfied", false
			case state != "COMPLETED":
				ready = false
			}
		}
		if !ready {
			continue
		}
		key := taskKey(j.step, j.task)
		f.runs[key]++
		j.State, j.Exit = f.outcome(j.step, j.task, f.runs[key])
		if j.State == "COMPLETED" {
			mk := Marker{Job: spec.ID, Step: j.step, Task: j.task}
			if strings.HasPrefix(j.step, kindRewrite+"@") {
				mk.Rewrite = &RewriteResult{Apart: f.apart[j.step]}
			}
			workdir.WriteJSON(f.wd.taskFile(j.step, j.task, ".json"), mk)
			if j.step == kindAccount {
				var b bytes.Buffer
				report.WriteJSON(&b, &report.Report{Mode: "run"})
				os.WriteFile(f.wd.file("stats.json"), b.Bytes(), 0o644)
			}
		} else if key == f.lose {
			delete(f.jobs, jid)
		}
	}
}

// TestMonitor proves how the monitor drives a job through Slurm: it
// submits every step with its dependencies, runs a failed task again and
// tells the jobs waiting for it, submits again a job Slurm lost, stops at
// once for a task that failed for good or too often, cancelling what is
// still queued.
func TestMonitor(t *testing.T) {
	succeed := func(string, int, int) (string, int) { return "COMPLETED", 0 }
	tests := []struct {
		name    string
		outcome func(step string, task, run int) (string, int)
		lose    string
		stopped string   // the error, "" for a job that completes
		want    []string // in the scheduler's log, in this order
		runs    map[string]int
	}{
		{"every task succeeds", succeed, "", "", []string{
			`submit hash@a [] after ""`, `submit hash@b [] after ""`, `submit resolve [0 1] after "afterok:1:2"`,
			`submit rewrite@a [] after "afterok:3_0:3_1"`, `submit account [] after "afterok:8"`}, nil},
		{"a range fails once: requeued, the rewrites told", func(step string, task, run int) (string, int) {
			if step == "resolve" && task == 1 && run == 1 {
				return "FAILED", 1
			}
			return "COMPLETED", 0
		}, "", "", []string{`requeue resolve`, `dependency 4 "afterok:3_1"`, `dependency 5 "afterok:3_1"`}, map[string]int{"resolve/1": 2, "rewrite@a/0": 1}},
		{"a task cancelled twice and run a third time", func(step string, task, run int) (string, int) {
			if step == "verify" && run <= 2 {
				return "CANCELLED", 0
			}
			return "COMPLETED", 0
		}, "", "", []string{`requeue verify`, `dependency 9 "afterok:8"`, `requeue verify`}, map[string]int{"verify/0": 3}},
		{"a job Slurm lost is submitted again", func(step string, task, run int) (string, int) {
			if step == "hash@b" && run == 1 {
				return "FAILED", 1
			}
			return "COMPLETED", 0
		}, "hash@b/0", "", []string{`submit hash@b [] after ""`, `dependency 3 "afterok:10"`}, map[string]int{"hash@b/0": 2}},
		{"a permanent failure stops the job", func(step string, task, run int) (string, int) {
			if step == "hash@b" {
				return "FAILED", ExitPermanent
			}
			return "COMPLETED", 0
		}, "", "hash@b (Slurm job 2 on no node) ended FAILED, exit status 3", []string{`cancel resolve`, `cancel account`}, map[string]int{"hash@b/0": 1}},
		{"too many failures stop the job", func(step string, task, run int) (string, int) {
			if step == "rewrite@a" {
				return "FAILED", 1
			}
			return "COMPLETED", 0
		}, "", "(after 2 retries)", []string{`requeue rewrite@a`, `requeue rewrite@a`, `cancel rehash@a`}, map[string]int{"rewrite@a/0": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fake := newFakeSlurm(workDir(dir), tt.outcome)
			fake.lose = tt.lose
			opt := Options{WorkDir: dir, TaskRetries: 2, Scheduler: fake,
				// The comparing resolve's plan, whose Slurm job numbers
				// the cases name (TestPlan proves both plans).
				Params: Params{Hosts: []Host{{Name: "a", Root: "/a", URL: "http://a"}, {Name: "b", Root: "/b", URL: "http://b"}}, Ranges: 2, Algorithm: "sha1", Policy: "replay",
					CompareInResolve: true},
				Settings: Settings{Binary: "/usr/bin/warcdedup"}}
			m, err := newMonitor(opt)
			if err != nil {
				t.Fatal(err)
			}
			defer m.close()
			var finished bool
			for range 50 {
				if finished, err = m.tick(); finished || err != nil {
					break
				}
				fake.advance(t)
			}
			log := strings.Join(fake.log, "\n")
			var stop *Stopped
			switch {
			case tt.stopped == "" && (err != nil || !finished):
				t.Fatalf("finished %v, err %v\n%s", finished, err, log)
			case tt.stopped != "":
				if !errors.As(err, &stop) || !strings.Contains(err.Error(), tt.stopped) {
					t.Fatalf("err %v, want %q\n%s", err, tt.stopped, log)
				}
				m.cancelAll()
				log = strings.Join(fake.log, "\n")
			}
			at := 0
			for _, w := range tt.want {
				i := strings.Index(log[at:], w)
				if i < 0 {
					t.Fatalf("the scheduler was not asked %q (in this order):\n%s", w, log)
				}
				at += i + len(w)
			}
			for k, n := range tt.runs {
				if fake.runs[k] != n {
					t.Errorf("%s ran %d times, want %d\n%s", k, fake.runs[k], n, log)
				}
			}
			if tt.stopped == "" {
				if _, err := m.result(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestMonitorResume proves that a second monitor on the work directory
// follows the first one's job: it submits nothing the first submitted,
// and a job with other parameters replaces it, its queued jobs cancelled.
func TestMonitorResume(t *testing.T) {
	dir := t.TempDir()
	fake := newFakeSlurm(workDir(dir), func(string, int, int) (string, int) { return "COMPLETED", 0 })
	opt := Options{WorkDir: dir, TaskRetries: 2, Scheduler: fake, Poll: time.Millisecond,
		Params:   Params{Hosts: []Host{{Name: "a", Root: "/a", URL: "http://a"}}, Ranges: 1, Algorithm: "sha1", Policy: "replay"},
		Settings: Settings{Binary: "/usr/bin/warcdedup"}}
	m, err := newMonitor(opt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.tick(); err != nil {
		t.Fatal(err)
	}
	fake.advance(t) // hash@a done
	m.close()
	submitted := len(fake.log)

	m, err = newMonitor(opt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.tick(); err != nil {
		t.Fatal(err)
	}
	if len(fake.log) != submitted {
		t.Errorf("the second monitor asked for %q", fake.log[submitted:])
	}
	if _, err := newMonitor(opt); err == nil || !strings.Contains(err.Error(), "another warcdedup") {
		t.Errorf("a third monitor beside the second: %v", err)
	}
	m.close()

	opt.Params.Policy = "payload"
	m, err = newMonitor(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	log := strings.Join(fake.log[submitted:], "\n")
	// (Each duplicate compared once: the steps after the rewrites wait
	// to be submitted until the rewrites are done.)
	if !strings.Contains(log, "cancel resolve") || !strings.Contains(log, "cancel rewrite@a") {
		t.Errorf("the earlier job's queued jobs were not cancelled:\n%s\nall:\n%s", log, strings.Join(fake.log, "\n"))
	}
	if len(m.state.Steps["hash@a"].Tasks) != 1 || m.state.Steps["hash@a"].Tasks[0].Slurm != "" || m.isDone("hash@a", 0) {
		t.Errorf("the new job took the earlier one's task: %+v", m.state.Steps["hash@a"])
	}
}

// TestMonitorCollisionsOnlyWhenApart proves that the collisions steps
// cost no Slurm job when the rewrites kept nothing apart: the monitor
// holds them, and the steps after them, until every rewrite is done,
// then records them as not needed and submits hash again with no
// dependency on them; when a rewrite kept duplicates apart, it submits
// them and the steps after them in order. A monitor that resumes the job
// at any tick (a new one each tick) decides the same.
func TestMonitorCollisionsOnlyWhenApart(t *testing.T) {
	tests := []struct {
		name  string
		apart map[string]int64
		want  []string // in the scheduler's log, in this order
		not   []string // never in the scheduler's log
	}{
		{"nothing kept apart", nil, []string{
			`submit hash@a [] after ""`, `submit hash@b [] after ""`, `submit resolve [0 1] after "afterok:1:2"`,
			`submit rewrite@a [] after "afterok:3_0:3_1"`, `submit rewrite@b [] after "afterok:3_0:3_1"`,
			`submit rehash@a [] after ""`, `submit rehash@b [] after ""`, `submit verify [] after "afterok:6:7"`, `submit account [] after "afterok:8"`},
			[]string{"submit collide", "submit recollide"}},
		{"one host kept two apart", map[string]int64{"rewrite@b": 2}, []string{
			`submit rewrite@a [] after "afterok:3_0:3_1"`, `submit rewrite@b [] after "afterok:3_0:3_1"`,
			`submit collide [] after ""`, `submit recollide@a [] after "afterok:6"`, `submit recollide@b [] after "afterok:6"`,
			`submit rehash@a [] after "afterok:7"`, `submit rehash@b [] after "afterok:8"`, `submit verify [] after "afterok:9:10"`, `submit account [] after "afterok:11"`},
			nil},
	}
	for _, tt := range tests {
		for _, resume := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/new monitor each tick=%v", tt.name, resume), func(t *testing.T) {
				dir := t.TempDir()
				fake := newFakeSlurm(workDir(dir), func(string, int, int) (string, int) { return "COMPLETED", 0 })
				fake.apart = tt.apart
				opt := Options{WorkDir: dir, TaskRetries: 2, Scheduler: fake,
					Params:   Params{Hosts: []Host{{Name: "a", Root: "/a", URL: "http://a"}, {Name: "b", Root: "/b", URL: "http://b"}}, Ranges: 2, Algorithm: "sha1", Policy: "replay"},
					Settings: Settings{Binary: "/usr/bin/warcdedup"}}
				m, err := newMonitor(opt)
				if err != nil {
					t.Fatal(err)
				}
				var finished bool
				for range 50 {
					if resume {
						m.close()
						if m, err = newMonitor(opt); err != nil {
							t.Fatal(err)
						}
					}
					if finished, err = m.tick(); finished || err != nil {
						break
					}
					fake.advance(t)
				}
				defer m.close()
				log := strings.Join(fake.log, "\n")
				if err != nil || !finished {
					t.Fatalf("finished %v, err %v\n%s", finished, err, log)
				}
				at := 0
				for _, w := range tt.want {
					i := strings.Index(log[at:], w)
					if i < 0 {
						t.Fatalf("the scheduler was not asked %q (in this order):\n%s", w, log)
					}
					at += i + len(w)
				}
				for _, w := range tt.not {
					if strings.Contains(log, w) {
						t.Errorf("the scheduler was asked %q:\n%s", w, log)
					}
				}
				for _, step := range []string{"collide", "recollide@a", "recollide@b"} {
					mk := m.wd.readMarker(m.spec.ID, step, 0)
					switch {
					case mk == nil:
						t.Errorf("%s has no result", step)
					case mk.NotNeeded != (tt.apart == nil):
						t.Errorf("%s: not needed %v, want %v", step, mk.NotNeeded, tt.apart == nil)
					}
				}
			})
		}
	}
}

// TestMonitorPauseEndsWithTheRewrites proves that the monitor's wait
// between looks ends as soon as the last rewrite has its result while
// the collisions steps wait for that, instead of waiting out the poll,
// and waits the whole poll otherwise.
func TestMonitorPauseEndsWithTheRewrites(t *testing.T) {
	dir := t.TempDir()
	fake := newFakeSlurm(workDir(dir), func(string, int, int) (string, int) { return "COMPLETED", 0 })
	opt := Options{WorkDir: dir, TaskRetries: 2, Scheduler: fake,
		Params:   Params{Hosts: []Host{{Name: "a", Root: "/a", URL: "http://a"}, {Name: "b", Root: "/b", URL: "http://b"}}, Ranges: 1, Algorithm: "sha1", Policy: "replay"},
		Settings: Settings{Binary: "/usr/bin/warcdedup"}}
	m, err := newMonitor(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	start := time.Now()
	if err := m.pause(context.Background(), 300*time.Millisecond); err != nil || time.Since(start) < 300*time.Millisecond {
		t.Errorf("rewrites not done: the pause ended after %v (%v), want the whole 300ms", time.Since(start), err)
	}
	for _, s := range []string{"rewrite@a", "rewrite@b"} {
		workdir.WriteJSON(m.wd.taskFile(s, 0, ".json"), Marker{Job: m.spec.ID, Step: s, Rewrite: &RewriteResult{}})
	}
	start = time.Now()
	if err := m.pause(context.Background(), time.Minute); err != nil || time.Since(start) > 10*time.Second {
		t.Errorf("rewrites done: the pause ended after %v (%v), want at once", time.Since(start), err)
	}
	if err := m.decideCollisions(); err != nil || m.collisions != collisionsNone {
		t.Fatalf("decided %v (%v), want no collisions", m.collisions, err)
	}
	start = time.Now()
	if err := m.pause(context.Background(), 300*time.Millisecond); err != nil || time.Since(start) < 300*time.Millisecond {
		t.Errorf("decided: the pause ended after %v (%v), want the whole 300ms", time.Since(start), err)
	}
}
