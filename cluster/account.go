package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/stage"
	"warcdedup/verify"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// Collections names a job's hosts as its report names collections:
// NAME:ROOT.
func (s *Spec) Collections() []string {
	var out []string
	for _, h := range s.Hosts {
		out = append(out, h.Name+":"+h.Root)
	}
	return out
}

// account merges what the tasks wrote into the work directory under run's
// names, and adds it up as run's account stage does (stage.Account):
// by-file.manifest, facts-by-file.manifest, saved.tsv, numbered.manifest,
// fixity.tsv, deps.tsv, stats.json and report.html; with an index, it
// commits the verified crawl (stage.Commit).
func (k *task) account(ctx context.Context) error {
	res, err := k.results()
	if err != nil {
		return err
	}
	replaced, err := k.mergeOutputs(ctx)
	if err != nil {
		return err
	}
	mode := "run"
	if k.spec.DryRun {
		mode = "dry run"
	}
	rep := &report.Report{Title: "Deduplication of " + strings.Join(k.spec.Collections(), ", "), Generated: time.Now().UTC(),
		Mode: mode, Collections: k.spec.Collections(), Policy: k.spec.Policy, Algorithm: k.spec.Algorithm,
		Caveats: []string{fmt.Sprintf("Run on a Slurm cluster as %d jobs over %d storage hosts and %d hash ranges.",
			len(k.plan.Steps), len(k.spec.Hosts), k.spec.Ranges)}}
	rep.Stages = k.stages(res)
	a := stage.Account{ByFile: k.wd.file(workdir.ByFileFile), FactsByFile: k.wd.file(workdir.FactsByFile), Saved: k.wd.file(workdir.SavedFile),
		Numbered: k.wd.file(workdir.NumberedFile), Deps: k.wd.file(workdir.DepsFile), Sorter: k.sorter,
		DryRun: k.spec.DryRun, Policy: k.policy, Hashed: res.hashed, Resolved: res.resolved, Rewrote: res.rewrote, Verified: res.verified,
		FilesReplaced: replaced, Report: rep}
	err = a.Run(ctx)
	if err == nil && k.spec.withIndex() && !k.spec.DryRun {
		// As run's commit stage: the report says what was committed.
		var st report.Stage
		start := time.Now()
		st, err = k.commitCrawl(ctx, rep, res.verified)
		st.Took = time.Since(start)
		rep.Stages = append(rep.Stages, st)
	}
	stage.Finish(rep, err, res.reasons())
	// The report, also of an account that stopped, is written when it can
	// be.
	stage.WriteReport(string(k.wd), rep)
	if err != nil {
		return err
	}
	k.marker.Note = a.Note()
	return nil
}

// results are what the job's stages found over the whole collection:
// the hosts' and ranges' results added up.
type results struct {
	hashed   stage.HashResult
	resolved stage.ResolveResult
	rewrote  stage.RewriteResult
	verified verify.Stats
	remote   RemoteStats // of the rewrites
	apart    int64       // duplicates the rewrites kept apart (Spec.compareOnce)
	collided *CollideResult
	again    warcsum.Stats
}

// reasons are why the job's exit status is not 0, as run gives them.
func (r *results) reasons() []string {
	return slices.Concat(r.hashed.Reasons(), r.resolved.Reasons(), r.rewrote.Reasons(), stage.VerifyReasons(r.verified))
}

// results adds up the tasks' results.
func (k *task) results() (*results, error) {
	var r results
	hashes := k.stepMarkers(kindHash)
	if len(hashes) != len(k.spec.Hosts) {
		return nil, fmt.Errorf("not every host was hashed in this job")
	}
	for _, m := range hashes {
		r.hashed.Stats.Add(&m.Hash.Stats)
		r.hashed.Damaged = appendFirst(r.hashed.Damaged, m.Hash.Damaged, stage.KeepFirst)
		// Files compressed whole: a format read, not damage (opview).
		r.hashed.WholeGzip = append(r.hashed.WholeGzip, m.Hash.WholeGzip...)
		r.hashed.WholeGzipBytes += m.Hash.WholeGzipBytes
		r.hashed.MultiRecord += m.Hash.MultiRecord
		r.hashed.MultiRecordFailed += m.Hash.MultiRecordFailed
	}
	resolves := k.stepMarkers(kindResolve)
	if len(resolves) != k.spec.Ranges {
		return nil, fmt.Errorf("not every hash range was resolved in this job")
	}
	for _, m := range resolves {
		r.resolved.Stats.Add(&m.Resolve.Stats)
		r.resolved.Stale = appendFirst(r.resolved.Stale, m.Resolve.Stale, stage.KeepFirst)
	}
	// Every range passed the digest-less revisit lines through.
	if extra := int64(len(resolves)-1) * resolves[0].Resolve.NoDigest; extra > 0 {
		r.resolved.Stats.Lines -= extra
		r.resolved.Stats.Written -= extra
		r.resolved.Stats.Revisits -= extra
	}
	for _, m := range k.stepMarkers(kindRewrite) {
		r.rewrote.Stats.Add(&m.Rewrite.Stats)
		r.rewrote.Refused = append(r.rewrote.Refused, m.Rewrite.Refused...)
		r.rewrote.Derived += m.Rewrite.Derived
		r.remote.Reads += m.Rewrite.Remote.Reads
		r.remote.Moved += m.Rewrite.Remote.Moved
		r.apart += m.Rewrite.Apart
	}
	// The rewrite of the collisions, as run's account adds it.
	for _, m := range k.stepMarkers(kindRewriteCollisions) {
		if m.Rewrite == nil {
			continue // not needed (Marker.NotNeeded)
		}
		c, st := &m.Rewrite.Stats, &r.rewrote.Stats
		st.Revisits += c.Revisits
		st.AlreadyRevisit += c.AlreadyRevisit
		st.NotSmaller += c.NotSmaller
		st.Protected += c.Protected
		st.Refused += c.Refused
		r.rewrote.Refused = append(r.rewrote.Refused, m.Rewrite.Refused...)
		r.rewrote.Derived += m.Rewrite.Derived
		r.remote.Reads += m.Rewrite.Remote.Reads
		r.remote.Moved += m.Rewrite.Remote.Moved
	}
	if m := k.stepMarkers(kindCollide); len(m) == 1 {
		r.collided = m[0].Collide
		// Lines the collisions task found stale are left out as
		// resolve's are: the exit status and the report say so.
		if r.collided != nil {
			r.resolved = r.resolved.WithCollided(&r.collided.CollideResult)
		}
	}
	for _, m := range k.stepMarkers(kindHashAgain) {
		r.again.Add(m.After)
	}
	if v := k.stepMarkers(kindVerify); len(v) == 1 {
		r.verified = *v[0].Verify
	}
	return &r, nil
}

func appendFirst(to, from []string, limit int) []string {
	return append(to, from[:min(len(from), max(0, limit-len(to)))]...)
}

// mergeOutputs puts the hosts' and ranges' outputs together under run's
// names: the numbered manifest on digest (the ranges in order, each
// sorted, are the sorted whole) and on file, the facts and the revisits
// written on file (sort -m of the sorted parts), and the fixity list.
func (k *task) mergeOutputs(ctx context.Context) (replaced int64, err error) {
	var byFile, facts, saved, fixity []string
	for r := range k.spec.Ranges {
		for _, h := range k.spec.Hosts {
			byFile = append(byFile, filepath.Join(k.wd.rangeDir(r, k.spec.Ranges), byFilePrefix+h.Name))
		}
	}
	// With an index, run's numbered manifest on file has the committed
	// originals the resolution kept.
	byFile = append(byFile, k.keptIndexFiles(indexKeptByFile)...)
	hashed, err := k.hashMarkers()
	if err != nil {
		return 0, err
	}
	collided := k.collided()
	for i := range k.spec.Hosts {
		h := &k.spec.Hosts[i]
		facts = append(facts, k.wd.host(h, workdir.FactsByFile))
		saved = append(saved, k.wd.host(h, workdir.SavedFile))
		if collided {
			saved = append(saved, k.wd.host(h, workdir.SavedCollisionsFile))
		}
		if !k.spec.DryRun {
			n, err := stage.WriteFixity(k.wd.host(h, workdir.LogFile), hashed[i].LogSize, k.wd.host(h, workdir.FixityFile))
			if err != nil {
				return 0, err
			}
			replaced += n
			fixity = append(fixity, k.wd.host(h, workdir.FixityFile))
		}
	}
	k.prog.Begin("files", 5)
	if err := k.concatRanges(k.wd.file(workdir.NumberedFile)); err != nil {
		return 0, err
	}
	if collided {
		// The collisions task's numbering of the lines it resolved
		// again, at the hash stage's offsets (stage.CollideBack), as
		// run's rewrite of the collisions leaves it; the numbered
		// manifest on file is then made from it.
		back := stage.CollideBack{Origins: k.wd.file(collideDir, workdir.CollideOrigins), Collide: k.wd.file(collideDir, workdir.CollideFile),
			Numbered: k.wd.file(workdir.NumberedFile), Sorter: k.sorter}
		if err := back.Run(ctx); err != nil {
			return 0, err
		}
		if err := k.sorter.Sort(ctx, manifest.ByFile.Command, []string{k.wd.file(workdir.NumberedFile)}, k.wd.file(workdir.ByFileFile)); err != nil {
			return 0, err
		}
		byFile = nil
	}
	k.prog.done.Add(1)
	for _, m := range []struct {
		inputs []string
		out    string
	}{{byFile, workdir.ByFileFile}, {facts, workdir.FactsByFile}, {saved, workdir.SavedFile}} {
		if m.inputs == nil {
			continue
		}
		if err := k.sorter.Merge(ctx, manifest.ByFile.Command, m.inputs, k.wd.file(m.out)); err != nil {
			return 0, err
		}
		k.prog.done.Add(1)
	}
	if !k.spec.DryRun {
		if err := k.mergeFixity(ctx, fixity, k.wd.file(workdir.FixityFile)); err != nil {
			return 0, err
		}
		if err := k.mergeLogs(k.wd.file(workdir.LogFile)); err != nil {
			return 0, err
		}
	}
	k.prog.done.Add(1)
	return replaced, nil
}

// collided reports whether the collisions task ran: the job compares
// each duplicate once and a rewrite kept one apart (else its result says
// it was not needed, and the job's outputs are the first rewrites').
func (k *task) collided() bool {
	if !k.spec.compareOnce() {
		return false
	}
	m := k.wd.readMarker(k.spec.ID, kindCollide, 0)
	return m == nil || !m.NotNeeded
}

// mergeLogs writes the hosts' rewrite logs one after the other, for
// warccdx and undo, which read one log of the collection: each host's
// runs, whole. The hosts' own logs (hosts/NAME/rewrite.log) are the
// originals, appended to by every job; this is made anew from them.
func (k *task) mergeLogs(out string) error {
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	for i := range k.spec.Hosts {
		in, err := os.Open(k.wd.host(&k.spec.Hosts[i], workdir.LogFile))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = io.Copy(f, in)
		in.Close()
		if err != nil {
			return err
		}
	}
	return f.CommitRenamed()
}

// concatRanges writes the ranges' numbered manifests one after the other:
// the numbered manifest on digest. The revisit lines without a digest,
// which every range holds and which sort first, are kept from range 0.
func (k *task) concatRanges(out string) error {
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := bufio.NewWriterSize(f, 256<<10)
	var buf []byte
	for r := range k.spec.Ranges {
		name := filepath.Join(k.wd.rangeDir(r, k.spec.Ranges), workdir.NumberedFile)
		in, err := os.Open(name)
		if err != nil {
			return err
		}
		rd := manifest.NewReader(bufio.NewReaderSize(in, 256<<10), name)
		for {
			l, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				in.Close()
				return err
			}
			if r > 0 && l.Digest == manifest.NoDigest {
				continue
			}
			buf = l.Append(buf[:0])
			if _, err := w.Write(buf); err != nil {
				in.Close()
				return err
			}
		}
		in.Close()
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.CommitRenamed()
}

// stages are the report's stages: each from its first task's start to its
// last task's end, with run's note on what it did.
func (k *task) stages(res *results) []report.Stage {
	var out []report.Stage
	for _, name := range k.plan.Stages() {
		var first, last time.Time
		tasks := 0
		for _, s := range k.plan.Steps {
			if s.Stage != name {
				continue
			}
			for i := range s.Tasks {
				m := k.wd.readMarker(k.spec.ID, s.Name, i)
				if m == nil {
					continue
				}
				tasks++
				if first.IsZero() || m.Started.Before(first) {
					first = m.Started
				}
				if m.Finished.After(last) {
					last = m.Finished
				}
			}
		}
		st := report.Stage{Name: name, Took: last.Sub(first)}
		switch name {
		case stage.HashName:
			st.Note = fmt.Sprintf("%d hosts: %s", tasks, res.hashed.Note())
		case stage.ResolveName:
			st.Note = fmt.Sprintf("%d hash ranges: %s", tasks, res.resolved.Note())
		case stage.RewriteName:
			st.Note = fmt.Sprintf("%d hosts: %s%s%s", tasks, res.rewrote.Note(k.spec.DryRun), res.remote.note(), (&RewriteResult{Apart: res.apart}).apartNote())
		case stage.CollideName:
			if res.collided != nil {
				st.Note = res.collided.Note()
			} else {
				st.Note = "not run: the rewrites kept no duplicate apart"
			}
		case stage.RewriteCollisionName:
			var c stage.RewriteResult
			ran := 0
			for _, m := range k.stepMarkers(kindRewriteCollisions) {
				if m.Rewrite != nil {
					c.Stats.Add(&m.Rewrite.Stats)
					ran++
				}
			}
			st.Note = fmt.Sprintf("%d hosts: %s", ran, c.Note(false))
			if ran == 0 {
				st.Note = "not run: the rewrites kept no duplicate apart"
			}
		case stage.HashAgainName:
			again := stage.HashResult{Stats: res.again}
			st.Note = fmt.Sprintf("%d hosts: %s", tasks, again.AgainNote())
		case stage.VerifyName:
			st.Note = stage.VerifyNote(res.verified)
		case stage.AccountName:
			st.Took = time.Since(k.marker.Started)
		}
		out = append(out, st)
	}
	return out
}
