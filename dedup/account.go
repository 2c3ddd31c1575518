package dedup

import (
	"context"
	"os"

	"warcdedup/manifest"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// account adds up what the run did (or would do) into its report, with
// the dependencies of the revisits its job wrote, and writes the fixity
// list of the files its job replaced and the work directory's records of
// the collection, every run's.
func (r *run) account(ctx context.Context) (string, error) {
	a := stage.Account{ByFile: r.wd.File(workdir.ByFileFile), FactsByFile: r.wd.File(workdir.FactsByFile),
		Saved: r.wd.File(workdir.SavedFile), Numbered: r.wd.File(workdir.NumberedFile), Deps: r.runFile(workdir.DepsFile),
		Sorter: r.sorter(), DryRun: r.opt.DryRun, Policy: r.opt.Policy,
		Hashed: r.hashed, Resolved: r.resolved, Rewrote: r.rewrote, Verified: r.verified,
		FilesInProgress: int64(len(r.inProgress)), Report: r.rep}
	if e := r.estimated; e != nil {
		// The collection as converted: its listing, revisits and size.
		a.ByFile, a.Saved, a.Numbered = r.wd.File(workdir.ConvertedByFile), r.wd.File(workdir.ConvertedSaved), r.wd.File(workdir.ConvertedNumbered)
		a.Hashed.Stats.Bytes += e.Conversion.WARCBytes - e.Conversion.ARCBytes
		a.Rewrote.Stats.Rewritten = e.Files
	}
	if r.compareOnce() {
		// The revisits of the second rewrite, at the hash stage's offsets
		// (stage.CollideBack), with the first's.
		both := r.wd.File(workdir.TmpDir + "/saved-both.tsv")
		if err := r.sorter().Merge(ctx, manifest.ByFile.Command, []string{a.Saved, r.wd.File(workdir.SavedCollisionsFile)}, both); err != nil {
			return "", err
		}
		defer os.Remove(both)
		a.Saved = both
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
			return "", err
		}
		a.FilesReplaced = n
	}
	if err := a.Run(ctx); err != nil {
		return "", err
	}
	if !r.opt.DryRun {
		// The collection's records, every run's: the fixity list and the
		// dependencies of the revisits there are now. Records that cannot
		// be made (a damaged rewrite log) are named among the exit
		// reasons; what the run did stands.
		if err := r.collectionRecords(ctx); err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			r.recordsProblem = err.Error()
			r.show.Print("warcdedup: error: the work directory's fixity.tsv and deps.tsv: %v", err)
		}
	}
	return a.Note(), nil
}
