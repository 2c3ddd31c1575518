package cluster

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/jobtest"
	"warcdedup/internal/progress"
	"warcdedup/internal/warctest"
	"warcdedup/scripts/gen"
	"warcdedup/stage"
	"warcdedup/wacz"
)

// localSlurm is a scheduler that runs each task of a job in the test's
// process, as soon as what it depends on has completed: a cluster job
// over hosts that are directories of this machine, with no Slurm. A task
// that fails for good ends as warcdedup cluster-task does, with
// ExitPermanent.
type localSlurm struct {
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

// newLocalJob is a cluster job over one host, a, whose files are beneath
// root, its tasks run by a localSlurm; with index, the files are the
// crawl feb of a new crawl index.
func newLocalJob(t *testing.T, root string, index bool) Options {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	opt := Options{WorkDir: work, TaskRetries: 1, Scheduler: &localSlurm{work: work, jobs: map[string]*localJob{}}, Poll: time.Millisecond,
		Params:   Params{Hosts: []Host{{Name: "a", Root: root, URL: "http://127.0.0.1:1"}}, Ranges: 2, Algorithm: "sha1", Policy: "replay"},
		Settings: Settings{Binary: "/usr/bin/warcdedup", Jobs: 2, PerHost: 1, HTTPTimeout: time.Second, VersionWait: time.Second}}
	if index {
		opt.Params.Index = filepath.Join(t.TempDir(), "index")
		opt.Params.Crawl, opt.Params.CrawlURL = "feb", "http://127.0.0.1:1/feb"
	}
	return opt
}

// runJob runs (or resumes) the job and returns its result, the tasks its
// localSlurm has run so far and the job's error.
func runJob(t *testing.T, opt Options) (*stage.Result, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, opt)
	return res, opt.Scheduler.(*localSlurm).ran, err
}

// runLocal runs a newLocalJob.
func runLocal(t *testing.T, root string, index bool) (*stage.Result, []string, error) {
	t.Helper()
	return runJob(t, newLocalJob(t, root, index))
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
		{"packages named in capitals, in a subdirectory", func(t *testing.T) string {
			dir, _ := jobtest.GeneratedWACZ(t, true)
			pkgs, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
			if err != nil || len(pkgs) == 0 {
				t.Fatalf("no package in %s (%v)", dir, err)
			}
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, p := range pkgs {
				if err := os.Rename(p, filepath.Join(dir, "sub", strings.ToUpper(filepath.Base(p)))); err != nil {
					t.Fatal(err)
				}
			}
			return dir
		}, false},
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
			res, ran, err := runLocal(t, root, tt.index)
			if err == nil {
				t.Fatalf("the job ended without error (result %v, tasks run %v): want it refused, naming the packages", res != nil, ran)
			}
			msg := err.Error()
			t.Logf("refused: %s", msg)
			if !strings.Contains(strings.ToLower(msg), ".wacz") || !strings.Contains(msg, "warcdedup run") || !strings.Contains(msg, root) {
				t.Errorf("error %q: want it to name the host's directory and a package, and say to deduplicate packages with warcdedup run", msg)
			}
			for _, k := range ran {
				if !strings.HasPrefix(k, kindHash+"@") {
					t.Errorf("task %s ran: want the job stopped at the hash", k)
				}
			}
			jobtest.SameTree(t, "the host's files", jobtest.HashTree(t, root), before)
		})
	}
}

// TestClusterWACZRevisitKeepsItsOriginal proves that a cluster job over a
// host whose WACZ package holds a revisit of a response in a WARC file
// beside it leaves that response as it is. warcdedup run on that
// directory keeps it (a revisit already in the collection pins it, see
// manifest.Numberer: "1 revisit already there", nothing rewritten); a job
// that passed the package over did not see the revisit, and rewrote its
// original as a revisit of an earlier copy, exit 0, leaving the
// package's revisit referring to a revisit.
func TestClusterWACZRevisitKeepsItsOriginal(t *testing.T) {
	root := filepath.Join(t.TempDir(), "coll")
	// A payload large enough that a revisit saves bytes.
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "logo line %d\n", i)
	}
	body := b.String()
	sum := sha1.Sum([]byte(body))
	payloadDigest := "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
	original := warctest.Response("http://p/2", "2021-01-02T00:00:00Z", body)
	warctest.WriteFile(t, root, "a.warc.gz", warctest.Gzip(
		warctest.Response("http://p/1", "2021-01-01T00:00:00Z", body), original))
	// The package's revisit of http://p/2, as warcdedup run writes one.
	revisit := warctest.Record("revisit", "http://p/4", "2021-01-04T00:00:00Z", "HTTP/1.1 200 OK\r\n\r\n",
		"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
		"WARC-Refers-To-Target-URI: http://p/2", "WARC-Refers-To-Date: 2021-01-02T00:00:00Z",
		"WARC-Payload-Digest: "+payloadDigest)
	member := warctest.WriteFile(t, t.TempDir(), "b.warc.gz", warctest.Gzip(revisit))
	f, err := os.Create(filepath.Join(root, "b.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wacz.Create(f, wacz.CreateOptions{WARCs: []string{member}, Software: "test", TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, ran, err := runLocal(t, root, false)
	t.Logf("job: %v (tasks run %v)", err, ran)
	got, err := os.ReadFile(filepath.Join(root, "a.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), original) {
		at := strings.Index(string(text), "WARC-Target-URI: http://p/2")
		t.Errorf("the response http://p/2 that the package's revisit refers to is no longer in a.warc.gz as it was; now:\n%s",
			text[max(0, at-100):min(len(text), max(0, at)+400)])
	}
}

// TestLocalClusterRuns is the control of the tests above: the same job
// over a host holding WARC and ARC files only runs every step to its end
// and rewrites duplicates, so that their refusals are the packages'.
func TestLocalClusterRuns(t *testing.T) {
	dir, _ := jobtest.Generated(t, gen.Config{Files: 4, Records: 120, DupRate: 0.4, Seed: 5, MeanPayload: 4 << 10,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11, gen.ARCGz}})
	res, ran, err := runLocal(t, dir, false)
	if err != nil {
		t.Fatalf("job: %v (tasks run %v)", err, ran)
	}
	if !slices.Contains(ran, taskKey(kindAccount, 0)) || res.Report.Totals.FilesRewritten == 0 {
		t.Errorf("tasks run %v, %d files rewritten: want every step run and duplicates rewritten", ran, res.Report.Totals.FilesRewritten)
	}
}

// TestClusterStoppedStageNotDone proves that a job stopped by a task that
// failed for good (here a hash refusing a host's packages) shows the
// stage it stopped in as stopped, not as done: the monitor ended it as a
// finished stage, "hash: done in 12 ms (1 task)", before the error.
func TestClusterStoppedStageNotDone(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	var out bytes.Buffer
	opt := newLocalJob(t, dir, false)
	opt.Display = progress.NewPlain(&out, "warcdedup")
	_, _, err := runJob(t, opt)
	if err == nil {
		t.Fatal("the job ended without error: want it stopped at the hash")
	}
	if shown := out.String(); strings.Contains(shown, "hash: done") || !strings.Contains(shown, "hash: stopped") {
		t.Errorf("shown:\n%s\nwant the hash stage stopped, not done", shown)
	}
}

// TestClusterWACZMovedAway proves what the refusal tells the user to do
// works: the packages moved out of the host's directory, the same job
// run again goes on from where it stopped and completes, rewriting the
// WARC files left. The job resumed took the hash's failure for good
// from Slurm's record of it and stopped again at once, repeating the
// error about packages no longer there.
func TestClusterWACZMovedAway(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, true)
	opt := newLocalJob(t, dir, false)
	// Run twice with the packages there: refused each time, the hash
	// run again when the job is (its cause may have been mended), and
	// failing for good again.
	for i := range 2 {
		if _, ran, err := runJob(t, opt); err == nil || !strings.Contains(err.Error(), "holds WACZ packages") {
			t.Fatalf("run %d: %v, want the packages refused", i+1, err)
		} else if hashes := slices.Index(ran, taskKey(kindHash+"@a", 0)); hashes < 0 || len(ran) != i+1 {
			t.Fatalf("run %d: tasks run %v, want the hash once a run", i+1, ran)
		}
	}
	pkgs, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil || len(pkgs) == 0 {
		t.Fatalf("no package in %s (%v)", dir, err)
	}
	away := t.TempDir()
	for _, p := range pkgs {
		if err := os.Rename(p, filepath.Join(away, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	res, ran, err := runJob(t, opt)
	if err != nil {
		t.Fatalf("run again with the packages moved away: %v (tasks run %v)", err, ran)
	}
	if !slices.Contains(ran, taskKey(kindAccount, 0)) || res.Report.Totals.FilesRewritten == 0 {
		t.Errorf("tasks run %v, %d files rewritten: want the job completed, its duplicates rewritten", ran, res.Report.Totals.FilesRewritten)
	}
}
