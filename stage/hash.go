package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"warcdedup/atomicfile"
	"warcdedup/digest"
	"warcdedup/internal/progress"
	"warcdedup/record"
	"warcdedup/wacz"
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
	// Compress writes them gzip-compressed, a member a file (package
	// gzfile reads either form): the manifests a run keeps for undo and
	// audit.
	Compress bool
	// OnFile, if set, gets each file's SHA-256 as read, or as the cache
	// keeps it (warcsum.Runner.OnFile; setting it makes the cache keep
	// them).
	OnFile func(in warcsum.Input, sha256 string)
	// WantSum, if set, limits OnFile's SHA-256 to the inputs it accepts
	// (warcsum.Runner.WantSum).
	WantSum func(in warcsum.Input) bool
	// MemberLines, if set, gets the warcindex lines of each WACZ member
	// read (an input with a Stamp that names a package's member), made
	// from the stage's own read of it (warcsum.Runner.Index): what the
	// rebuild of its package makes a fresh index from. What it held is
	// removed first.
	MemberLines *wacz.LineStore
	Messages    Messages // damaged records and unreadable files (Error)
	Meter       progress.Meter
}

// HashResult is what a Hash found.
type HashResult struct {
	Stats warcsum.Stats `json:"stats"`
	// Damaged are the first messages of damaged records and unreadable
	// files.
	Damaged []string `json:"damaged,omitempty"`
	// WholeGzip are the files compressed whole (a gzip member holding
	// several records), which warcsum reports as damage: a form this
	// toolchain reads but cannot rewrite record by record, not damage.
	// Stats counts their reports among its damage; DamagedRecords and
	// UnreadableFiles do not.
	WholeGzip      []string `json:"whole_gzip,omitempty"`
	WholeGzipBytes int64    `json:"whole_gzip_bytes,omitempty"`
	// MultiRecord are the reports of Stats.Damaged and FilesFailed of
	// those files.
	MultiRecord       int64 `json:"multi_record,omitempty"`
	MultiRecordFailed int64 `json:"multi_record_failed,omitempty"`
}

// DamagedRecords are the damaged records the hash found, but the gzip
// members of several records of files compressed whole.
func (h *HashResult) DamagedRecords() int64 { return max(h.Stats.Damaged-h.MultiRecord, 0) }

// UnreadableFiles are the files no record of which could be read, but
// files compressed whole.
func (h *HashResult) UnreadableFiles() int64 {
	return max(h.Stats.FilesFailed-h.MultiRecordFailed, 0)
}

// wholeGzip is what a Hash finds of the files compressed whole as its
// workers report them.
type wholeGzip struct {
	mu            sync.Mutex
	files         map[string]int64 // name as warcsum reports it: size
	damage, fails int64
}

// take reports whether err is of a file compressed whole, counting it.
// The cache gives a file's messages again as text ("NAME: offset N:
// gzip member holds more than one record: ..."), so the text is read
// when the error is not a record's.
func (g *wholeGzip) take(err error, sizes map[string]int64) bool {
	var name string
	var re *record.Error
	switch msg := err.Error(); {
	case errors.As(err, &re) && errors.Is(err, record.ErrMultiRecord):
		name = re.Name
	case strings.Contains(msg, ": "+record.ErrMultiRecord.Error()):
		prefix := msg[:strings.Index(msg, ": "+record.ErrMultiRecord.Error())]
		i := strings.LastIndex(prefix, ": offset ")
		if i < 0 {
			if i = strings.LastIndex(prefix, ": inflated offset "); i < 0 {
				return false
			}
		}
		name = prefix[:i]
	default:
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.damage++
	if _, ok := g.files[name]; !ok {
		g.files[name] = sizes[name]
	}
	return true
}

// failed reports whether a file's failure is that of a file compressed
// whole (named already by its member), counting it.
func (g *wholeGzip) failed(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.files[name]; ok {
		g.fails++
		return true
	}
	return false
}

// WholeGzipWhy is what a file compressed whole is, and what to do with it.
const WholeGzipWhy = "compressed whole (a gzip member holds several records): read, but a revisit replaces a record's own member; warcrecompress gives each record a member of its own, and a run then deduplicates the file"

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
	sizes := map[string]int64{}
	for _, in := range h.Inputs {
		sizes[in.Name] = in.Size
	}
	whole := &wholeGzip{files: map[string]int64{}}
	damage := func(err error) {
		if whole.take(err, sizes) {
			h.Messages.Warn(fmt.Errorf("%w; %s", err, WholeGzipWhy))
			return
		}
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
	// Compressed, each file's lines are a gzip member, made by the worker
	// that read it and kept as it is by the cache (warcsum.Runner.Gzip).
	r := warcsum.Runner{Options: opt, Jobs: h.Jobs, Progress: new(warcsum.Progress), Cache: cache, Gzip: h.Compress,
		OnFileError: func(in warcsum.Input, err error) {
			if whole.failed(in.Name) {
				return
			}
			damage(err)
		}, OnFile: h.OnFile, WantSum: h.WantSum}
	if h.MemberLines != nil {
		if err := os.RemoveAll(h.MemberLines.Dir); err != nil {
			return HashResult{}, err
		}
		r.Index = h.memberIndex
	}
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
	res := HashResult{Stats: st, Damaged: damaged.list, MultiRecord: whole.damage, MultiRecordFailed: whole.fails}
	for name, size := range whole.files {
		res.WholeGzip = append(res.WholeGzip, name)
		res.WholeGzipBytes += size
	}
	slices.Sort(res.WholeGzip)
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

// memberIndex is the index of the input in if it is a WACZ member: its
// lines into MemberLines, stamped with its version.
func (h *Hash) memberIndex(in warcsum.Input) warcsum.FileIndex {
	if _, _, ok := wacz.SplitName(in.Name); !ok || in.Stamp == "" {
		return nil
	}
	w, err := h.MemberLines.Writer(in.Name, in.Stamp)
	if err != nil {
		// Not an error: the rebuild reads the member for its index.
		h.Messages.Note("%v; its package's rebuild reads it for its index", err)
		return nil
	}
	return w
}

// Note says what a Hash did, for the report's stage.
func (h *HashResult) Note() string {
	st := &h.Stats
	note := fmt.Sprintf("%s, %s listed, %s, %s known unchanged",
		progress.Plural(st.Files, "file", ""), progress.Plural(st.Listed, "record", ""), Damage(h.DamagedRecords(), h.UnreadableFiles()),
		progress.Plural(st.Cached, "file", ""))
	if n := len(h.WholeGzip); n > 0 {
		note += fmt.Sprintf(", %s compressed whole", progress.Plural(int64(n), "file", ""))
	}
	return note
}

// AgainNote says what a Hash after the rewrite did.
func (h *HashResult) AgainNote() string {
	return fmt.Sprintf("%s read again, %s known unchanged", progress.Plural(h.Stats.Read(), "file", ""), progress.Plural(h.Stats.Cached, "file", ""))
}

// Reasons are why the exit status is not 0, as far as the hash stage
// goes: the damaged records and unreadable files.
func (h *HashResult) Reasons() []string {
	records, files := h.DamagedRecords(), h.UnreadableFiles()
	if records+files == 0 {
		return nil
	}
	return append([]string{fmt.Sprintf("%s (hash stage; see %s)", Damage(records, files), workdir.RunLog)}, First(h.Damaged, 5)...)
}
