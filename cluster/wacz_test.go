package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/jobtest"
)

// localSlurm is a scheduler that runs each task of a job in the test's
// process, as soon as what it depends on has completed: a cluster job
// over hosts that are directories of this machine, with no Slurm. A task
// that fails for good ends as warcdedup cluster-task does, with
// ExitPermanent.
type localSlurm struct {
	t     *testing.T
	work  string
	next  int
	jobs  map[string]*localJob
	order []string
	ran   []string // the tasks run, "STEP/N"
}

type localJob struct {
	JobState
	step string
	task int
	deps []string
}

func (l *localSlurm) Submit(req *Submission) (string, error) {
	l.next++
	id := fmt.Sprint(l.next)
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
		l.jobs[jid] = &localJob{JobState: JobState{ID: jid, State: "PENDING"}, step: step, task: i, deps: parseDeps(req.Dependency)}
		l.order = append(l.order, jid)
	}
	return id, nil
}

// Query runs the jobs whose dependencies have completed, then says what
// became of them.
func (l *localSlurm) Query(ids []string) (map[string]JobState, error) {
	for _, jid := range l.order {
		j := l.jobs[jid]
		if j.State != "PENDING" {
			continue
		}
		ready := true
		for _, d := range j.deps {
			if dj := l.jobs[d]; dj == nil || dj.State != "COMPLETED" {
				ready = false
			}
		}
		if !ready {
			continue
		}
		l.ran = append(l.ran, taskKey(j.step, j.task))
		err := (&Task{WorkDir: l.work, Step: j.step, Index: j.task, Log: io.Discard}).Run(context.Background())
		var perm *PermanentError
		switch {
		case err == nil:
			j.State = "COMPLETED"
		case errors.As(err, &perm):
			j.State, j.Exit = "FAILED", ExitPermanent
		default:
			j.State, j.Exit = "FAILED", 1
		}
	}
	out := map[string]JobState{}
	for jid, j := range l.jobs {
		base, _, _ := strings.Cut(jid, "_")
		for _, id := range ids {
			if id == base {
				out[jid] = j.JobState
			}
		}
	}
	return out, nil
}

func (l *localSlurm) Requeue(ids []string) error {
	for _, id := range ids {
		l.jobs[id].State = "PENDING"
	}
	return nil
}

func (l *localSlurm) SetDependency(base, dep string) error {
	for jid, j := range l.jobs {
		if b, _, _ := strings.Cut(jid, "_"); b == base && j.State == "PENDING" {
			j.deps = parseDeps(dep)
		}
	}
	return nil
}

func (l *localSlurm) Cancel(ids []string) error {
	for _, id := range ids {
		l.jobs[id].State = "CANCELLED"
	}
	return nil
}

// TestClusterWACZ proves what a cluster job does with a host whose
// directory holds WACZ packages, which only warcdedup run deduplicates
// (it writes each package anew, with its datapackage.json): the job stops
// at the hash of that host, before any rewrite, naming the package and
// saying what to do, and every file of the host is as it was. A job that
// went on would leave the packages' duplicates as they are while saying
// it is done, and rewrite the WARC files beside them without the
// revisits in the packages that pin their originals.
func TestClusterWACZ(t *testing.T) {
	tests := []struct {
		name  string
		make  func(t *testing.T) string
		index bool // the hosts' files a crawl, with a crawl index
	}{
		{"packages alone", func(t *testing.T) string { dir, _ := jobtest.GeneratedWACZ(t, false); return dir }, false},
		{"packages beside WARC files, against a crawl index", func(t *testing.T) string { dir, _ := jobtest.GeneratedWACZ(t, true); return dir }, true},
		{"packages beside WARC files", func(t *testing.T) string { dir, _ := jobtest.GeneratedWACZ(t, true); return dir }, false},
		{"multi-WACZ JSON", func(t *testing.T) string { dir, _ := jobtest.GeneratedMultiWACZ(t); return dir }, false},
		{"a link under a package's name beside WARC files", func(t *testing.T) string {
			// The package's WARC files kept loose beside it, and the
			// package itself moved out, a link to it left.
			dir, _ := jobtest.GeneratedWACZ(t, true)
			pkgs, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
			if err != nil || len(pkgs) == 0 {
				t.Fatalf("no package in %s (%v)", dir, err)
			}
			for _, p := range pkgs {
				moved := filepath.Join(t.TempDir(), filepath.Base(p))
				if err := os.Rename(p, moved); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(moved, p); err != nil {
					t.Fatal(err)
				}
			}
			return dir
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tt.make(t)
			before := jobtest.HashTree(t, root)
			work := filepath.Join(t.TempDir(), "work")
			sched := &localSlurm{t: t, work: work, jobs: map[string]*localJob{}}
			opt := Options{WorkDir: work, TaskRetries: 1, Scheduler: sched, Poll: time.Millisecond,
				Params: Params{Hosts: []Host{{Name: "a", Root: root, URL: "http://127.0.0.1:1"}}, Ranges: 2,
					Algorithm: "sha1", Policy: "replay"},
				Settings: Settings{Binary: "/usr/bin/warcdedup", Jobs: 2, PerHost: 1, HTTPRetries: 0,
					HTTPTimeout: time.Second, VersionWait: time.Second}}
			if tt.index {
				opt.Params.Index = filepath.Join(t.TempDir(), "index")
				opt.Params.Crawl, opt.Params.CrawlURL = "feb", "http://127.0.0.1:1/feb"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, opt)
			if err == nil {
				t.Fatalf("the job ended without error (result %v, tasks run %v): want it refused, naming the packages", res != nil, sched.ran)
			}
			msg := err.Error()
			t.Logf("refused: %s", msg)
			if !strings.Contains(msg, ".wacz") || !strings.Contains(msg, "warcdedup run") || !strings.Contains(msg, root) {
				t.Errorf("error %q: want it to name the host's directory and a package, and say to deduplicate packages with warcdedup run", msg)
			}
			for _, k := range sched.ran {
				if !strings.HasPrefix(k, kindHash+"@") {
					t.Errorf("task %s ran: want the job stopped at the hash", k)
				}
			}
			jobtest.SameTree(t, "the host's files", jobtest.HashTree(t, root), before)
		})
	}
}
