package assess

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"warcdedup/archname"
	"warcdedup/dedup"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/stage"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// SampleOptions are those of an assessment from a random sample of a
// collection's files.
type SampleOptions struct {
	// Job is the dry run's options: collections, digest, policy, jobs,
	// sort memory, display. Its WorkDir, DryRun and Files are set here.
	Job dedup.Options
	// Dir is the assessment's directory: stats.json and report.html of
	// the estimate, and job/, the dry run's work directory.
	Dir        string
	Percent    float64 // of the files to read (of the digests), above 0, at most 100
	Seed       uint64  // of the draw: the same files (digests) for the same seed
	Confidence float64 // of the interval; 0 for 0.95
	By         SampleBy
}

// Result is an assessment's report and where it was written.
type Result struct {
	Report *report.Report
	Dir    string
	// Sample is the dry run on the sample (sample mode only).
	Sample *stage.Result
	// By is what the sample drew: files or digests; with digests,
	// Digests and Sliced count the payload digests listed and those of
	// the slice.
	By              SampleBy
	Digests, Sliced int64
}

// SampleSize is how many of files a sample of percent reads: at least two
// (one file gives no range), at most all.
func SampleSize(files int, percent float64) int {
	n := int(math.Round(percent / 100 * float64(files)))
	return min(max(n, 2), files)
}

// ChooseFiles draws a simple random sample of the inputs (SampleSize of
// them), the same for the same names, percent and seed, in name order.
func ChooseFiles(inputs []warcsum.Input, percent float64, seed uint64) []warcsum.Input {
	all := slices.Clone(inputs)
	slices.SortFunc(all, func(a, b warcsum.Input) int { return strings.Compare(a.Name, b.Name) })
	rng := rand.New(rand.NewPCG(seed, 0x77617263646564))
	perm := rng.Perm(len(all))
	chosen := make([]warcsum.Input, SampleSize(len(all), percent))
	for i := range chosen {
		chosen[i] = all[perm[i]]
	}
	slices.SortFunc(chosen, func(a, b warcsum.Input) int { return strings.Compare(a.Name, b.Name) })
	return chosen
}

// Sample assesses a collection from a random sample of its files: a dry
// run of the whole job on the files drawn (hashing, byte-for-byte
// resolution, revisits built and measured but not written), then the
// estimate for the whole collection with its interval (FileSample). The
// report of the estimate, written into Dir, keeps the dry run's
// breakdowns, which count what was read.
func Sample(ctx context.Context, opt SampleOptions) (*Result, error) {
	if !(opt.Percent > 0 && opt.Percent <= 100) {
		return nil, fmt.Errorf("a sample of %v%% of the files: want more than 0 and at most 100", opt.Percent)
	}
	if opt.Confidence == 0 {
		opt.Confidence = 0.95
	}
	if len(opt.Job.Collections) == 0 {
		return nil, errors.New("no collection given")
	}
	// As the run lists them: WARC members of WACZ packages too, and the
	// packages of WACZ files or a multi-WACZ JSON named.
	inputs, err := dedup.ListInputs(opt.Job)
	if err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		return nil, fmt.Errorf("no WARC or ARC file, nor WACZ package, found in %s", strings.Join(opt.Job.Collections, ", "))
	}
	var stored int64
	for _, in := range inputs {
		stored += in.Size
	}
	if opt.By = opt.By.choose(len(inputs), opt.Percent); opt.By == SampleDigests {
		return sampleDigests(ctx, opt, len(inputs), stored)
	}
	chosen := ChooseFiles(inputs, opt.Percent, opt.Seed)
	files := map[string]bool{}
	for _, in := range chosen {
		files[in.Name] = true
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	job := opt.Job
	job.WorkDir = filepath.Join(opt.Dir, "job")
	job.DryRun = true
	job.Files = files
	show := job.Display
	if show != nil {
		show.Note("warcdedup: assessing from a sample of %d of %d files (%.3g%%, seed %d)", len(chosen), len(inputs), opt.Percent, opt.Seed)
	}
	res, err := dedup.Run(ctx, job)
	out := &Result{Dir: opt.Dir, Sample: res, By: SampleFiles}
	if err != nil {
		return out, err
	}
	start := time.Now()
	est, model, err := estimateSample(ctx, job.WorkDir, syssort.Sorter{TempDir: filepath.Join(job.WorkDir, "tmp"),
		Memory: job.SortMemory, Parallel: job.Jobs}, len(chosen), len(inputs))
	if err != nil {
		return out, fmt.Errorf("estimating from %s: %w", job.WorkDir, err)
	}
	out.Report = sampleReport(res.Report, est.Estimate(opt.Confidence), est, opt, len(chosen), len(inputs), stored, model)
	out.Report.Stages = append(out.Report.Stages, report.Stage{Name: "estimate", Took: time.Since(start)})
	return out, WriteReport(opt.Dir, out.Report)
}

// sampleReport is the dry run's report of the sample made the estimate's.
func sampleReport(dry *report.Report, est [nFigures]Interval, fs *FileSample, opt SampleOptions, n, files int, stored int64, model RevisitModel) *report.Report {
	rep := *dry
	rep.Mode = "sample"
	rep.Title = "Assessment of " + strings.Join(dry.Collections, ", ") + " from a sample of its files"
	read := dry.Totals.StoredBytes
	rep.Totals.Files, rep.Totals.StoredBytes = int64(files), stored
	round := func(x float64) int64 { return int64(math.Round(x)) }
	records := int64(0)
	if n > 0 {
		records = round(float64(dry.Totals.Records) * float64(files) / float64(n))
	}
	rep.Estimate = &report.Estimate{
		Method: fmt.Sprintf("%s of the %s files were drawn at random (%.3g%%, seed %d) and deduplicated in a dry run. "+
			"Duplicates within those files count as found; those of the files not read are estimated from how the payloads "+
			"found spread over the files read (Good-Toulmin's series over the payloads found in 1, 2, 3... files, smoothed; "+
			"see the assess package). The range spans the series kept whole to its first and to its second term, which err "+
			"in opposite directions, each with %.0f%% delete-one-file jackknife limits; it is never below what the files "+
			"read hold. On simulated collections the estimate came within 1%% of the truth on average from samples of 20%%, "+
			"and up to 30%% over it from samples of 5%% when payloads repeat across many files.",
			progress.Count(int64(n)), progress.Count(int64(files)), opt.Percent, opt.Seed, 100*opt.Confidence),
		SampledFiles: int64(n), SampledBytes: read,
		BytesSaved: round(est[BytesSaved].Value), BytesSavedLow: round(est[BytesSaved].Low), BytesSavedHigh: round(est[BytesSaved].High),
		Duplicates: round(est[Duplicates].Value), DuplicatesLow: round(est[Duplicates].Low), DuplicatesHigh: round(est[Duplicates].High),
		Confidence: opt.Confidence,
		Records:    records,
	}
	rep.Caveats = append(slices.Clip(dry.Caveats),
		fmt.Sprintf("Estimated from %s of %s files: the counts, breakdowns and largest classes below are of the files read.",
			progress.Count(int64(n)), progress.Count(int64(files))),
		"The figures of the files not read are estimated, not measured: a payload whose copies all lie in files not read is not seen, "+
			"and one seen in a single file read may have copies in others; how many is inferred from the payloads seen in two or more.",
		fmt.Sprintf("The revisits that the originals found would become were not built: their length is taken from the revisits that were (%s).", model))
	if n < files && n < 10 {
		rep.Caveats = append(rep.Caveats, fmt.Sprintf("Only %d files were read: the range rests on few of them.", n))
	}
	return &rep
}

// estimateSample feeds a FileSample from the dry run's work files: the
// numbered manifest in file order and the revisits it measured.
func estimateSample(ctx context.Context, jobDir string, so syssort.Sorter, n, files int) (*FileSample, RevisitModel, error) {
	fs, err := NewFileSample(files, n)
	if err != nil {
		return nil, RevisitModel{}, err
	}
	records := filepath.Join(so.TempDir, "sample-records")
	sorted := records + "-by-class"
	defer os.Remove(records)
	defer os.Remove(sorted)
	fit, err := writeSampleRecords(jobDir, records)
	if err != nil {
		return nil, RevisitModel{}, err
	}
	model := fit.model(DefaultRevisitModel)
	if err := so.Sort(ctx, "LC_ALL=C sort -k1,1 -k2,2n -k3,3n", []string{records}, sorted); err != nil {
		return nil, RevisitModel{}, err
	}
	f, err := os.Open(sorted)
	if err != nil {
		return nil, RevisitModel{}, err
	}
	defer f.Close()
	var c sampleClass
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		r, err := parseSampleRecord(sc.Text())
		if err != nil {
			return nil, RevisitModel{}, fmt.Errorf("%s: line %d: %w", sorted, line, err)
		}
		if r.file >= n {
			return nil, RevisitModel{}, fmt.Errorf("%s: line %d: file %d of a sample of %d", sorted, line, r.file, n)
		}
		if r.digest != c.digest || r.ext != c.ext {
			c.flush(fs, model)
			c.digest, c.ext = r.digest, r.ext
		}
		c.add(r)
	}
	if err := sc.Err(); err != nil {
		return nil, RevisitModel{}, err
	}
	c.flush(fs, model)
	return fs, model, nil
}

// sampleRecord is one response of the sample, as the class pass needs it.
type sampleRecord struct {
	digest      string
	ext, copy   int
	file        int   // index in the sample, in file order
	revisit     int64 // length of its revisit as the dry run built it; -1 for none
	length      int64
	uriLen      int
	gzip, arc   bool
	isDuplicate bool
}

// writeSampleRecords joins the dry run's numbered manifest (in file
// order) with the revisits it measured (saved.tsv, in the same order)
// into one line per response, and fits the revisit model to them.
func writeSampleRecords(jobDir, out string) (*revisitFit, error) {
	byFile := filepath.Join(jobDir, workdir.ByFileFile)
	mf, err := os.Open(byFile)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	saved, err := stage.OpenSaved(filepath.Join(jobDir, workdir.SavedFile))
	if err != nil {
		return nil, err
	}
	defer saved.Close()
	o, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	w := bufio.NewWriterSize(o, 256<<10)
	fit := &revisitFit{}
	in := manifest.NewReader(mf, byFile)
	files := -1
	last := ""
	var b []byte
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if l.IsRevisit() {
			continue
		}
		if l.File != last {
			files++
			last = l.File
		}
		name := strings.ToLower(l.File)
		gzip, arc := strings.HasSuffix(name, ".gz"), archname.IsARC(name)
		revisit, err := saved.Find(l.File, l.Offset)
		if err != nil {
			return nil, err
		}
		if revisit >= 0 {
			fit.add(len(l.URI), gzip, revisit)
		}
		b = append(b[:0], l.Digest...)
		b = fmt.Appendf(b, " %d %d %d %d %d %d %s\n", l.Class, l.Copy, files, revisit, l.Length, len(l.URI), flags(gzip, arc))
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return fit, o.Close()
}

func flags(gzip, arc bool) string {
	return string([]byte{"-g"[b2i(gzip)], "-a"[b2i(arc)]})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func parseSampleRecord(s string) (sampleRecord, error) {
	f := strings.Split(s, " ")
	if len(f) != 8 || len(f[7]) != 2 {
		return sampleRecord{}, fmt.Errorf("%d fields, want 8", len(f))
	}
	var n [6]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return sampleRecord{}, err
		}
		n[i] = v
	}
	return sampleRecord{digest: f[0], ext: int(n[0]), copy: int(n[1]), file: int(n[2]), revisit: n[3], length: n[4],
		uriLen: int(n[5]), gzip: f[7][0] == 'g', arc: f[7][1] == 'a', isDuplicate: n[1] > 1}, nil
}

// sampleClass gathers one payload class of the sample.
type sampleClass struct {
	digest string
	ext    int
	first  *sampleRecord
	parts  []Part
	// Revisits the dry run built for the class, by kind of file: their
	// mean is the best guess for the first copy's.
	revisits [2]struct{ n, sum int64 }
}

func (c *sampleClass) add(r sampleRecord) {
	switch {
	case c.first == nil:
		// Copy 1 sorts first; a class without one (its line was stale)
		// takes its earliest copy read.
		c.first = &r
	case r.copy == 1:
		// Another copy kept: one an existing revisit refers to, kept as
		// it is in the whole collection too. It is no candidate.
		return
	}
	saving := int64(0)
	switch {
	case r.revisit >= 0:
		saving = r.length - r.revisit
		k := &c.revisits[b2i(r.gzip)]
		k.n++
		k.sum += r.revisit
	case !r.isDuplicate && !r.arc:
		saving = -1 // the first copy's, known at the end of the class
	}
	i := len(c.parts) - 1
	if i < 0 || c.parts[i].File != r.file {
		// The class's records come in copy order, not file order.
		i = slices.IndexFunc(c.parts, func(p Part) bool { return p.File == r.file })
		if i < 0 {
			c.parts = append(c.parts, Part{File: r.file})
			i = len(c.parts) - 1
		}
	}
	c.parts[i].Copies++
	if saving > 0 {
		c.parts[i].Saving += saving
	}
}

// flush adds the class to fs, with its first copy's saving: its length
// less the revisit it would get, the mean of those built for its copies in
// the same kind of file or else the model's, and nothing when that is not
// smaller or the file is an ARC file.
func (c *sampleClass) flush(fs *FileSample, model RevisitModel) {
	if c.first == nil {
		return
	}
	r := c.first
	var first int64
	if !r.isDuplicate && !r.arc {
		revisit := model.Length(r.uriLen, r.gzip)
		if k := c.revisits[b2i(r.gzip)]; k.n > 0 {
			revisit = k.sum / k.n
		}
		first = max(r.length-revisit, 0)
		for i := range c.parts {
			if c.parts[i].File == r.file {
				c.parts[i].Saving += first
			}
		}
	} else if r.revisit >= 0 {
		first = r.length - r.revisit
	}
	slices.SortFunc(c.parts, func(a, b Part) int { return a.File - b.File })
	fs.AddClass(first, c.parts)
	c.first = nil
	c.parts = c.parts[:0]
	c.revisits = [2]struct{ n, sum int64 }{}
}
