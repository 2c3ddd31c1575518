package dedup

import (
	"context"
	"os"

	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// account adds up what the run did (or would do) into its report, with
// the dependencies of the revisits its job wrote, and writes the fixity
// list of the files its job replaced and the work directory's records of
// the collection, every run's. What it reads of the work files it reads
// while verify runs, where this run verified (readAhead): it then only
// waits for that reading and adds the verification's figures.
func (r *run) account(ctx context.Context) (string, error) {
	ahead := r.ahead
	r.ahead = nil
	if ahead == nil {
		ahead = r.readAccount(ctx, r.sorter())
	}
	<-ahead.done
	if ahead.err != nil {
		return "", ahead.err
	}
	ahead.tally.Fill(r.verified)
	if err := ahead.records; err != nil {
		// Records that cannot be made (a damaged rewrite log) are named
		// among the exit reasons; what the run did stands.
		r.recordsProblem = err.Error()
		r.show.Print("warcdedup: error: the work directory's fixity.tsv and deps.tsv: %v", err)
	}
	return ahead.acc.Note(), nil
}

// accountReading is the account's reading of the work files, under way
// or done: the tally, and the work directory's records written.
type accountReading struct {
	done    chan struct{} // closed once it is done
	cancel  context.CancelFunc
	acc     *stage.Account
	tally   *stage.Tally
	records error // of the work directory's records: not the run's failure
	err     error
}

// readAhead starts the account's reading while verify runs: its inputs
// (the numbered manifests, the facts, the revisits written, the rewrite
// log, the manifest after) are complete once hash again is done, and it
// reads nothing verify writes. Not where the indexes are updated between
// verify and the account. stopAhead ends it if verify fails. It reports
// whether it started: the account's sorts then run beside verify's, with
// half the job's sort memory and threads each.
func (r *run) readAhead(ctx context.Context) bool {
	if len(r.opt.CDX) > 0 || r.ahead != nil {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	r.ahead = r.readAccount(ctx, r.sorter().Share(2))
	r.ahead.cancel = cancel
	return true
}

// stopAhead stops the account's reading started while verify ran, and
// waits for it: verify failed, and the run stops there.
func (r *run) stopAhead() {
	if r.ahead == nil {
		return
	}
	r.ahead.cancel()
	<-r.ahead.done
	r.ahead = nil
}

// readAccount starts the account's reading of the work files, its sorts
// run by sorter.
func (r *run) readAccount(ctx context.Context, sorter syssort.Sorter) *accountReading {
	a := &stage.Account{ByFile: r.wd.File(workdir.ByFileFile), FactsByFile: r.wd.File(workdir.FactsByFile),
		Saved: r.wd.File(workdir.SavedFile), Numbered: r.wd.File(workdir.NumberedFile), Deps: r.runFile(workdir.DepsFile),
		Sorter: sorter, DryRun: r.opt.DryRun, Policy: r.opt.Policy,
		Hashed: r.hashed, Resolved: r.resolvedAll(), Rewrote: r.rewrote,
		FilesInProgress: int64(len(r.inProgress)), Report: r.rep}
	ar := &accountReading{done: make(chan struct{}), cancel: func() {}, acc: a}
	go func() {
		defer close(ar.done)
		ar.tally, ar.err = r.tally(ctx, ar)
	}()
	return ar
}

// tally reads what the account adds up and writes its files: the run's
// dependencies and fixity list, and the collection's records (their
// error apart, in ar.records: the run's own stand without them).
func (r *run) tally(ctx context.Context, ar *accountReading) (*stage.Tally, error) {
	a := ar.acc
	if e := r.estimated; e != nil {
		// The collection as converted: its listing, revisits and size.
		a.ByFile, a.Saved, a.Numbered = r.wd.File(workdir.ConvertedByFile), r.wd.File(workdir.ConvertedSaved), r.wd.File(workdir.ConvertedNumbered)
		a.Hashed.Stats.Bytes += e.Conversion.WARCBytes - e.Conversion.ARCBytes
		a.Rewrote.Stats.Rewritten = e.Files
	}
	if r.compareOnce() {
		// The revisits of the second rewrite, at the hash stage's offsets
		// (stage.CollideBack), with the first's.
		// (None written, as where no collision was rewritten: saved.tsv
		// is both.)
		second := r.wd.File(workdir.SavedCollisionsFile)
		if fi, err := os.Stat(second); err != nil || fi.Size() > 0 {
			both := r.wd.File(workdir.TmpDir + "/saved-both.tsv")
			if err := a.Sorter.Merge(ctx, manifest.ByFile.Command, []string{a.Saved, second}, both); err != nil {
				return nil, err
			}
			defer os.Remove(both)
			a.Saved = both
		}
		c := &r.rewroteCollisions.Stats
		st := a.Rewrote.Stats
		st.Revisits += c.Revisits
		st.AlreadyRevisit += c.AlreadyRevisit
		st.NotSmaller += c.NotSmaller
		st.Protected += c.Protected
		st.Refused += c.Refused
		a.Rewrote.Stats = st
		a.Rewrote.Refused = append(append([]string(nil), a.Rewrote.Refused...), r.rewroteCollisions.Refused...)
	}
	if !r.opt.DryRun {
		// Across the runs of the job (an interrupted one replaced some).
		n, err := stage.WriteFixity(r.wd.File(workdir.LogFile), r.state.LogSizeAtHash, r.runFile(workdir.FixityFile))
		if err != nil {
			return nil, err
		}
		a.FilesReplaced = n
	}
	t, err := a.Tally(ctx)
	if err != nil {
		return nil, err
	}
	if !r.opt.DryRun {
		// The collection's records, every run's: the fixity list and the
		// dependencies of the revisits there are now.
		if err := r.collectionRecords(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			ar.records = err
		}
	}
	return t, nil
}
