package assess

import (
	"errors"
	"strconv"
	"time"

	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/archname"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/report"
	"warcdedup/workdir"

	"warcdedup/dedup"
	"warcdedup/manifest"
	"warcdedup/policy"
)

// SampleBy is what a sample draws: files, or payload digests.
type SampleBy int

const (
	// SampleAuto draws files when the sample holds at least
	// MinFileSample of them (or all), digests otherwise.
	SampleAuto SampleBy = iota
	// SampleFiles reads a share of the files (FileSample): cheap in
	// reading, its range as wide as the files read are few and unalike.
	SampleFiles
	// SampleDigests hashes every file and proves and measures the
	// payloads of a share of the digest space (DigestSample): its range
	// rests on the number of payloads, not of files.
	SampleDigests
)

// MinFileSample is the fewest files a sample of files must read for
// SampleAuto to choose it. Below it, the spread between files decides the
// range: from 4 of 16 files of a generated 1 GB collection the 90% range
// of the bytes saved was 132 MB to 1.0 GB about an estimate of 579 MB
// (the truth 410 MB).
const MinFileSample = 30

// ParseSampleBy reads --sample-by: auto, files or digests.
func ParseSampleBy(s string) (SampleBy, error) {
	switch s {
	case "", "auto":
		return SampleAuto, nil
	case "files":
		return SampleFiles, nil
	case "digests":
		return SampleDigests, nil
	}
	return 0, fmt.Errorf("--sample-by %q: want auto, files or digests", s)
}

func (b SampleBy) String() string {
	return [...]string{"auto", "files", "digests"}[b]
}

// choose is the method a sample of percent of files draws.
func (b SampleBy) choose(files int, percent float64) SampleBy {
	if b != SampleAuto {
		return b
	}
	if n := SampleSize(files, percent); n >= MinFileSample || n == files {
		return SampleFiles
	}
	return SampleDigests
}

// Slice is the slice of the digest space a sample of payloads draws: a
// digest is in it when a 64-bit hash of the seed and the digest falls
// below the sampled share of the hash range, so that each payload class
// is in or out whatever files hold its copies, independently of the
// others, and the same for the same seed; and every payload whose record
// is AlwaysProven bytes long or more is in it (its inclusion probability
// 1): a few large payloads would otherwise make most of the range.
type Slice struct {
	p     float64
	limit uint64
	key   [8]byte
}

// AlwaysProven is the record length (the first of a digest's lines in
// by-digest.manifest) from which a payload is always in the slice.
const AlwaysProven = 1 << 20

// NewSlice returns the slice of percent of the digests drawn with seed.
func NewSlice(percent float64, seed uint64) *Slice {
	s := &Slice{p: min(percent/100, 1), limit: math.MaxUint64}
	if percent < 100 {
		s.limit = uint64(percent / 100 * math.Exp2(64))
	}
	binary.LittleEndian.PutUint64(s.key[:], seed)
	return s
}

// Keep says whether the digest, whose first line has that length, is in
// the slice.
func (s *Slice) Keep(digest []byte, length int64) bool {
	return length >= AlwaysProven || s.limit == math.MaxUint64 || sliceHash(s.key[:], digest) < s.limit
}

// Probability is the chance that a digest whose first line has that
// length is in the slice.
func (s *Slice) Probability(length int64) float64 {
	if length >= AlwaysProven {
		return 1
	}
	return s.p
}

// sliceHash is FNV-1a over key and d, finished by SplitMix64's mixer so
// that every bit of the digest moves the high bits the slice compares.
func sliceHash(key, d []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range key {
		h = (h ^ uint64(b)) * 1099511628211
	}
	for _, b := range d {
		h = (h ^ uint64(b)) * 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// DigestSample estimates what deduplicating a collection would find from
// a Poisson sample of its payload classes: every file hashed, so every
// capture of every payload is listed, and each digest, independently with
// probability p, proven byte for byte and its revisits built and
// measured (a dry run on the slice).
//
// The listing alone predicts each class's figures: its captures but the
// earliest (or one an existing revisit names) are duplicates, each saving
// its length less the revisit the RevisitModel gives it, nothing in an
// ARC file. What the listing cannot know (a hash collision, captures the
// replay policy keeps apart, the revisit's real length, one that would
// not be smaller) is the residual, measured on the slice. The estimate of
// a figure is the difference estimator
//
//	S = sum over all classes of pred + (1/p) sum over the slice of (actual - pred)
//
// unbiased for any prediction; its variance, (1-p)/p^2 times the sum over
// the slice of the squared residuals estimated without bias, depends on
// how far the prediction is off, not on how the copies spread over files
// or on a few large payloads, whose prediction is near exact.
type DigestSample struct {
	predicted, observed vec // sums over all classes, and over the slice
	residual            vec // over the slice: (actual - pred) / pi
	variance            vec // over the slice: (1 - pi) / pi^2 (actual - pred)^2
	variance2           vec // the squares of the terms of variance
	classes, sliced     int64
	// drawn and drawnIn count the digests drawn at random (pi < 1), and
	// those of them in the slice, whose figures' magnitudes sum to size.
	drawn, drawnIn int64
	size           vec
}

// Add adds one digest: its figures as the listing predicts them, the
// probability pi that it was in the slice, and, for a digest of the
// slice, its figures as the dry run measured them.
func (s *DigestSample) Add(pred vec, pi float64, inSlice bool, actual vec) {
	s.classes++
	s.predicted = s.predicted.add(pred)
	if pi < 1 {
		s.drawn++
	}
	if !inSlice {
		return
	}
	s.sliced++
	s.observed = s.observed.add(actual)
	if pi < 1 {
		s.drawnIn++
		for f := range nFigures {
			s.size[f] += math.Abs(actual[f])
		}
	}
	for f := range nFigures {
		r := actual[f] - pred[f]
		s.residual[f] += r / pi
		v := (1 - pi) / (pi * pi) * r * r
		s.variance[f] += v
		s.variance2[f] += v * v
	}
}

// Estimate returns each figure with its interval at the confidence level:
// plus or minus Student's t times the standard error, never below what
// the slice itself holds. The degrees of freedom are the effective number
// of the variance's terms, (sum v)^2 / sum v^2, less one: when a few
// payloads make most of the variance it rests on them, and the range
// widens accordingly. A slice in which the listing predicted few or no
// payloads wrongly says little of the payloads outside it: the range is
// at least what mispredicting them by as much as a payload of the slice
// holds would make, for as many as the slice allows at the confidence
// level (-ln(1-confidence) in every payload drawn, the rule of three at
// 95%). A slice of every digest has no range.
func (s *DigestSample) Estimate(confidence float64) [nFigures]Interval {
	var out [nFigures]Interval
	for f := range out {
		v := max(s.predicted[f]+s.residual[f], s.observed[f])
		df := 1
		if s.variance2[f] > 0 {
			df = max(int(s.variance[f]*s.variance[f]/s.variance2[f])-1, 1)
		}
		half := studentT(confidence, df) * math.Sqrt(s.variance[f])
		switch out := s.drawn - s.drawnIn; {
		case out == 0:
		case s.drawnIn == 0:
			half = max(half, v)
		default:
			rate := -math.Log(1-confidence) / float64(s.drawnIn)
			half = max(half, rate*float64(out)*s.size[f]/float64(s.drawnIn))
		}
		out[f] = Interval{Value: v, Low: max(v-half, s.observed[f]), High: v + half, Observed: s.observed[f]}
	}
	return out
}

// Classes is how many digests were added, and how many of them in the
// slice.
func (s *DigestSample) Classes() (all, sliced int64) { return s.classes, s.sliced }

// listingTotals are the responses of the whole listing.
type listingTotals struct {
	records, bytes int64
}

// estimateDigests feeds a DigestSample: the dry run's whole listing with
// each response's status and media type (before.manifest and
// facts.manifest, joined and sorted on digest as by-digest.manifest is:
// every capture, for the prediction), and what the dry run measured for
// the slice (its numbered manifest and revisits, through
// writeSampleRecords), joined digest by digest.
func estimateDigests(ctx context.Context, jobDir string, so syssort.Sorter, slice *Slice, pol policy.Policy) (*DigestSample, RevisitModel, listingTotals, error) {
	var tot listingTotals
	ds := &DigestSample{}
	records := filepath.Join(so.TempDir, "slice-records")
	sorted := records + "-by-digest"
	listing := filepath.Join(so.TempDir, "listing")
	listingSorted := listing + "-by-digest"
	for _, f := range []string{records, sorted, listing, listingSorted} {
		defer os.Remove(f)
	}
	fit, err := writeSampleRecords(jobDir, records)
	if err != nil {
		return nil, RevisitModel{}, tot, err
	}
	model := fit.model(DefaultRevisitModel)
	if err := so.Sort(ctx, "LC_ALL=C sort -k1,1", []string{records}, sorted); err != nil {
		return nil, RevisitModel{}, tot, err
	}
	if tot, err = writeListing(jobDir, listing); err != nil {
		return nil, RevisitModel{}, tot, err
	}
	if err := so.Sort(ctx, listingOrder, []string{listing}, listingSorted); err != nil {
		return nil, RevisitModel{}, tot, err
	}
	measured, err := newMeasuredReader(sorted)
	if err != nil {
		return nil, RevisitModel{}, tot, err
	}
	defer measured.close()
	f, err := os.Open(listingSorted)
	if err != nil {
		return nil, RevisitModel{}, tot, err
	}
	defer f.Close()
	var c predictedClass
	flush := func() error {
		if c.digest == "" {
			return nil
		}
		pred := c.predict(model, pol)
		var actual vec
		inSlice := slice.Keep([]byte(c.digest), c.firstLength)
		if inSlice {
			if actual, err = measured.take(c.digest); err != nil {
				return err
			}
		}
		ds.Add(pred, slice.Probability(c.firstLength), inSlice, actual)
		return nil
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l, err := parseListed(sc.Text())
		if err != nil {
			return nil, RevisitModel{}, tot, fmt.Errorf("%s: line %d: %w", listingSorted, n, err)
		}
		if n%(1<<16) == 0 && ctx.Err() != nil {
			return nil, RevisitModel{}, tot, ctx.Err()
		}
		if l.digest != c.digest {
			if err := flush(); err != nil {
				return nil, RevisitModel{}, tot, err
			}
			c.reset(l.digest, l.length)
		}
		c.add(l)
	}
	if err := sc.Err(); err != nil {
		return nil, RevisitModel{}, tot, err
	}
	if err := flush(); err != nil {
		return nil, RevisitModel{}, tot, err
	}
	if err := measured.end(); err != nil {
		return nil, RevisitModel{}, tot, err
	}
	return ds, model, tot, nil
}

// listed is a line of the joined listing: "digest ext date file offset
// length uri status mime refuri refdate", ext -1 on a revisit line (whose
// status and mime are "-"), 0 on a response (whose refuri and refdate
// are "-").
type listed struct {
	digest, date, file, uri, status, mime, refURI, refDate string
	revisit                                                bool
	offset, length                                         int64
}

// listingOrder sorts the joined listing as manifest.ByDigest sorts the
// manifest (digest, ext, date, file, offset): the first line of each
// digest, on whose length the slice was drawn, is the same.
const listingOrder = "LC_ALL=C sort -k1,1 -k2,2n -k3,3 -k4,4 -k5,5n"

// writeListing joins before.manifest and facts.manifest (one facts line
// per response, in the same order) into the listing's lines.
func writeListing(jobDir, out string) (listingTotals, error) {
	var tot listingTotals
	mf, err := gzfile.Open(filepath.Join(jobDir, workdir.BeforeFile))
	if err != nil {
		return tot, err
	}
	defer mf.Close()
	ff, err := gzfile.Open(filepath.Join(jobDir, workdir.FactsFile))
	if err != nil {
		return tot, err
	}
	defer ff.Close()
	facts := bufio.NewScanner(ff)
	facts.Buffer(make([]byte, 64<<10), 1<<20)
	o, err := os.Create(out)
	if err != nil {
		return tot, err
	}
	defer o.Close()
	w := bufio.NewWriterSize(o, 256<<10)
	in := manifest.NewReader(mf, workdir.BeforeFile)
	var b []byte
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return tot, err
		}
		if l.Digest == manifest.NoDigest {
			continue
		}
		b = append(b[:0], l.Digest...)
		if l.IsRevisit() {
			b = fmt.Appendf(b, " -1 %s %s %d %d %s - - %s %s\n", l.Date, l.File, l.Offset, l.Length, l.URI, l.RefURI, l.RefDate)
		} else {
			if !facts.Scan() {
				return tot, fmt.Errorf("%s ends before %s, at %s offset %d", workdir.FactsFile, workdir.BeforeFile, l.File, l.Offset)
			}
			f := strings.Fields(facts.Text())
			if len(f) != 4 || f[0] != l.File || f[1] != strconv.FormatInt(l.Offset, 10) {
				return tot, fmt.Errorf("%s line %q is not of %s offset %d", workdir.FactsFile, facts.Text(), l.File, l.Offset)
			}
			b = fmt.Appendf(b, " 0 %s %s %d %d %s %s %s - -\n", l.Date, l.File, l.Offset, l.Length, l.URI, f[2], f[3])
			tot.records++
			tot.bytes += l.Length
		}
		if _, err := w.Write(b); err != nil {
			return tot, err
		}
	}
	if err := facts.Err(); err != nil {
		return tot, err
	}
	if err := w.Flush(); err != nil {
		return tot, err
	}
	return tot, o.Close()
}

func parseListed(s string) (listed, error) {
	f := strings.Split(s, " ")
	if len(f) != 11 {
		return listed{}, fmt.Errorf("%d fields, want 11", len(f))
	}
	off, err1 := strconv.ParseInt(f[4], 10, 64)
	n, err2 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil {
		return listed{}, errors.New("offset or length is not a number")
	}
	return listed{digest: f[0], revisit: f[1] == "-1", date: f[2], file: f[3], offset: off, length: n, uri: f[6],
		status: f[7], mime: f[8], refURI: f[9], refDate: f[10]}, nil
}

// predictedClass gathers one digest's lines of the listing, in the order
// of the numbering (revisit lines first, then captures by date).
type predictedClass struct {
	digest      string
	firstLength int64           // of its first line: what the slice was drawn on
	pins        map[string]bool // URI and date (or URI and "*") existing revisits name
	lines       []listed
	kept        map[string]bool // the classes under the policy that kept a capture
}

func (c *predictedClass) reset(d string, length int64) {
	c.digest, c.firstLength = d, length
	clear(c.pins)
	c.lines = c.lines[:0]
}

func (c *predictedClass) add(l listed) {
	if l.revisit {
		if c.pins == nil {
			c.pins = map[string]bool{}
		}
		c.pins[l.refURI+" "+l.refDate] = true
		return
	}
	c.lines = append(c.lines, l)
}

// predict is what the listing says the digest's figures will be: its
// captures fall into classes as far as the policy can tell them apart by
// the listing (the URI under uri; ARC or WARC file, status and media type
// under replay, whose other headers are not listed), and every capture of
// a class but the first and those existing revisits name is a duplicate,
// saving its length less the model's revisit when that is smaller and the
// file no ARC file.
func (c *predictedClass) predict(model RevisitModel, pol policy.Policy) vec {
	var v vec
	if c.kept == nil {
		c.kept = map[string]bool{}
	}
	clear(c.kept)
	for i := range c.lines {
		l := &c.lines[i]
		key := ""
		switch pol {
		case policy.URI:
			key = l.uri
		case policy.Replay:
			key = fmt.Sprint(archname.IsARC(l.file), " ", l.status, " ", l.mime)
		}
		pinned := c.pins[l.uri+" "+l.date] || c.pins[l.uri+" *"]
		if !c.kept[key] || pinned {
			c.kept[key] = true
			continue
		}
		v[Duplicates]++
		if archname.IsARC(l.file) {
			continue
		}
		if s := l.length - model.Length(len(l.uri), strings.HasSuffix(strings.ToLower(l.file), ".gz")); s > 0 {
			v[BytesSaved] += float64(s)
		}
	}
	return v
}

// measuredReader reads the slice's records (writeSampleRecords' lines
// sorted on digest) digest by digest.
type measuredReader struct {
	f    *os.File
	sc   *bufio.Scanner
	name string
	line int
	cur  *sampleRecord
}

func newMeasuredReader(name string) (*measuredReader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	m := &measuredReader{f: f, sc: bufio.NewScanner(f), name: name}
	m.sc.Buffer(make([]byte, 64<<10), 1<<20)
	return m, m.advance()
}

func (m *measuredReader) advance() error {
	m.cur = nil
	if !m.sc.Scan() {
		return m.sc.Err()
	}
	m.line++
	r, err := parseSampleRecord(m.sc.Text())
	if err != nil {
		return fmt.Errorf("%s: line %d: %w", m.name, m.line, err)
	}
	m.cur = &r
	return nil
}

// take returns what the dry run measured for digest: its duplicates and
// the bytes their revisits would save. A record of a digest before it is
// one the listing does not have: the two files are not of one job.
func (m *measuredReader) take(digest string) (vec, error) {
	var v vec
	for m.cur != nil && m.cur.digest <= digest {
		if m.cur.digest < digest {
			return v, fmt.Errorf("%s: line %d: digest %s is not in the listing", m.name, m.line, m.cur.digest)
		}
		if m.cur.isDuplicate {
			v[Duplicates]++
		}
		if m.cur.revisit >= 0 {
			v[BytesSaved] += float64(m.cur.length - m.cur.revisit)
		}
		if err := m.advance(); err != nil {
			return v, err
		}
	}
	return v, nil
}

// end checks that every measured record was taken.
func (m *measuredReader) end() error {
	if m.cur != nil {
		return fmt.Errorf("%s: line %d: digest %s is not in the listing, or not in the slice", m.name, m.line, m.cur.digest)
	}
	return nil
}

func (m *measuredReader) close() { m.f.Close() }

// sampleDigests assesses a collection from a slice of its digests: the
// dry run of the whole job, every file hashed, on the slice's payloads
// from resolution on; then the estimate (DigestSample) from the whole
// listing and what the slice measured.
func sampleDigests(ctx context.Context, opt SampleOptions, files int, stored int64) (*Result, error) {
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	slice := NewSlice(opt.Percent, opt.Seed)
	job := opt.Job
	job.WorkDir = filepath.Join(opt.Dir, "job")
	job.DryRun = true
	job.Digests = &dedup.DigestSlice{Key: fmt.Sprintf("%v%% seed %d, from %d bytes all", opt.Percent, opt.Seed, AlwaysProven), Keep: slice.Keep}
	if job.Display != nil {
		job.Display.Note("warcdedup: assessing from %.3g%% of the payload digests (seed %d): every file hashed, the slice's payloads proven and measured", opt.Percent, opt.Seed)
	}
	res, err := dedup.Run(ctx, job)
	out := &Result{Dir: opt.Dir, Sample: res, By: SampleDigests}
	if err != nil {
		return out, err
	}
	start := time.Now()
	ds, model, tot, err := estimateDigests(ctx, job.WorkDir, syssort.Sorter{TempDir: filepath.Join(job.WorkDir, "tmp"),
		Memory: job.SortMemory, Parallel: job.Jobs}, slice, job.Policy)
	if err != nil {
		return out, fmt.Errorf("estimating from %s: %w", job.WorkDir, err)
	}
	out.Digests, out.Sliced = ds.Classes()
	out.Report = digestReport(res.Report, ds.Estimate(opt.Confidence), ds, opt, files, stored, tot, model)
	out.Report.Stages = append(out.Report.Stages, report.Stage{Name: "estimate", Took: time.Since(start)})
	return out, WriteReport(opt.Dir, out.Report)
}

// digestReport is the dry run's report of the slice made the estimate's.
func digestReport(dry *report.Report, est [nFigures]Interval, ds *DigestSample, opt SampleOptions, files int, stored int64, tot listingTotals, model RevisitModel) *report.Report {
	rep := *dry
	rep.Mode = "sample"
	rep.Title = "Assessment of " + strings.Join(dry.Collections, ", ") + " from a sample of its payloads"
	rep.Totals.Files, rep.Totals.StoredBytes = int64(files), stored
	all, sliced := ds.Classes()
	round := func(x float64) int64 { return int64(math.Round(x)) }
	rep.Estimate = &report.Estimate{
		Method: fmt.Sprintf("Every file was hashed (%s responses, %s payload digests); the payloads of %.3g%% of the digests, drawn by "+
			"a hash of each digest (seed %d), and every payload of %s or more (%s digests in all) were proven byte for byte and their "+
			"revisits built and measured in a dry run. The listing, with each response's status and media type, predicts each "+
			"payload's duplicates and savings (its captures but the earliest of each kind, each its length less a modelled revisit); "+
			"the estimate adds to the prediction the slice's measured difference from it, scaled up (a difference estimator over "+
			"a random sample of payloads), and the range is %.0f%% Student's t limits of its standard error. It rests on the number "+
			"of payloads sampled, not of files.",
			progress.Count(tot.records), progress.Count(all), opt.Percent, opt.Seed, progress.Bytes(AlwaysProven), progress.Count(sliced), 100*opt.Confidence),
		BytesSaved: round(est[BytesSaved].Value), BytesSavedLow: round(est[BytesSaved].Low), BytesSavedHigh: round(est[BytesSaved].High),
		Duplicates: round(est[Duplicates].Value), DuplicatesLow: round(est[Duplicates].Low), DuplicatesHigh: round(est[Duplicates].High),
		Confidence: opt.Confidence,
		Records:    tot.records,
	}
	rep.Caveats = append(rep.Caveats[:len(rep.Caveats):len(rep.Caveats)],
		fmt.Sprintf("Estimated from %s of %s payload digests: every file was read, but the counts, breakdowns and largest classes below are of the payloads of the slice.",
			progress.Count(sliced), progress.Count(all)),
		fmt.Sprintf("Payloads outside the slice were not compared byte for byte: their duplicates are those of the listing, their revisits' length modelled (%s), corrected by what the slice measured.", model))
	return &rep
}
