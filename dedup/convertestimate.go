package dedup

import (
	"context"

	"warcdedup/manifest"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// estimateConversion is a dry run's estimate of the convert stage (after
// its rewrite, before the account): the listing and the revisits as the
// collection converted to WARC would have them, for the account to add
// up; nothing is converted.
func (r *run) estimateConversion(ctx context.Context) (string, error) {
	show := r.show.Start(stage.EstimateConversionName, "", 0)
	e := stage.EstimateConversion{ByFile: r.wd.File(workdir.ByFileFile), Saved: r.wd.File(workdir.SavedFile),
		ARCs: stage.ARCInputs(r.inputs), Root: r.opt.Collections[0], Every: r.opt.ConvertEvery, Jobs: r.opt.Jobs, Software: r.opt.Software,
		ByFileOut: r.wd.File(workdir.ConvertedByFile), SavedOut: r.wd.File(workdir.ConvertedSaved), Messages: messages{r.show}, Meter: show}
	res, err := e.Run(ctx)
	show.Done("")
	if err != nil {
		return "", err
	}
	// The account's classes are read on digest.
	if err := r.sortFile(ctx, workdir.ConvertedByFile, workdir.ConvertedNumbered, manifest.ByDigest.Command); err != nil {
		return "", err
	}
	res.Conversion.Method = res.Method(r.opt.ConvertEvery)
	r.estimated = &res
	r.rep.Conversion = &res.Conversion
	r.rep.Caveats = append(r.rep.Caveats, "The figures are those of the collection as it would be once its ARC files are converted to WARC (warcdedup run --convert-arc); nothing was converted. "+res.Conversion.Method)
	return res.Note(), nil
}
