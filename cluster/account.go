package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/collres"
	"warcdedup/dedup"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/refs"
	"warcdedup/report"
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
// names, and writes run's account of it (stage 6): by-file.manifest,
// facts-by-file.manifest, saved.tsv, numbered.manifest, fixity.tsv,
// deps.tsv, stats.json and report.html.
func (k *task) account(ctx context.Context) error {
	acc := &dedup.Accounting{WorkDir: string(k.wd), DryRun: k.spec.DryRun, Policy: k.policy, SortMemory: k.spec.SortMemory}
	if err := os.MkdirAll(k.wd.file(workdir.TmpDir), 0o755); err != nil {
		return err
	}
	if err := k.sumResults(acc); err != nil {
		return err
	}
	if err := k.mergeOutputs(ctx, acc); err != nil {
		return err
	}
	mode := "run"
	if k.spec.DryRun {
		mode = "dry run"
	}
	acc.Report = &report.Report{Title: "Deduplication of " + strings.Join(k.spec.Collections(), ", "), Generated: time.Now().UTC(),
		Mode: mode, Collections: k.spec.Collections(), Policy: k.spec.Policy, Algorithm: k.spec.Algorithm,
		Caveats: []string{fmt.Sprintf("Run on a Slurm cluster as %d jobs over %d storage hosts and %d hash ranges.",
			len(k.plan.Steps), len(k.spec.Hosts), k.spec.Ranges)}}
	acc.Report.Stages = k.stages(acc)
	err := dedup.Account(ctx, acc)
	if err == nil && k.spec.withIndex() && !k.spec.DryRun {
		// As run's commit stage: the report says what was committed.
		var st report.Stage
		start := time.Now()
		st, err = k.commitCrawl(ctx, acc)
		st.Took = time.Since(start)
		acc.Report.Stages = append(acc.Report.Stages, st)
	}
	dedup.Finish(acc, err)
	if err != nil {
		return err
	}
	k.marker.Note = fmt.Sprintf("%s duplicates, %s saved", progress.Count(acc.Report.Totals.Duplicates), progress.Bytes(acc.Report.Totals.BytesSaved))
	return nil
}

// sumResults adds up the tasks' figures and messages.
func (k *task) sumResults(acc *dedup.Accounting) error {
	for _, m := range k.stepMarkers(kindHash) {
		acc.Hashed.Add(&m.Hash.Stats)
		acc.Damaged = appendFirst(acc.Damaged, m.Hash.Damaged, 100)
	}
	if len(k.stepMarkers(kindHash)) != len(k.spec.Hosts) {
		return fmt.Errorf("not every host was hashed in this job")
	}
	resolves := k.stepMarkers(kindResolve)
	if len(resolves) != k.spec.Ranges {
		return fmt.Errorf("not every hash range was resolved in this job")
	}
	for _, m := range resolves {
		addResolve(&acc.Resolved, &m.Resolve.Stats)
		acc.Stale = appendFirst(acc.Stale, m.Resolve.Stale, 100)
	}
	// Every range passed the digest-less revisit lines through.
	if extra := int64(len(resolves)-1) * resolves[0].Resolve.NoDigest; extra > 0 {
		acc.Resolved.Lines -= extra
		acc.Resolved.Written -= extra
		acc.Resolved.Revisits -= extra
	}
	for _, m := range k.stepMarkers(kindRewrite) {
		addRewrite(&acc.Rewrote, &m.Rewrite.Stats)
		acc.Refused = append(acc.Refused, m.Rewrite.Refused...)
	}
	if v := k.stepMarkers(kindVerify); len(v) == 1 {
		acc.Verified = *v[0].Verify
	}
	return nil
}

func appendFirst(to, from []string, limit int) []string {
	return append(to, from[:min(len(from), max(0, limit-len(to)))]...)
}

func addResolve(s, o *collres.Stats) {
	s.Lines += o.Lines
	s.Written += o.Written
	s.Clusters += o.Clusters
	s.Fetched += o.Fetched
	s.Compared += o.Compared
	s.Collisions += o.Collisions
	s.Split += o.Split
	s.Stale += o.Stale
	s.Repeated += o.Repeated
	s.Revisits += o.Revisits
	s.Pinned += o.Pinned
}

func addRewrite(s, o *refs.Stats) {
	s.Lines += o.Lines
	s.Files += o.Files
	s.Rewritten += o.Rewritten
	s.Untouched += o.Untouched
	s.Refused += o.Refused
	s.Revisits += o.Revisits
	s.AlreadyRevisit += o.AlreadyRevisit
	s.NotSmaller += o.NotSmaller
	s.ARC += o.ARC
	s.Protected += o.Protected
	s.BytesBefore += o.BytesBefore
	s.BytesAfter += o.BytesAfter
}

// mergeOutputs puts the hosts' and ranges' outputs together under run's
// names: the numbered manifest on digest (the ranges in order, each
// sorted, are the sorted whole) and on file, the facts and the revisits
// written on file (sort -m of the sorted parts), and the fixity list.
func (k *task) mergeOutputs(ctx context.Context, acc *dedup.Accounting) error {
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
		return err
	}
	for i := range k.spec.Hosts {
		h := &k.spec.Hosts[i]
		facts = append(facts, k.wd.host(h, workdir.FactsByFile))
		saved = append(saved, k.wd.host(h, workdir.SavedFile))
		if !k.spec.DryRun {
			n, err := dedup.WriteFixity(k.wd.host(h, workdir.LogFile), hashed[i].LogSize, k.wd.host(h, workdir.FixityFile))
			if err != nil {
				return err
			}
			acc.FilesReplaced += n
			fixity = append(fixity, k.wd.host(h, workdir.FixityFile))
		}
	}
	k.prog.Begin("files", 5)
	for _, m := range []struct {
		inputs []string
		out    string
	}{{byFile, workdir.ByFileFile}, {facts, workdir.FactsByFile}, {saved, workdir.SavedFile}} {
		if err := k.sorter.Merge(ctx, manifest.ByFile.Command, m.inputs, k.wd.file(m.out)); err != nil {
			return err
		}
		k.prog.done.Add(1)
	}
	if err := k.concatRanges(k.wd.file(workdir.NumberedFile)); err != nil {
		return err
	}
	k.prog.done.Add(1)
	if !k.spec.DryRun {
		if err := k.mergeFixity(ctx, fixity, k.wd.file(workdir.FixityFile)); err != nil {
			return err
		}
		if err := k.mergeLogs(k.wd.file(workdir.LogFile)); err != nil {
			return err
		}
	}
	k.prog.done.Add(1)
	return nil
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
func (k *task) stages(acc *dedup.Accounting) []report.Stage {
	var out []report.Stage
	for _, stage := range k.plan.Stages() {
		var first, last time.Time
		tasks := 0
		for _, s := range k.plan.Steps {
			if s.Stage != stage {
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
		st := report.Stage{Name: stage, Took: last.Sub(first)}
		switch stage {
		case StageHash:
			h := &acc.Hashed
			st.Note = fmt.Sprintf("%d hosts: %s files, %s records listed, %s damaged, %s files known unchanged", tasks,
				progress.Count(h.Files), progress.Count(h.Listed), progress.Count(h.Damaged), progress.Count(h.Cached))
		case StageResolve:
			r := &acc.Resolved
			st.Note = fmt.Sprintf("%d hash ranges: %s clusters, %s records compared, %s stale", tasks,
				progress.Count(r.Clusters), progress.Count(r.Fetched), progress.Count(r.Stale))
		case StageRewrite:
			r := &acc.Rewrote
			verb := "written"
			if k.spec.DryRun {
				verb = "that would be written"
			}
			var remote RemoteStats
			for _, m := range k.stepMarkers(kindRewrite) {
				remote.Reads += m.Rewrite.Remote.Reads
				remote.Moved += m.Rewrite.Remote.Moved
			}
			st.Note = fmt.Sprintf("%d hosts: %s revisits %s in %s files, %s refused; %s originals read from other hosts, %s in files replaced since", tasks,
				progress.Count(r.Revisits+r.AlreadyRevisit), verb, progress.Count(r.Rewritten), progress.Count(r.Refused),
				progress.Count(remote.Reads), progress.Count(remote.Moved))
		case StageAfter:
			var a warcsum.Stats
			for _, m := range k.stepMarkers(kindAfter) {
				a.Add(m.After)
			}
			st.Note = fmt.Sprintf("%d hosts: %s files read again, %s known unchanged", tasks, progress.Count(a.Read()), progress.Count(a.Cached))
		case StageVerify:
			st.Note = fmt.Sprintf("%s violations", progress.Count(acc.Verified.Violations))
		case StageAccount:
			st.Took = time.Since(k.marker.Started)
		}
		out = append(out, st)
	}
	return out
}
