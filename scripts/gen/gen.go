// Package gen writes synthetic web archive collections (WARC/1.0, WARC/1.1
// and ARC v1 files, plain or with one gzip member per record) together with
// the hash manifest a correct deduplication of them produces. It is the
// ground truth the tools of this module are tested against.
//
// A collection is planned from Config.Seed alone, so the same Config gives
// the same bytes. Payloads are never stored: each is a small descriptor
// (Payload) its bytes are regenerated from, so duplicates repeat exactly the
// same bytes and a multi-gigabyte payload costs no memory.
package gen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"warcdedup/digest"
	"warcdedup/manifest"
	"warcdedup/policy"
)

// Format is the kind of file written.
type Format uint8

// The file formats. Every WARC file gets `.warc` or `.warc.gz`, every ARC
// file `.arc` or `.arc.gz`; the gzip forms hold one gzip member per record.
const (
	WARC10   Format = iota // "warc": WARC/1.0, plain
	WARC10Gz               // "warc.gz": WARC/1.0, a gzip member per record
	WARC11                 // "warc1.1": WARC/1.1, plain
	WARC11Gz               // "warc1.1.gz": WARC/1.1, a gzip member per record
	ARC                    // "arc": ARC v1, plain
	ARCGz                  // "arc.gz": ARC v1, a gzip member per record
	ARC2                   // "arc2": ARC v2 (Alexa's record lines), plain
	ARC2Gz                 // "arc2.gz": ARC v2, a gzip member per record
)

var formatNames = [...]string{WARC10: "warc", WARC10Gz: "warc.gz", WARC11: "warc1.1", WARC11Gz: "warc1.1.gz", ARC: "arc", ARCGz: "arc.gz", ARC2: "arc2", ARC2Gz: "arc2.gz"}

// AllFormats is every format, the default mix.
var AllFormats = []Format{WARC10Gz, WARC10, WARC11Gz, WARC11, ARCGz, ARC}

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// IsARC reports whether f is an ARC format.
func (f Format) IsARC() bool { return f == ARC || f == ARCGz || f.arcV2() }

// Gzip reports whether f writes a gzip member per record.
func (f Format) Gzip() bool { return f == WARC10Gz || f == WARC11Gz || f == ARCGz || f == ARC2Gz }

// Ext is the file name extension of f.
func (f Format) Ext() string {
	switch {
	case f.IsARC() && f.Gzip():
		return ".arc.gz"
	case f.IsARC():
		return ".arc"
	case f.Gzip():
		return ".warc.gz"
	}
	return ".warc"
}

// version is the WARC version line's number.
func (f Format) version() string {
	if f == WARC11 || f == WARC11Gz {
		return "1.1"
	}
	return "1.0"
}

// ParseFormats reads a comma-separated list of format names ("warc.gz,warc,
// warc1.1,warc1.1.gz,arc,arc.gz"; "warc1.0" and "warc1.0.gz" are accepted
// too, and "all" stands for AllFormats).
func ParseFormats(s string) ([]Format, error) {
	var out []Format
	for name := range strings.SplitSeq(s, ",") {
		name = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ".")))
		switch name {
		case "":
			continue
		case "all":
			out = append(out, AllFormats...)
			continue
		case "warc1.0":
			name = "warc"
		case "warc1.0.gz":
			name = "warc.gz"
		}
		i := slices.Index(formatNames[:], name)
		if i < 0 {
			return nil, fmt.Errorf("unknown format %q (want warc, warc.gz, warc1.1, warc1.1.gz, arc or arc.gz)", name)
		}
		out = append(out, Format(i))
	}
	if len(out) == 0 {
		return nil, errors.New("no formats given")
	}
	return out, nil
}

// Config describes a collection. The zero value of a field means its
// default, except where said otherwise.
type Config struct {
	Files   int // number of files; default 1
	Records int // listed (2xx, candidate) response records in total; default 100
	// DupRate is the fraction of listed responses whose payload repeats
	// another listed response's payload (0 means none; at most 0.95). Under
	// the payload policy the count is exact: Result.Duplicates is
	// round(DupRate*Records) (at most Records-1), the repeats of collision
	// members included; the other policies make fewer of them duplicates.
	DupRate   float64
	Seed      int64            // the output is a function of the Config, Seed included
	Algorithm digest.Algorithm // of the expected manifest; default SHA1
	// MeanPayload scales the payload size mix (many 1-30 KB HTML pages, style
	// sheets and scripts, images of random bytes, a few multi-MB files); the
	// mean payload is about this many bytes. Default 20 KiB.
	MeanPayload int
	MaxPayload  int      // no payload is larger; default max(8 MiB, 64*MeanPayload)
	Formats     []Format // file i gets Formats[i%len(Formats)]; default AllFormats
	Chunked     float64  // fraction of payloads stored with chunked framing (0 means none)
	// Collisions adds the published collision pairs of CollisionDir (see
	// shared/collisions/README.md) as payloads, each member also repeated.
	Collisions   bool
	CollisionDir string
	// NonCandidates adds records that must not be listed: a warcinfo record
	// first in each WARC file, a request record before every WARC response,
	// metadata and resource records, 404 and 301 responses (some 404s carry
	// the payload of a listed 200), a 206 and a WARC-Truncated response with
	// listed payloads, a revisit record; in ARC files dns: records, 404s and
	// 301s. ARC files always start with their filedesc:// record.
	NonCandidates bool
	// Huge, if > 0, adds one listed response with a payload of that many
	// random bytes, streamed (for testing the bounded memory of readers).
	Huge int64
	// SameURL is the fraction of duplicates that re-fetch the URL of the
	// record they repeat, at another date; the others have another URL.
	// 0 means the default 0.4; a negative value means none.
	SameURL float64
	// Sequential lays the files out one after another in time, a day
	// apart, as crawls a month apart are: no capture of a file is earlier
	// than a capture of the file before it. By default files are written
	// two at a time, as by a crawler's writer threads.
	Sequential bool
	// CrossFile is the fraction of duplicates whose source record is drawn
	// from another file (earlier or later). 0 means the default 0.5; a
	// negative value means none.
	CrossFile float64
	// Quirks adds legal oddities readers must cope with: a few URIs holding a
	// space, and in WARC/1.0 files a few WARC-Target-URIs in a <...> wrapper.
	Quirks bool
	// ARCQuirks adds, in ARC files, what real ones have (see arc.go): a
	// filedesc length one short, records followed by no line feed or by
	// two, dashes in ARC v2 lines.
	ARCQuirks bool
	// ReplayVariants is the fraction of duplicates served differently from
	// the record they repeat: status 203, another Content-Type, or
	// Content-Encoding: gzip. Under the replay policy they are not
	// duplicates of it.
	ReplayVariants float64
	// Policy decides which byte-identical records Result.Expected makes
	// copies of one another (policy.Replay, the zero value, by default).
	Policy policy.Policy
	Prefix string // file name prefix; default "gen"
}

func (c Config) withDefaults() (Config, error) {
	if c.Files <= 0 {
		c.Files = 1
	}
	if c.Records <= 0 {
		c.Records = 100
	}
	if c.DupRate < 0 || c.DupRate > 0.95 {
		return c, fmt.Errorf("DupRate %v out of range [0, 0.95]", c.DupRate)
	}
	if c.Algorithm == 0 {
		c.Algorithm = digest.SHA1
	}
	if !c.Algorithm.Valid() {
		return c, fmt.Errorf("invalid digest algorithm %v", c.Algorithm)
	}
	if c.MeanPayload <= 0 {
		c.MeanPayload = 20 << 10
	}
	if c.MaxPayload <= 0 {
		c.MaxPayload = max(8<<20, 64*c.MeanPayload)
	}
	if len(c.Formats) == 0 {
		c.Formats = AllFormats
	}
	for _, f := range c.Formats {
		if int(f) >= len(formatNames) {
			return c, fmt.Errorf("invalid format %v", f)
		}
	}
	if c.Chunked < 0 || c.Chunked > 1 {
		return c, fmt.Errorf("chunked fraction %v out of range [0, 1]", c.Chunked)
	}
	if c.Collisions && c.CollisionDir == "" {
		return c, errors.New("collisions need a CollisionDir")
	}
	c.SameURL = fraction(c.SameURL, 0.4)
	c.CrossFile = fraction(c.CrossFile, 0.5)
	if c.Prefix == "" {
		c.Prefix = "gen"
	}
	return c, nil
}

func fraction(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

// Result is what Write wrote and what a correct deduplication of it gives.
type Result struct {
	// Expected has one 10-field line per listed record, sorted by
	// manifest.ByDigest: file, offset and length as stored, URI, date, the
	// Config.Algorithm digest of the payload, and the ext, copy, refuri and
	// refdate that collision resolution and post-processing must assign
	// under Config.Policy; and a revisit line per revisit record written.
	Expected []manifest.Line
	// Payloads[i] is the payload of Expected[i], to regenerate its bytes.
	Payloads []Payload
	// Pairs are the collision pairs included (empty unless Config.Collisions).
	Pairs []Pair
	Names []string // the files written, base names in order

	Files          int   // files written
	Responses      int   // response records written (WARC responses, ARC HTTP records), listed or not
	Listed         int   // len(Expected)
	Revisits       int   // revisit lines in Expected
	Duplicates     int   // listed records with copy > 1
	DuplicateBytes int64 // sum of the stored payload sizes of those records
	Collisions     int   // payloads that share a digest with another but differ in bytes
	Split          int   // classes of identical bytes beyond the first that the policy keeps apart
	TotalBytes     int64 // bytes written, all files
}

// Summary is a one-line account of r.
func (r *Result) Summary() string {
	pct := 0.0
	if r.Listed > 0 {
		pct = 100 * float64(r.Duplicates) / float64(r.Listed)
	}
	return fmt.Sprintf("%d files, %d bytes, %d responses, %d listed, %d duplicates (%.1f%%, %d payload bytes), %d collision classes",
		r.Files, r.TotalBytes, r.Responses, r.Listed, r.Duplicates, pct, r.DuplicateBytes, r.Collisions)
}

// WriteExpected writes r.Expected in manifest form.
func (r *Result) WriteExpected(w io.Writer) error {
	mw := manifest.NewWriter(w)
	for i := range r.Expected {
		if err := mw.Write(&r.Expected[i]); err != nil {
			return err
		}
	}
	return mw.Flush()
}

// Write writes the collection cfg describes into dir (created if needed),
// files in parallel, and returns the expected deduplication result.
func Write(dir string, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var pairs []pairData
	if cfg.Collisions {
		if pairs, err = loadPairs(cfg.CollisionDir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := makePlan(cfg, pairs)

	outs := make([]*fileOut, len(p.files))
	err = parallel(runtime.GOMAXPROCS(0), len(p.files), func(ctx context.Context, i int) error {
		o, err := writeFile(ctx, dir, p, i)
		outs[i] = o
		return err
	})
	if err != nil {
		return nil, err
	}

	r := &Result{Files: len(p.files), Pairs: p.pairs}
	for _, f := range p.files {
		r.Names = append(r.Names, f.name)
	}
	payloads := p.payloads
	p = nil // the file plans are done with

	// Gather the lines and what is known of their payloads in two parallel
	// slices, resolve, and sort both in place: no copy of the manifest is
	// ever made, as it is the one thing that grows with the collection.
	n := 0
	for _, o := range outs {
		n += len(o.recs)
	}
	lines := make([]manifest.Line, 0, n)
	metas := make([]recMeta, 0, n)
	for i, o := range outs {
		r.Responses += o.responses
		r.TotalBytes += o.size
		for _, rc := range o.recs {
			lines = append(lines, rc.line)
			metas = append(metas, rc.recMeta)
		}
		outs[i] = nil
	}
	counts := resolve(lines, metas)
	idx := order(lines, manifest.ByDigest)
	for i := range idx { // lines[i], metas[i] = old lines[idx[i]], metas[idx[i]]
		if idx[i] < 0 {
			continue
		}
		l, m := lines[i], metas[i]
		for j := i; ; {
			k := int(idx[j])
			idx[j] = -1
			if k == i {
				lines[j], metas[j] = l, m
				break
			}
			lines[j], metas[j] = lines[k], metas[k]
			j = k
		}
	}
	r.Expected = lines
	r.Payloads = make([]Payload, len(lines))
	for i := range lines {
		if lines[i].IsRevisit() {
			r.Revisits++
			continue
		}
		r.Payloads[i] = payloads[metas[i].pay]
		if lines[i].Copy > 1 {
			r.Duplicates++
			r.DuplicateBytes += metas[i].stored
		}
	}
	r.Collisions, r.Split = counts.collisions, counts.split
	r.Listed = len(r.Expected)
	return r, nil
}

// payloadKey tells payloads apart by their bytes: the stored length and a
// 64-bit hash, used only among payloads with the same manifest digest.
type payloadKey struct {
	size int64
	hash uint64
}

// listedRec is one listed record as written.
type listedRec struct {
	line manifest.Line
	recMeta
}

// recMeta is what is known of a listed record's payload.
type recMeta struct {
	key    payloadKey
	replay string // its policy key
	pay    int32  // index into plan.payloads; -1 for a revisit line
	stored int64  // StoredSize of the payload
}

// classCounts are the classes resolve found beyond the first of a digest.
type classCounts struct{ collisions, split int }

// resolve assigns Ext, Copy, RefURI and RefDate as the pipeline must:
// within a digest, in (date, file, offset) order, each new pair of byte
// string and policy key gets the next ext; within a (digest, ext) class the
// lines are numbered by manifest.Numberer, keeping what the revisit lines
// (which sort first) refer to.
func resolve(lines []manifest.Line, metas []recMeta) classCounts {
	type class struct {
		key    payloadKey
		replay string
	}
	var counts classCounts
	var global manifest.Pins
	idx := order(lines, manifest.ByDigest)
	for _, k := range idx {
		if lines[k].IsRevisit() && lines[k].Digest == manifest.NoDigest {
			global.Add(&lines[k])
		}
	}
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && lines[idx[j]].Digest == lines[idx[i]].Digest {
			j++
		}
		var pins manifest.Pins
		var classes []class
		var payloads []payloadKey
		numberers := map[int]*manifest.Numberer{}
		pinned := func(uri, date string) bool { return pins.Has(uri, date) || global.Has(uri, date) }
		for _, k := range idx[i:j] {
			l := &lines[k]
			if l.IsRevisit() {
				pins.Add(l)
				continue
			}
			c := class{metas[k].key, metas[k].replay}
			ext := slices.Index(classes, c)
			if ext < 0 {
				ext = len(classes)
				classes = append(classes, c)
				if !slices.Contains(payloads, c.key) {
					payloads = append(payloads, c.key)
					if len(payloads) > 1 {
						counts.collisions++
					}
				} else {
					counts.split++
				}
			}
			n := numberers[ext]
			if n == nil {
				n = &manifest.Numberer{Pinned: pinned}
				numberers[ext] = n
			}
			l.Class = ext
			n.Number(l)
		}
		i = j
	}
	return counts
}

// order returns the indexes of lines in the order o.
func order(lines []manifest.Line, o *manifest.Order) []int32 {
	idx := make([]int32, len(lines))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int { return o.Compare(&lines[a], &lines[b]) })
	return idx
}

// parallel calls f(ctx, i) for i in [0, n) on at most limit goroutines and
// returns the first error; ctx is cancelled after it. (errgroup does the
// same, but golang.org/x/sync has no go.sum entry in this module.)
func parallel(limit, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	sem := make(chan struct{}, max(limit, 1))
	for i := range n {
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(ctx, i); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	return first
}
