package dedup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"warcdedup/workdir"
)

// State is what a job has done so far, kept in state.json.
type State struct {
	// Params are what the job's outputs depend on: a job with other
	// parameters starts again from the first stage.
	Params Params `json:"params"`
	// Done lists the stages finished, in order.
	Done []string `json:"done"`
	// By says, of each stage in Done, which run did it ("the dry run of
	// 2024-06-05 10:22 UTC"): a later run that finds it done says so.
	By map[string]string `json:"by,omitempty"`
	// Complete is set when a real (not dry) run finished every stage.
	Complete bool `json:"complete"`
	// LogSizeAtHash is the size of the rewrite log when the hash stage
	// started: the manifests give offsets in the files as they were then,
	// so the rewrite moves them only by the entries logged since (this
	// job's).
	LogSizeAtHash int64 `json:"log_size_at_hash"`
	// Stamps of the collection's files when the job completed: a later
	// run finding them all unchanged has nothing to do.
	Stamps map[string]string `json:"stamps,omitempty"`
	// RecordsBehind is set when the job completed but the work
	// directory's records of the collection (fixity.tsv, deps.tsv) could
	// not be brought up to date (a full disk): the next run on the
	// unchanged collection does that, rather than saying there is nothing
	// to do.
	RecordsBehind bool `json:"records_behind,omitempty"`
	// Removed are the intermediate work files removed once consumed
	// (see consumed): a stage that left them is done without them.
	Removed []string `json:"removed,omitempty"`
}

// Params are the parameters of a job that its outputs depend on.
type Params struct {
	Collections []string `json:"collections"`
	Algorithm   string   `json:"algorithm"`
	Policy      string   `json:"policy"`
	DryRun      bool     `json:"dry_run"`
	Index       string   `json:"index,omitempty"` // a crawl index's directory
	Crawl       string   `json:"crawl,omitempty"` // the crawl's name in it
	// Files identifies the subset of files a job was restricted to
	// (Options.Files; "" for all): a job on a sample is another job.
	Files string `json:"files,omitempty"`
	// ConvertARC: the job converts the ARC files to WARC first.
	ConvertARC bool `json:"convert_arc,omitempty"`
	// KeepARC is the directory the job's conversion keeps the ARC files
	// in (--keep-arc): a run that would convert the rest without keeping
	// them there is refused, and one that converts nothing carries it on
	// (checkKeepARC).
	KeepARC string `json:"keep_arc,omitempty"`
	// Source is the WACZ file or multi-WACZ JSON the job was named, and
	// Packages the packages it names (relative to the collection,
	// sorted): the job is on them alone (waczinput.go).
	Source   string   `json:"source,omitempty"`
	Packages []string `json:"packages,omitempty"`
}

func (p Params) equal(q Params) bool {
	if len(p.Collections) != len(q.Collections) {
		return false
	}
	for i := range p.Collections {
		if p.Collections[i] != q.Collections[i] {
			return false
		}
	}
	return p.Algorithm == q.Algorithm && p.Policy == q.Policy && p.DryRun == q.DryRun && p.Index == q.Index && p.Crawl == q.Crawl &&
		p.Files == q.Files && p.ConvertARC == q.ConvertARC && p.KeepARC == q.KeepARC && p.Source == q.Source && slices.Equal(p.Packages, q.Packages)
}

// filesKey identifies a set of file names: the SHA-256 of the names in
// order, "" for no restriction.
func filesKey(files map[string]bool) string {
	if files == nil {
		return ""
	}
	names := make([]string, 0, len(files))
	for name, in := range files {
		if in {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		h.Write([]byte(name))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readState reads state.json; a missing file is a new job.
func readState(w *workdir.Dir) (*State, error) {
	s, err := readStateFile(w.File(workdir.StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return &State{}, nil
	}
	return s, err
}

// readStateFile reads a state.json.
func readStateFile(name string) (*State, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// writeState replaces state.json atomically.
func writeState(w *workdir.Dir, s *State) error {
	return workdir.WriteJSON(w.File(workdir.StateFile), s)
}

// markDone records a stage as finished by the run of mode started at
// start.
func (s *State) markDone(stage, mode string, start time.Time) {
	s.Done = append(s.Done, stage)
	if s.By == nil {
		s.By = map[string]string{}
	}
	s.By[stage] = fmt.Sprintf("the %s of %s", mode, start.UTC().Format("2006-01-02 15:04 UTC"))
}

// doneBy says what did a stage done before: "done by the dry run of
// 2024-06-05 10:22 UTC (warcdedup assess or run --dry-run)".
func (s *State) doneBy(stage string) string {
	by, ok := s.By[stage]
	switch {
	case !ok:
		return "done by an earlier run of the job"
	case strings.HasPrefix(by, "the dry run "):
		return "done by " + by + " (warcdedup assess or run --dry-run)"
	}
	return "done by " + by
}

// done reports whether a stage is finished.
func (s *State) done(stage string) bool {
	for _, d := range s.Done {
		if d == stage {
			return true
		}
	}
	return false
}
