package dedup

import (
	"context"
	"os"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/source"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// compareOnce reports whether the run compares each duplicate once (issue
// 21): resolve numbers the copies from the manifest without reading them,
// the rewrite compares each duplicate with its original byte for byte and
// keeps apart those that differ, and the collisions stages resolve just
// their digests byte for byte and rewrite what the new numbering allows.
//
// The default; Options.CompareInResolve (--compare-in-resolve, hidden)
// keeps the comparing resolve, for tests and benchmarks: both write the
// same files and number every record alike (TestCompareOnceAsComparing;
// a file holding duplicates the first rewrite kept apart is replaced a
// second time, so the rewrite logs are alike composed over each file's
// replacements). Two runs always keep the resolve that reads and
// compares every copy: one with a crawl index, whose committed originals may come from a CDX
// import spelling URIs and dates its own way (the comparing resolve takes
// them as their records spell them, which verify then checks against);
// and a dry run, which has no second rewrite to resolve collisions in, so
// that what it counts (and assess estimates from it) is what a run
// would write. A run on WACZ packages compares once too: both rewrites
// go through the packages' rewrite (run.rewritePackages, dedup/wacz.go), so a
// package holding revisits of the second is written anew a second time,
// as a WARC file is.
func (r *run) compareOnce() bool {
	return !r.opt.CompareInResolve && !r.opt.DryRun && r.crawl == nil
}

// The files the collisions stages keep their figures in.
const (
	collideStats          = "collide.json"
	rewriteCollideStats   = "rewrite-collisions.json"
	rewriteCollideRefused = "rewrite-collisions-refused.json"
)

// collideRefused is what the rewrite of the collisions refused, kept for
// a resumed run: its exit reasons name the files (Refused, with why), and
// the job does not record them as done (RefusedFiles), so that the next
// run takes them again, as the run that refused them does.
type collideRefused struct {
	Refused      []string `json:"refused,omitempty"`
	RefusedFiles []string `json:"refused_files,omitempty"`
}

// collideState is what the collisions stage leaves for the second
// rewrite: its figures, and the size of the rewrite log when it read it,
// where the second rewrite's own entries start.
type collideState struct {
	Result  stage.CollideResult `json:"result"`
	LogSize int64               `json:"log_size"`
}

// collide resolves byte for byte the digests whose duplicates the rewrite
// kept apart from their original.
func (r *run) collide(ctx context.Context) (string, error) {
	// A run killed between renaming a file and logging it left entries in
	// the journal: the log is completed before its size is taken.
	size, err := rewritelog.Recover(r.wd.File(workdir.LogFile))
	if err != nil {
		return "", err
	}
	files := r.coll.locator().Files(source.KeptOpen)
	defer files.Close()
	show := r.show.Start(stage.CollideName, "", 0)
	c := stage.Collide{Apart: r.wd.File(workdir.ApartFile), Numbered: r.wd.File(workdir.NumberedFile),
		Log: r.wd.File(workdir.LogFile), LogFrom: r.state.LogSizeAtHash, Source: r.coll.wacz.opener(files),
		Policy: r.opt.Policy, Jobs: r.opt.Jobs, Sorter: r.sorter(),
		Also: stage.InARCFile, Out: r.wd.File(workdir.CollideFile), Origins: r.wd.File(workdir.CollideOrigins), Messages: messages{r.show}, Meter: show}
	res, err := c.Run(ctx)
	show.End(err, "")
	if err != nil {
		return "", err
	}
	r.collided = collideState{Result: res, LogSize: size}
	if r.collidedNothing() {
		// Nothing resolved again, the usual case: the numbering is
		// empty, and so is its copy on file, written without a sort.
		if err := writeEmpty(r.wd.File(workdir.CollideByFile)); err != nil {
			return "", err
		}
	} else if err := r.sortFile(ctx, workdir.CollideFile, workdir.CollideByFile, manifest.ByFile.Command); err != nil {
		return "", err
	}
	if err := workdir.WriteJSON(r.wd.File(collideStats), r.collided); err != nil {
		return "", err
	}
	return res.Note(), nil
}

// rewriteCollisions rewrites what the collisions stage's numbering
// allows, then carries its numbering into the job's numbered manifests
// and its revisits into saved.tsv's companion, at the hash stage's
// offsets, for the account.
func (r *run) rewriteCollisions(ctx context.Context) (string, error) {
	if r.collidedNothing() {
		// Nothing to rewrite, no revisit to carry back, no numbering
		// changed: the rewrite of an empty numbering and CollideBack
		// would write an empty saved-collisions.tsv and figures of
		// nothing, which this writes without reading anything.
		if err := writeEmpty(r.wd.File(workdir.SavedCollisionsFile)); err != nil {
			return "", err
		}
		res := stage.RewriteResult{}
		if err := r.keepRewroteCollisions(res); err != nil {
			return "", err
		}
		return res.Note(false), nil
	}
	table, err := manifest.OpenTable(r.wd.File(workdir.CollideFile))
	if err != nil {
		return "", err
	}
	defer table.Close()
	in, err := os.Open(r.wd.File(workdir.CollideByFile))
	if err != nil {
		return "", err
	}
	defer in.Close()
	loc := r.coll.locator()
	show := r.show.Start(stage.RewriteCollisionName, "", 0)
	raw := r.wd.File(workdir.TmpDir + "/saved-collisions-now.tsv")
	s := stage.Rewrite{In: manifest.NewReader(in, r.wd.File(workdir.CollideByFile)), Originals: []*manifest.Table{table}, Open: loc,
		Roots: loc.Roots, Prefixes: loc.Prefixes, Log: r.wd.File(workdir.LogFile), LogFrom: r.collided.LogSize,
		HardLinks: r.opt.HardLinks, SHA256: r.crawl != nil, Policy: r.opt.Policy, Jobs: r.opt.Jobs,
		Cache: r.wd.File(workdir.CacheDir), Algorithm: r.opt.Algorithm, Saved: raw, Apart: r.wd.File(workdir.ApartAgainFile),
		Messages: messages{r.show}, Meter: show}
	res, err := r.rewritePackages(ctx, &s, workdir.CollideFile, workdir.CollideByFile) // WACZ packages written anew (dedup/wacz.go)
	show.End(err, "")
	if err != nil {
		return "", err
	}
	defer os.Remove(raw)
	back := stage.CollideBack{Origins: r.wd.File(workdir.CollideOrigins), Collide: r.wd.File(workdir.CollideFile),
		SavedNow: raw, Saved: r.wd.File(workdir.SavedCollisionsFile), Numbered: r.wd.File(workdir.NumberedFile),
		ByFile: r.wd.File(workdir.ByFileFile), Sorter: r.sorter()}
	if err := back.Run(ctx); err != nil {
		return "", err
	}
	if err := r.keepRewroteCollisions(res); err != nil {
		return "", err
	}
	return res.Note(false), nil
}

// collidedNothing reports whether the collisions stage resolved nothing
// again: no line kept apart by the rewrite, in an ARC file, or an
// original beyond its class's first. Its numbering is then empty, and
// the rewrite of the collisions has nothing to do.
func (r *run) collidedNothing() bool {
	return r.collided.Result.Digests == 0 && r.collided.Result.Apart == 0 && r.collided.Result.Stats.Lines == 0
}

// writeEmpty writes name empty, whole (synced, then renamed).
func writeEmpty(name string) error {
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	return f.CommitRenamed()
}

// keepRewroteCollisions keeps what the rewrite of the collisions did, for
// the account and for a resumed run (run.reload).
func (r *run) keepRewroteCollisions(res stage.RewriteResult) error {
	r.rewroteCollisions = res
	if err := workdir.WriteJSON(r.wd.File(rewriteCollideRefused), collideRefused{res.Refused, res.RefusedFiles}); err != nil {
		return err
	}
	return workdir.WriteJSON(r.wd.File(rewriteCollideStats), res.Stats)
}
