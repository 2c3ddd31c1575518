package stage

import (
	"context"
	"fmt"

	"warcdedup/atomicfile"
	"warcdedup/digest"
	"warcdedup/internal/progress"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// Hash lists every candidate response and existing revisit of the files
// (warcsum): stage 1, the manifest in file order and the facts (each
// response's status and media type); and again after the rewrite, the
// first half of stage 5, where the cache knows the files left unchanged
// and those the rewrite replaced (warcsum.Cache.Derive), so that only
// what neither knows is read.
type Hash struct {
	Inputs    []warcsum.Input
	Algorithm digest.Algorithm
	Jobs      int // files read at once
	// Cache is the directory of warcsum's per-file cache.
	Cache string
	// Manifest gets the listing and Facts, unless "", the facts; each
	// appears whole or not at all.
	Manifest, Facts string
	// OnFile, if set, gets each file's SHA-256 as read, or as the cache
	// keeps it (warcsum.Runner.OnFile; setting it makes the cache keep
	// them).
	OnFile   func(in warcsum.Input, sha256 string)
	Messages Messages // damaged records and unreadable files (Error)
	Meter    progress.Meter
}

// HashResult is what a Hash found.
type HashResult struct {
	Stats warcsum.Stats `json:"stats"`
	// Damaged are the first messages of damaged records and unreadable
	// files.
	Damaged []string `json:"damaged,omitempty"`
}

// Options are the options the files are listed with, in both hash stages
// and by the rewrite's derived listings: the same, or the cache would not
// know one stage's lines for the other's.
func Options(algorithm digest.Algorithm) warcsum.Options {
	return warcsum.Options{Algorithm: algorithm}
}

// Run lists the files. A stopped context stops it with its error, the
// outputs left unwritten.
func (h *Hash) Run(ctx context.Context) (HashResult, error) {
	damaged := &firstOf{limit: KeepFirst}
	damage := func(err error) {
		damaged.add(err)
		h.Messages.Error(err)
	}
	opt := Options(h.Algorithm)
	opt.Damage = damage
	opt.Warn = func(error) {} // warcsum's notes on a file are its damage, given above
	cache, err := warcsum.NewCache(h.Cache, opt)
	if err != nil {
		return HashResult{}, err
	}
	var total int64
	for _, in := range h.Inputs {
		total += in.Size
	}
	out, err := atomicfile.Create(h.Manifest, 0o644)
	if err != nil {
		return HashResult{}, err
	}
	defer out.Abort()
	r := warcsum.Runner{Options: opt, Jobs: h.Jobs, Progress: new(warcsum.Progress), Cache: cache,
		OnFileError: func(_ warcsum.Input, err error) { damage(err) }, OnFile: h.OnFile}
	var facts *atomicfile.File
	if h.Facts != "" {
		if facts, err = atomicfile.Create(h.Facts, 0o644); err != nil {
			return HashResult{}, err
		}
		defer facts.Abort()
		r.Facts = facts
	}
	h.Meter.Begin("bytes", total)
	stop := progress.Follow(&r.Progress.Bytes, h.Meter)
	st, err := r.Run(h.Inputs, out)
	stop()
	res := HashResult{Stats: st, Damaged: damaged.list}
	if err != nil {
		return res, err
	}
	if err := out.CommitRenamed(); err != nil {
		return res, err
	}
	if facts != nil {
		if err := facts.CommitRenamed(); err != nil {
			return res, err
		}
	}
	return res, ctx.Err()
}

// Note says what a Hash did, for the report's stage.
func (h *HashResult) Note() string {
	st := &h.Stats
	return fmt.Sprintf("%s files, %s records listed, %s damaged, %s files known unchanged",
		progress.Count(st.Files), progress.Count(st.Listed), progress.Count(st.Damaged), progress.Count(st.Cached))
}

// AgainNote says what a Hash after the rewrite did.
func (h *HashResult) AgainNote() string {
	return fmt.Sprintf("%s files read again, %s known unchanged", progress.Count(h.Stats.Read()), progress.Count(h.Stats.Cached))
}

// Reasons are why the exit status is not 0, as far as the hash stage
// goes: the damaged records and unreadable files.
func (h *HashResult) Reasons() []string {
	n := h.Stats.Damaged + h.Stats.FilesFailed
	if n == 0 {
		return nil
	}
	return append([]string{fmt.Sprintf("%s damaged records or unreadable files (hash stage; see %s)", progress.Count(n), workdir.RunLog)}, First(h.Damaged, 5)...)
}
