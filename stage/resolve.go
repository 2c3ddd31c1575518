package stage

import (
	"bufio"
	"context"
	"fmt"

	"warcdedup/archname"
	"warcdedup/atomicfile"
	"warcdedup/collres"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/policy"
)

// Resolve proves the duplicates byte for byte and numbers the copies
// (warccollres -p): stages 2 and 3 in one pass over a manifest sorted on
// digest, into the numbered manifest, on digest. Each record of a digest
// that more than one line has is read where Source finds it and compared;
// a line whose record no longer matches it is stale, named and left out.
//
// This is where each duplicate will be compared once (issue 21): the
// copies numbered from the sorted manifest alone, the comparison left to
// Rewrite, which reads each duplicate anyway.
type Resolve struct {
	In     *manifest.Reader // sorted on digest: a work file, or the merge of a hash range's parts
	Out    string           // the numbered manifest, whole or not at all
	Source collres.Opener   // the records, kept open between them (source.Locator.Files)
	// FromManifest numbers the copies from the manifest alone, reading
	// no record (collres.Resolver.FromManifest): the rewrite then
	// compares each duplicate, once, and keeps apart those that differ
	// (Rewrite.Apart), which Collide resolves byte for byte. Source is
	// not read.
	FromManifest bool
	Policy       policy.Policy
	Jobs         int // digests resolved at once
	// Kept, if set, names the lines that stay responses whatever their
	// date: a crawl index's committed originals, joined to the manifest.
	Kept     func(*manifest.Line) bool
	Total    int64    // the lines of In, for the progress
	Messages Messages // stale lines (Error), collisions and repeated records (Warn)
	Meter    progress.Meter
}

// ResolveResult is what a Resolve found.
type ResolveResult struct {
	Stats collres.Stats `json:"stats"`
	Stale []string      `json:"stale,omitempty"` // the first messages
	// NoOriginal counts the committed originals left out as no
	// originals, records cut short or no responses (see cutShort):
	// warned of, not counted stale (Stats.Stale).
	NoOriginal int64 `json:"no_original,omitempty"`
}

// Run resolves and numbers.
func (r *Resolve) Run(ctx context.Context) (ResolveResult, error) {
	out, err := atomicfile.Create(r.Out, 0o644)
	if err != nil {
		return ResolveResult{}, err
	}
	defer out.Abort()
	stale := &firstOf{limit: KeepFirst}
	var prog collres.Progress
	cut := newCutShort(r.Source, r.Kept)
	res := collres.Resolver{Source: r.Source, Policy: r.Policy, Jobs: r.Jobs, Number: true, FromManifest: r.FromManifest, Class: ManifestClass(r.Policy), Progress: &prog, Kept: r.Kept,
		Stale: func(err error) {
			if cut.take(ctx, err, r.Messages.Warn) {
				return
			}
			stale.add(err)
			r.Messages.Error(err)
		},
		Warn: r.Messages.Warn}
	r.Meter.Begin("lines", r.Total)
	stop := progress.Follow(&prog.Lines, r.Meter)
	bw := bufio.NewWriterSize(out, 256<<10)
	st, err := res.Run(ctx, r.In, bw)
	stop()
	// Left out as stale lines are, but no stale line: no exit reason.
	st.Stale -= cut.found.Load()
	result := ResolveResult{Stats: st, Stale: stale.list, NoOriginal: cut.found.Load()}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = out.CommitRenamed()
	}
	return result, err
}

// Note says what a Resolve did, for the report's stage.
func (r *ResolveResult) Note() string {
	st := &r.Stats
	note := fmt.Sprintf("%s clusters, %s records compared, %s stale", progress.Count(st.Clusters), progress.Count(st.Fetched), progress.Count(st.Stale))
	if r.NoOriginal > 0 {
		note += fmt.Sprintf(", %s indexed originals left out (cut short, or no response)", progress.Count(r.NoOriginal))
	}
	return note
}

// Reasons are why the exit status is not 0, as far as the resolution
// goes: the stale lines it left out.
func (r *ResolveResult) Reasons() []string {
	if r.Stats.Stale == 0 {
		return nil
	}
	return append([]string{fmt.Sprintf("%s stale manifest lines left out (resolve stage)", progress.Count(r.Stats.Stale))}, First(r.Stale, 5)...)
}

// ManifestClass is what a manifest line tells of its record's key under
// p (see policy.Policy.Key), for a resolve that reads nothing
// (collres.Resolver.Class): under policy.URI the key itself, the URI;
// under policy.Replay the container an ARC file's name shows (its status
// and headers only the record tells, and the rewrite compares them).
// Records numbered apart here are never compared, so what this gives
// must only separate what the key would: a file named .arc that holds
// WARC records is numbered apart from WARC copies, which costs a saving,
// never a byte.
func ManifestClass(p policy.Policy) func(l *manifest.Line) string {
	switch p {
	case policy.Payload:
		return nil
	case policy.URI:
		return func(l *manifest.Line) string { return l.URI }
	}
	return func(l *manifest.Line) string {
		if InARCFile(l) {
			return "ARC"
		}
		return ""
	}
}

// InARCFile reports whether l's file is named as an ARC file.
func InARCFile(l *manifest.Line) bool {
	return archname.IsARC(l.File)
}
