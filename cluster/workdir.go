package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"warcdedup/internal/progress"
	"warcdedup/source"
	"warcdedup/stage"
	"warcdedup/verify"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// The files of a cluster job's work directory, besides the merged outputs
// that carry run's names (package dedup: by-file.manifest, stats.json,
// report.html, fixity.tsv, deps.tsv, ...):
//
//	cluster.json          the job: its ID, hosts and parameters (Spec)
//	cluster-state.json    the Slurm jobs submitted for it, retries (State)
//	run.log               every run's messages, appended
//	hosts/NAME/           a host's manifests before (and sorted on digest,
//	                      cut into range-NNN parts) and after, facts,
//	                      files.tsv, warcsum's cache, its rewrite.log,
//	                      saved.tsv and fixity.tsv
//	ranges/NNN/           a hash range: numbered.manifest (on digest) and
//	                      by-file-NAME, its lines of each host's files;
//	                      with an index, the index's originals joined and
//	                      those kept (crawl.go)
//	tasks/STEP/N.json     a task's result, written when it succeeded
//	tasks/STEP/N.progress what a running task has done, for the progress
//	tasks/STEP/N.error    why a task failed
//	slurm/                the batch scripts and Slurm's output of each job
//
// The copies a later task no longer reads go once the task that consumed
// or merged them has succeeded (removeConsumed: the sorted manifest and
// range parts of a host, a range's parts; --keep-work keeps them).
// Every node reads and writes it at the same path: it must be on a file
// system they all mount (NFS, Lustre, GPFS, CephFS: usual on a Slurm
// cluster), with working flock(2) (Lustre: mounted with -o flock).
const (
	specFile  = "cluster.json"
	stateFile = "cluster-state.json"
	hostsDir  = "hosts"
	rangesDir = "ranges"
	tasksDir  = "tasks"
	slurmDir  = "slurm"
)

// workDir names the files of a work directory.
type workDir string

func (w workDir) file(parts ...string) string {
	return filepath.Join(append([]string{string(w)}, parts...)...)
}

// host is a file of a host's directory.
func (w workDir) host(h *Host, name string) string { return w.file(hostsDir, h.Name, name) }

// rangeDir is a hash range's directory.
func (w workDir) rangeDir(r, n int) string { return w.file(rangesDir, rangeName(r, n)) }

func (w workDir) taskFile(step string, task int, ext string) string {
	return w.file(tasksDir, step, fmt.Sprintf("%d%s", task, ext))
}

// rangeName is the name of range r of n, as warcsumsplit --hash-ranges
// names its parts: at least three digits.
func rangeName(r, n int) string {
	width := max(3, len(fmt.Sprint(n-1)))
	return fmt.Sprintf("%0*d", width, r)
}

// Spec is a job: what its outputs depend on (Params) and how its tasks run
// (Settings). It is written when the job starts and read by every task.
type Spec struct {
	ID      string    `json:"id"` // names the job's results: another job's are never taken for its own
	Created time.Time `json:"created"`
	Params
	Settings
}

// Params are what a job's outputs depend on: a run with other parameters
// on the same work directory is another job.
type Params struct {
	Hosts     []Host `json:"hosts"`
	Ranges    int    `json:"ranges"`
	Algorithm string `json:"algorithm"`
	Policy    string `json:"policy"`
	DryRun    bool   `json:"dry_run"`
	HardLinks bool   `json:"hard_links"`
	// Index is a crawl index (package crawlindex), "" for none: the
	// hosts' files are the crawl Crawl, deduplicated against the index's
	// committed originals and committed to it once verified, as served
	// at CrawlURL (see crawl.go).
	Index    string `json:"index,omitempty"`
	Crawl    string `json:"crawl,omitempty"`
	CrawlURL string `json:"crawl_url,omitempty"`
	// CompareInResolve keeps the resolve that reads and compares every
	// copy over HTTP (the hidden --compare-in-resolve, for tests and
	// benchmarks); by default each duplicate is compared once (see
	// Spec.compareOnce).
	CompareInResolve bool `json:"compare_in_resolve,omitempty"`
}

// Equal reports whether two jobs would have the same outputs.
func (p *Params) Equal(q *Params) bool {
	return slices.Equal(p.Hosts, q.Hosts) && p.Ranges == q.Ranges && p.Algorithm == q.Algorithm &&
		p.Policy == q.Policy && p.DryRun == q.DryRun && p.HardLinks == q.HardLinks &&
		p.Index == q.Index && p.Crawl == q.Crawl && p.CrawlURL == q.CrawlURL && p.CompareInResolve == q.CompareInResolve
}

// compareOnce reports whether the job compares each duplicate once (issue
// 21), as warcdedup run does: each range's resolve numbers the copies
// from the manifests alone and reads no record over HTTP; each host's
// rewrite compares every duplicate with its original byte for byte (over
// HTTP when the original is on another host) and keeps one that differs
// apart, as it is, in its apart.manifest; the collisions task resolves
// just those digests byte for byte over HTTP (stage.Collide), and each
// host's second rewrite (recollide@HOST) rewrites what the new numbering
// allows. The default; a crawl-index job and a dry run keep the
// comparing resolve, as run's do.
func (s *Spec) compareOnce() bool {
	return !s.CompareInResolve && !s.DryRun && !s.withIndex()
}

// Settings are how a job's tasks run; a later run of the same job may
// change them.
type Settings struct {
	Binary     string `json:"binary"`      // warcdedup, at this path on every node
	Jobs       int    `json:"jobs"`        // files or clusters at once in a task
	SortMemory string `json:"sort_memory"` // sort -S
	// Reading records over HTTP (resolve; originals on other hosts in
	// rewrite): requests open per host, retries, idle timeout, least rate.
	PerHost     int           `json:"per_host"`
	HTTPRetries int           `json:"http_retries"`
	HTTPTimeout time.Duration `json:"http_timeout_ns"`
	MinRate     int64         `json:"min_rate"`
	// VersionWait bounds how long a rewrite waits for another host's
	// rewrite log to name the version of a file it finds (see remoteFiles).
	VersionWait time.Duration `json:"version_wait_ns"`
	// KeepWork keeps the work copies a task consumed (removeConsumed),
	// for inspection.
	KeepWork bool `json:"keep_work,omitempty"`
}

func newJobID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Marker is a task's result, written when it has succeeded: the
// monitor's sign that it is done, and what the account adds up.
type Marker struct {
	Job      string    `json:"job"` // Spec.ID
	Step     string    `json:"step"`
	Task     int       `json:"task"`
	Node     string    `json:"node"`
	Slurm    string    `json:"slurm_job"`
	Restarts int       `json:"restarts"` // SLURM_RESTART_COUNT
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`

	Hash    *HashResult    `json:"hash,omitempty"`
	Resolve *ResolveResult `json:"resolve,omitempty"`
	Rewrite *RewriteResult `json:"rewrite,omitempty"`
	After   *warcsum.Stats `json:"after,omitempty"`
	Verify  *verify.Stats  `json:"verify,omitempty"`
	Collide *CollideResult `json:"collide,omitempty"`
	Note    string         `json:"note,omitempty"`
	// NotNeeded marks the result the monitor writes, without Slurm, for
	// a collisions task that has no work (monitor.decideCollisions).
	NotNeeded bool `json:"not_needed,omitempty"`
	// HTTP counts what the task read from the storage hosts over HTTP.
	HTTP *source.HTTPStats `json:"http,omitempty"`
}

// HashResult is what a host's hash task found: the Hash stage's result,
// and what the other tasks need of the host's hashing.
type HashResult struct {
	stage.HashResult
	// LogSize is the size of the host's rewrite log when it was hashed:
	// the manifests give offsets in the files as they were then, moved
	// only by the entries logged since.
	LogSize    int64   `json:"log_size"`
	RangeLines []int64 `json:"range_lines"` // lines of each hash range
}

// ResolveResult is what a hash range's task found.
type ResolveResult struct {
	stage.ResolveResult
	// NoDigest counts the revisit lines without a digest in the job's
	// algorithm: every range has them all, and counts them.
	NoDigest int64 `json:"no_digest"`
}

// RewriteResult is what a host's rewrite did.
type RewriteResult struct {
	stage.RewriteResult
	Remote RemoteStats `json:"remote"` // originals read from other hosts
	// Apart counts the duplicates the rewrite kept apart, as they are,
	// because their bytes differ from their original's, or the policy
	// keeps them apart (Spec.compareOnce): listed in the host's
	// apart.manifest, for the collisions task to resolve again.
	Apart int64 `json:"apart,omitempty"`
}

// readMarker returns the marker of a task of the job, or nil when the task
// has not succeeded (or only for another job).
func (w workDir) readMarker(job, step string, task int) *Marker {
	m, err := workdir.ReadJSON[Marker](w.taskFile(step, task, ".json"))
	if err != nil || m.Job != job {
		return nil
	}
	return &m
}

// lock takes an exclusive flock on name (created if need be); wait says
// whether to wait for another holder or fail at once.
func lock(name string, wait bool) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// apartNote says, after the rewrite's note, what it left apart.
func (r *RewriteResult) apartNote() string {
	if r.Apart == 0 {
		return ""
	}
	return fmt.Sprintf("; %s duplicates kept apart, their bytes or what the policy compares differing from their original's, for the collisions stage", progress.Count(r.Apart))
}
