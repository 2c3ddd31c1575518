package dedup

import (
	"context"

	"warcdedup/collres"
	"warcdedup/policy"
	"warcdedup/refs"
	"warcdedup/report"
	"warcdedup/verify"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// Accounting is what the account of a job needs when its stages ran
// elsewhere (warcdedup cluster runs them as Slurm jobs on many hosts): the
// stages' figures and messages, and a work directory into which their
// outputs were merged under the names run gives them (workdir.ByFileFile,
// workdir.FactsByFile, workdir.SavedFile, workdir.NumberedFile), so that the report, stats.json,
// deps.tsv and the summary are run's own.
type Accounting struct {
	WorkDir    string         // the merged outputs; gets deps.tsv, stats.json, report.html
	Report     *report.Report // title, mode, collections, policy, algorithm and stages, set by the caller
	DryRun     bool
	Policy     policy.Policy
	SortMemory string

	Hashed   warcsum.Stats
	Resolved collres.Stats
	Rewrote  refs.Stats
	Verified verify.Stats
	// FilesReplaced is how many files the job replaced, across its runs
	// (the lines of its fixity list, WriteFixity).
	FilesReplaced int64
	// Refused (every one), Damaged and Stale (the first ones) are the
	// messages of the stages, as run collects them.
	Refused, Damaged, Stale []string
}

// job is the Job that run's accounting code reads.
func (a *Accounting) job() *Job {
	return &Job{
		opt:      Options{DryRun: a.DryRun, Policy: a.Policy, SortMemory: a.SortMemory},
		wd:       &workdir.Dir{Path: a.WorkDir},
		state:    &State{},
		rep:      a.Report,
		hashed:   a.Hashed,
		resolved: a.Resolved,
		rewrote:  a.Rewrote,
		verified: a.Verified,
		refused:  a.Refused,
		damaged:  a.Damaged,
		stale:    a.Stale,
	}
}

// Account fills a.Report as run's account stage does: the totals, the
// breakdowns, the largest classes and what was not deduplicated, from the
// merged outputs; it writes deps.tsv. The fixity list is the caller's
// (WriteFixity per rewrite log).
func Account(ctx context.Context, a *Accounting) error {
	acc := newAccount(a.job())
	if err := acc.records(); err != nil {
		return err
	}
	if err := acc.classes(ctx); err != nil {
		return err
	}
	acc.replaced = a.FilesReplaced
	acc.fill()
	return nil
}

// Finish sets a.Report's exit status and its reasons as run does (stopped
// is what stopped the job, or nil) and writes stats.json and report.html.
func Finish(a *Accounting, stopped error) {
	a.job().finish(stopped)
}

// WriteFixity writes to out the fixity list of the files that the entries
// of the rewrite log logName from byte offset from on replaced (a job's
// own runs): each file's size and SHA-256 before the first and after the
// last. It returns how many files it lists.
func WriteFixity(logName string, from int64, out string) (int64, error) {
	return writeFixity(logName, from, out)
}
