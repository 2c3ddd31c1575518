package crawlindex

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/internal/fspath"
)

// Work on an index that lasts longer than a commit registers in the
// index's directory, so that one change does not pull the ground from
// under another:
//
//	DIR/runs/NAME.lock     held (flock) by the run of crawl NAME while it works
//	DIR/runs/NAME.json     what that run joined: the committed crawls whose
//	                       originals its revisits may refer to
//	DIR/runs/.remove.lock  held by an index remove --restore while it works
//	DIR/runs/.remove.json  the crawl it removes and those whose files it rewrites
//
// A run holds NAME.lock from its start to its end, so a second run of the
// same crawl is refused when it starts. Once its join read the index, it
// records in NAME.json what it joined, under the index's lock, after
// checking that each crawl is still committed as the join read it and that
// no removal is rewriting it. A removal (Commit with Remove) refuses,
// under the index's lock, while a run holds a crawl it removes or
// rewrites. A lock goes with the process that held it, so a killed run
// holds nothing by its lock; but NAME.json stays until the crawl is
// committed: a run killed after it rewrote files (its rewrite log changed
// since its join) still holds what it joined, until it is run again and
// committed, or the removal is forced; one killed before it rewrote
// anything holds nothing (a removal drops its record, and its next run
// joins again). The locks are flock(2)'s, as the index's own lock: on NFS
// they hold across hosts only where the mount has working locks (NFSv4,
// or lockd; not with nolock or local_lock=flock).
const (
	runsDir     = "runs"
	removeClaim = ".remove"
)

// claim is what a registration records, in runs/NAME.json.
type claim struct {
	Op      string    `json:"op"` // "run" or "remove"
	Crawl   string    `json:"crawl"`
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	WorkDir any       `json:"work_dir,omitempty"` // see jsonText
	// Joined is when a run's join was recorded, Generation the index's
	// generation it read, Crawls the committed crawls whose originals it
	// joined, as they were listed then.
	Joined     time.Time     `json:"joined,omitzero"`
	Generation int           `json:"generation,omitempty"`
	Crawls     []joinedCrawl `json:"crawls,omitempty"`
	// Logs are the run's rewrite log and its journal, with their sizes
	// when it joined: a run whose logs changed since may have written
	// revisits of what it joined.
	Logs []logMark `json:"logs,omitempty"`
	// Rewrites are the crawls whose files a removal rewrites.
	Rewrites []string `json:"rewrites,omitempty"`
}

type joinedCrawl struct {
	Crawl string `json:"crawl"`
	List  string `json:"list_sha256"` // of its crawls/NAME.json
}

type logMark struct {
	Name any   `json:"name"` // see jsonText
	Size int64 `json:"size"` // -1: no such file
}

// holds are those of the crawls the claim holds: a run's joined crawls,
// a removal's crawl and those it rewrites.
func (c *claim) holds(crawls []string) []string {
	var mine []string
	if c.Op == "remove" {
		mine = append([]string{c.Crawl}, c.Rewrites...)
	} else {
		for _, j := range c.Crawls {
			mine = append(mine, j.Crawl)
		}
	}
	var out []string
	for _, k := range crawls {
		if slices.Contains(mine, k) && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// rewrote reports whether the run's logs changed since its join.
func (c *claim) rewrote() bool {
	for _, m := range c.Logs {
		name, err := textOf(m.Name)
		if err != nil || sizeOf(name) != m.Size {
			return true
		}
	}
	return false
}

func (c *claim) who() string {
	s := fmt.Sprintf("pid %d on %s since %s", c.PID, c.Host, c.Started.Local().Format(time.DateTime))
	if dir, _ := textOf(c.WorkDir); dir != "" {
		s += fmt.Sprintf(", work directory %s", dir)
	}
	return s
}

func sizeOf(name string) int64 {
	fi, err := os.Stat(name)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func readClaim(name string) (claim, error) {
	var c claim
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%s: %w (a registration that cannot be read: remove it once no run or removal it names is interrupted)", name, err)
	}
	return c, nil
}

// Registration is a run's, or a removal's, place in runs/: its lock,
// held until Release, and its record.
type Registration struct {
	dir   string // the index's
	name  string // of its files in runs/
	lock  *os.File
	claim claim // as recorded: an earlier run's until this one records
}

// BusyError is a registration refused: another process holds it.
type BusyError struct {
	Crawl  string
	Remove bool // a removal's
	Who    string
}

func (e *BusyError) Error() string {
	if e.Remove {
		return fmt.Sprintf("another index remove is in progress (%s)", e.Who)
	}
	return fmt.Sprintf("another run of crawl %s is in progress (%s): one run of a crawl at a time", e.Crawl, e.Who)
}

// RegisterRun registers a run of crawl in the index in dir, and checks
// that the index's lock can be taken (as the commit must). It is refused
// while another process holds the crawl's registration.
func RegisterRun(dir, crawl string) (*Registration, error) {
	if err := CheckName(crawl); err != nil {
		return nil, err
	}
	r, err := register(dir, crawl)
	if err != nil {
		return nil, err
	}
	lk, err := lock(r.dir)
	if err != nil {
		r.Release()
		return nil, err
	}
	lk.Close()
	return r, nil
}

func register(dir, name string) (*Registration, error) {
	abs, err := fspath.Abs(dir)
	if err != nil {
		return nil, err
	}
	runs := filepath.Join(abs, runsDir)
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(runs, name+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			c, _ := readClaim(filepath.Join(runs, name+".json"))
			return nil, &BusyError{Crawl: name, Remove: name == removeClaim, Who: c.who()}
		}
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	r := &Registration{dir: abs, name: name, lock: f}
	if r.claim, err = readClaim(r.file()); err != nil {
		r.Release()
		return nil, err
	}
	return r, nil
}

func (r *Registration) file() string { return filepath.Join(r.dir, runsDir, r.name+".json") }

// write records the claim.
func (r *Registration) write(c claim) error {
	data, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(r.file(), 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(append(data, '\n')); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	r.claim = c
	return nil
}

func newClaim(op, crawl string) claim {
	host, _ := os.Hostname()
	return claim{Op: op, Crawl: crawl, PID: os.Getpid(), Host: host, Started: time.Now().UTC().Truncate(time.Second)}
}

// MovedError is a crawl a run joined that is no longer committed as the
// join read it.
type MovedError struct {
	Crawl   string
	Removed bool // else its files were rewritten (index remove --restore)
	// Rewrote: the run's logs changed since its join: it may have written
	// revisits of the crawl's records.
	Rewrote bool
}

func (e *MovedError) Error() string {
	what := "its files were rewritten by an index remove --restore"
	if e.Removed {
		what = "it was removed from the index (index remove --force)"
	}
	if e.Rewrote {
		return fmt.Sprintf("crawl %s, which this run joined, changed in the index since: %s, after this run rewrote files whose revisits may need it: undo the run, then run it again", e.Crawl, what)
	}
	return fmt.Sprintf("crawl %s, which this run joined, changed in the index since: %s", e.Crawl, what)
}

// ErrNotJoined is a run's registration that records no join.
var ErrNotJoined = errors.New("no join of the index recorded")

// Hold records that the run joined the crawls named as ix lists them,
// and the sizes of its logs now (its rewrite log and journal): from now
// on no removal removes, or rewrites the files of, any of them, until
// the run's crawl is committed (see the package's runs). It checks
// first, under the index's lock, that each is still committed as ix
// lists it (else a *MovedError: the join must be done again) and that no
// removal holds it.
func (r *Registration) Hold(ix *Index, crawls []string, workDir string, logs []string) error {
	c := newClaim("run", r.name)
	c.WorkDir, c.Generation = jsonText(workDir), ix.Generation()
	for _, k := range crawls {
		sum, err := ix.listSum(k)
		if err != nil {
			return err
		}
		c.Crawls = append(c.Crawls, joinedCrawl{Crawl: k, List: sum})
	}
	for _, l := range logs {
		c.Logs = append(c.Logs, logMark{Name: jsonText(l), Size: sizeOf(l)})
	}
	return r.hold(c)
}

// Resume holds again, for this run, what the run before it of the same
// crawl joined (an interrupted run of its work directory), as Hold does.
// ErrNotJoined: none was recorded, or a removal dropped it since (that
// run had rewritten nothing since its join); the join must be done again.
// A *MovedError: a crawl it joined changed since.
func (r *Registration) Resume() error {
	if r.claim.Op != "run" || r.claim.Joined.IsZero() {
		return ErrNotJoined
	}
	c := r.claim
	fresh := newClaim("run", r.name)
	c.PID, c.Host, c.Started = fresh.PID, fresh.Host, fresh.Started
	err := r.hold(c)
	var moved *MovedError
	if errors.As(err, &moved) {
		moved.Rewrote = r.claim.rewrote()
	}
	return err
}

func (r *Registration) hold(c claim) error {
	lk, err := lock(r.dir)
	if err != nil {
		return err
	}
	defer lk.Close()
	cur, err := Open(r.dir)
	if err != nil && !errors.Is(err, ErrNoIndex) {
		return err
	}
	var names []string
	for _, j := range c.Crawls {
		names = append(names, j.Crawl)
		if cur.Registry.Crawl(j.Crawl) == nil {
			return &MovedError{Crawl: j.Crawl, Removed: true}
		}
		if sum, err := cur.listSum(j.Crawl); err != nil {
			return err
		} else if sum != j.List {
			return &MovedError{Crawl: j.Crawl}
		}
	}
	if err := checkRemoval(r.dir, names); err != nil {
		return err
	}
	if c.Joined.IsZero() {
		c.Joined = time.Now().UTC().Truncate(time.Second)
	}
	return r.write(c)
}

// Drop removes the registration's record: its crawl is committed (the
// registry says what it requires), or its removal done.
func (r *Registration) Drop() error {
	if err := os.Remove(r.file()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	r.claim = claim{}
	return nil
}

// Release lets the registration go: its record stays, as a killed
// process leaves it.
func (r *Registration) Release() error {
	if r == nil || r.lock == nil {
		return nil
	}
	err := r.lock.Close()
	r.lock = nil
	return err
}

// HeldError refuses a change to crawls that a run or a removal holds.
type HeldError struct {
	Crawls []string // the crawls held
	Remove bool     // held by a removal (else a run)
	Crawl  string   // the run's crawl, or the crawl the removal removes
	Live   bool     // its process holds its lock
	Who    string
}

func (e *HeldError) Error() string {
	held := strings.Join(e.Crawls, ", ")
	switch {
	case e.Remove && e.Live:
		return fmt.Sprintf("an index remove of crawl %s is in progress (%s) and removes or rewrites %s: run again once it is done", e.Crawl, e.Who, held)
	case e.Remove:
		return fmt.Sprintf("an index remove --restore of crawl %s was interrupted (%s) and may have rewritten files of %s: run it again to finish it first", e.Crawl, e.Who, held)
	case e.Live:
		return fmt.Sprintf("a run of crawl %s in progress (%s) joined %s: its revisits may need it; once that run is committed, the index says what it needs", e.Crawl, e.Who, held)
	}
	return fmt.Sprintf("an interrupted run of crawl %s (%s) joined %s and rewrote files since: its revisits may need it. Run it again to finish and commit it; or undo it (an undo that leaves none of its revisits lets go of what it joined), then remove", e.Crawl, e.Who, held)
}

// probe takes a registration's lock if no process holds it: the lock (to
// be closed), or live.
func probe(name string) (lk *os.File, live bool, err error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	return f, false, nil
}

// checkRuns refuses a change that removes or rewrites crawls while a run
// holds one: a run in progress that joined it, or an interrupted one that
// joined it and rewrote files since (unless force). The record of an
// interrupted run that rewrote nothing since its join is dropped (its
// next run joins again), as is that of a run whose crawl is committed.
// The index's lock must be held.
func checkRuns(base *Index, crawls []string, force bool) error {
	dir := filepath.Join(base.Dir, runsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		c, err := readClaim(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		held := c.holds(crawls)
		if len(held) == 0 {
			continue
		}
		lk, live, err := probe(filepath.Join(dir, name+".lock"))
		if err != nil {
			return err
		}
		if live {
			return &HeldError{Crawls: held, Crawl: c.Crawl, Live: true, Who: c.who()}
		}
		switch {
		case base.Registry.Crawl(c.Crawl) != nil || !c.rewrote():
			err = os.Remove(filepath.Join(dir, e.Name()))
		case !force:
			err = &HeldError{Crawls: held, Crawl: c.Crawl, Who: c.who()}
		}
		lk.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRemoval refuses a run's hold of crawls that a removal removes or
// rewrites: one in progress, or one interrupted.
func checkRemoval(dir string, crawls []string) error {
	runs := filepath.Join(dir, runsDir)
	c, err := readClaim(filepath.Join(runs, removeClaim+".json"))
	if err != nil {
		return err
	}
	held := c.holds(crawls)
	if c.Op != "remove" || len(held) == 0 {
		return nil
	}
	lk, live, err := probe(filepath.Join(runs, removeClaim+".lock"))
	if err != nil {
		return err
	}
	if lk != nil {
		lk.Close()
	}
	return &HeldError{Crawls: held, Remove: true, Crawl: c.Crawl, Live: live, Who: c.who()}
}

// RegisterRemove registers a removal of crawl that first rewrites the
// files of the crawls rewrites (index remove --restore). It is refused
// while another removal is in progress, while a run holds any of them
// (see checkRuns), and after a removal of another crawl was interrupted
// (which must be finished first).
func RegisterRemove(dir, crawl string, rewrites []string) (*Registration, error) {
	r, err := register(dir, removeClaim)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Registration, error) {
		r.Release()
		return nil, err
	}
	if p := r.claim; p.Op == "remove" && p.Crawl != crawl {
		return fail(&HeldError{Crawls: append([]string{p.Crawl}, p.Rewrites...), Remove: true, Crawl: p.Crawl, Who: p.who()})
	}
	lk, err := lock(r.dir)
	if err != nil {
		return fail(err)
	}
	defer lk.Close()
	cur, err := Open(r.dir)
	if err != nil {
		return fail(err)
	}
	if err := checkRuns(cur, append([]string{crawl}, rewrites...), false); err != nil {
		return fail(err)
	}
	c := newClaim("remove", crawl)
	c.Rewrites = rewrites
	if p := r.claim; p.Op == "remove" {
		for _, k := range p.Rewrites {
			if !slices.Contains(c.Rewrites, k) {
				c.Rewrites = append(c.Rewrites, k)
			}
		}
	}
	if err := r.write(c); err != nil {
		return fail(err)
	}
	return r, nil
}
