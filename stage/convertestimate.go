package stage

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"warcdedup/archname"
	"warcdedup/atomicfile"
	"warcdedup/convert"
	"warcdedup/gzmulti"
	"warcdedup/internal/ordered"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/refs"
	"warcdedup/report"
	"warcdedup/revisit"
	"warcdedup/warcsum"
)

// EstimateConversion is what converting the ARC files to WARC first would
// do to a dry run (assess --convert-arc, run --convert-arc --dry-run),
// converting nothing and writing nothing in the collection. It reads each
// ARC file record by record and gives the dry run's work files as the
// converted collection's would be: each ARC record's length that of the
// WARC record it would become, and each duplicate in an ARC file the
// revisit it would become in the WARC, with its length. The account then
// adds those up as it adds up a run on WARC files.
//
// How the sizes are known: every duplicate's record (and the filedesc,
// and one in Every of the other records) is converted in memory, as
// package convert converts it, gzip member and all, and measured; a
// duplicate's revisit is built from that WARC record as the rewrite
// builds it (revisit.Revisit) and compressed as the rewrite compresses it.
// The other records are estimated from those measured in their file: in
// an .arc.gz, the record's gzip member plus the mean difference between
// the WARC and the ARC members measured; in a plain .arc, its length times
// the ratio of the WARC bytes measured to their ARC bytes (the WARC is
// compressed). So the bytes saved are measured record by record (within a
// few bytes per record: the random record IDs a conversion writes
// compress each a little differently), and the WARC sizes are estimated,
// exact with Every 1.
//
// Which copy of a payload is kept may differ after a real conversion
// (the files get new names, and copies are ordered by date, then file),
// and a file that would be left as ARC is told only by what can be seen
// without proving a conversion (damage, no ARC records, its WARC name
// taken): both change the bytes saved by a little.
type EstimateConversion struct {
	ByFile string // the dry run's numbered manifest, on file
	Saved  string // its saved.tsv
	// ARCs are the collection's ARC files, named as its listing names
	// them; Root is the collection's directory, below which each is
	// named in its WARC's warcinfo record.
	ARCs []warcsum.Input
	Root string
	// Every: one in Every of the records that are neither duplicates nor
	// filedesc are converted and measured; 1 for every one, 0 for
	// DefaultEvery.
	Every    int
	Jobs     int
	Software string // as the conversion would name itself in warcinfo
	// ByFileOut and SavedOut are ByFile and Saved as the converted
	// collection's would be, whole or not at all.
	ByFileOut, SavedOut string
	Messages            Messages
	Meter               progress.Meter
}

// DefaultEvery is how many records an estimate takes one from to measure,
// beside every duplicate: converting is most of an estimate's cost.
const DefaultEvery = 16

// EstimateResult is what an EstimateConversion found.
type EstimateResult struct {
	Conversion report.Conversion `json:"conversion"`
	// Revisits are the duplicates of ARC files that would become
	// revisits, BytesSaved what they would save.
	Revisits   int64 `json:"revisits"`
	BytesSaved int64 `json:"bytes_saved"`
	// Files are the files that would hold a revisit, WARC files and
	// converted ARC files alike (the dry run counts only the former).
	Files int64 `json:"files"`
	// Measured are the records converted in memory, Modelled those whose
	// WARC size was estimated from them.
	Measured int64 `json:"measured"`
	Modelled int64 `json:"modelled"`
	// Unplaced counts the listing's lines of ARC files at an offset where
	// no record was read (their length left as it was).
	Unplaced int64 `json:"unplaced,omitempty"`
}

// Method says how the estimate was made, for the report.
func (e *EstimateResult) Method(every int) string {
	if every <= 0 {
		every = DefaultEvery
	}
	return fmt.Sprintf("Estimated, nothing converted: each duplicate in an ARC file (%s) was converted in memory and its revisit built and measured as a run would write them, so the bytes saved are measured record by record (to within a few bytes a record: the random record IDs a conversion writes compress a little differently); the WARC sizes are from %s records measured (every duplicate, filedesc and one record in %d), the others estimated from those of their file.",
		progress.Count(e.Revisits), progress.Count(e.Measured), every)
}

// Note says what the estimate found, for the report's stage.
func (e *EstimateResult) Note() string {
	c := &e.Conversion
	return fmt.Sprintf("%s ARC files, %s would become %s of WARC; %s of their duplicates would become revisits, saving %s; %s records measured, %s estimated",
		progress.Count(c.ARCFiles), progress.Bytes(c.ARCBytes), progress.Bytes(c.WARCBytes), progress.Count(e.Revisits),
		progress.Bytes(e.BytesSaved), progress.Count(e.Measured), progress.Count(e.Modelled))
}

// estimated is one file of the listing, in order: an ARC file to estimate
// (path set), or another file whose lines pass through.
type estimated struct {
	file  string // as manifest field 1
	path  string // "" for a file that is not an ARC file
	size  int64
	lines []manifest.Line
	done  chan struct{}

	// What the estimate found: each line's WARC length and revisit
	// length (-1: none), the WARC file's size, or why it would be left.
	length, revisit []int64
	warcSize        int64
	records         int64
	measured        int64
	modelled        int64
	unplaced        int64
	left            string
	err             error
}

func (t *estimated) Abandon(err error) {
	t.err = err
	close(t.done)
}

// Run estimates.
func (e *EstimateConversion) Run(ctx context.Context) (EstimateResult, error) {
	every := e.Every
	if every <= 0 {
		every = DefaultEvery
	}
	arcs := slices.Clone(e.ARCs)
	for i := range arcs {
		arcs[i].Name = manifest.EscapeFile(arcs[i].Name)
	}
	slices.SortFunc(arcs, func(a, b warcsum.Input) int { return strings.Compare(a.Name, b.Name) })
	var total int64
	for _, a := range arcs {
		total += a.Size
	}
	in, err := os.Open(e.ByFile)
	if err != nil {
		return EstimateResult{}, err
	}
	defer in.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := max(e.Jobs, 1)
	q := ordered.New[*estimated](2 * jobs)
	var read atomic.Int64
	e.Meter.Begin("bytes", total)
	stop := progress.Follow(&read, e.Meter)
	defer stop()
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := &measurer{every: every, software: e.Software, root: e.Root}
			for t := range q.Work() {
				if t.path != "" && ctx.Err() == nil {
					m.file(t)
					read.Add(t.size)
				}
				close(t.done)
			}
		}()
	}
	dispatched := make(chan error, 1)
	go func() {
		dispatched <- e.dispatch(ctx, q, manifest.NewReader(in, e.ByFile), arcs)
		q.Close()
	}()
	res, werr := e.write(ctx, q)
	if werr != nil {
		// The dispatcher stops, and may wait for room the writer no
		// longer frees.
		cancel()
		go func() {
			for range q.Results() {
				q.Release()
			}
		}()
	}
	derr := <-dispatched
	wg.Wait()
	if werr != nil {
		return res, werr
	}
	if derr != nil {
		return res, derr
	}
	return res, ctx.Err()
}

// dispatch reads the listing on file, a file's lines at a time, and
// queues each file, with the ARC files that have no line there in their
// place.
func (e *EstimateConversion) dispatch(ctx context.Context, q *ordered.Queue[*estimated], in *manifest.Reader, arcs []warcsum.Input) error {
	add := func(t *estimated) error {
		t.done = make(chan struct{})
		for len(arcs) > 0 && arcs[0].Name < t.file {
			a := &estimated{file: arcs[0].Name, path: arcs[0].Path, size: arcs[0].Size, done: make(chan struct{})}
			arcs = arcs[1:]
			if err := q.Add(ctx, a); err != nil {
				return err
			}
		}
		if len(arcs) > 0 && arcs[0].Name == t.file {
			t.path, t.size = arcs[0].Path, arcs[0].Size
			arcs = arcs[1:]
		}
		return q.Add(ctx, t)
	}
	var cur *estimated
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if cur != nil && l.File != cur.file {
			if err := add(cur); err != nil {
				return err
			}
			cur = nil
		}
		if cur == nil {
			cur = &estimated{file: l.File}
		}
		cur.lines = append(cur.lines, l)
	}
	if cur != nil {
		if err := add(cur); err != nil {
			return err
		}
	}
	for _, a := range arcs {
		if err := q.Add(ctx, &estimated{file: a.Name, path: a.Path, size: a.Size, done: make(chan struct{})}); err != nil {
			return err
		}
	}
	return nil
}

// write takes the files in order and writes the listing and saved.tsv as
// the converted collection's would be.
func (e *EstimateConversion) write(ctx context.Context, q *ordered.Queue[*estimated]) (EstimateResult, error) {
	res := EstimateResult{Conversion: report.Conversion{Estimated: true}}
	byFile, err := atomicfile.Create(e.ByFileOut, 0o644)
	if err != nil {
		return res, err
	}
	defer byFile.Abort()
	mw := manifest.NewWriter(byFile)
	saved, err := atomicfile.Create(e.SavedOut, 0o644)
	if err != nil {
		return res, err
	}
	defer saved.Abort()
	sw := newSavedWriter(saved)
	dry, err := OpenSaved(e.Saved)
	if err != nil {
		return res, err
	}
	defer dry.Close()
	next, nerr := dry.Next()
	cv := &res.Conversion
	for t := range q.Results() {
		<-t.done
		q.Release()
		if t.err != nil {
			return res, t.err
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		// The dry run's revisits of the file: those of WARC files.
		revisits := false
		for nerr == nil && next.File == t.file {
			sw.writeSaved(next)
			revisits = true
			next, nerr = dry.Next()
		}
		if nerr != nil && nerr != io.EOF {
			return res, nerr
		}
		if t.path != "" {
			cv.ARCFiles++
			if t.left != "" {
				cv.Left++
				if len(cv.Why) < KeepFirst {
					name, _ := manifest.UnescapeFile(t.file)
					cv.Why = append(cv.Why, name+": "+t.left)
				}
				e.Messages.Note("%s: would be left as ARC: %s", t.file, t.left)
				t.length, t.revisit = nil, nil
			} else {
				cv.Converted++
				cv.ARCBytes += t.size
				cv.WARCBytes += t.warcSize
				cv.Records += t.records
				res.Measured += t.measured
				res.Modelled += t.modelled
				res.Unplaced += t.unplaced
			}
		}
		for i := range t.lines {
			l := &t.lines[i]
			if t.length != nil && t.length[i] >= 0 {
				if t.revisit[i] >= 0 {
					sw.write(&manifest.Line{File: l.File, Offset: l.Offset, Length: t.length[i]}, t.revisit[i])
					revisits = true
					res.Revisits++
					res.BytesSaved += t.length[i] - t.revisit[i]
				}
				l.Length = t.length[i]
			}
			if err := mw.Write(l); err != nil {
				return res, err
			}
		}
		if revisits {
			res.Files++
		}
	}
	if nerr == nil {
		return res, fmt.Errorf("%s: %s offset %d: no line of the listing %s is of that record", e.Saved, next.File, next.Offset, e.ByFile)
	}
	if err := mw.Flush(); err != nil {
		return res, err
	}
	if err := sw.w.Flush(); err != nil {
		return res, err
	}
	if err := byFile.CommitRenamed(); err != nil {
		return res, err
	}
	return res, saved.CommitRenamed()
}

// writeSaved writes a line of saved.tsv as read, as the rewrite writes
// it (tab-separated: this wrote spaces, the form of older work
// directories, which SavedReader reads too).
func (s *savedWriter) writeSaved(sv Saved) {
	s.write(&manifest.Line{File: sv.File, Offset: sv.Offset, Length: sv.Length}, sv.RevisitLength)
}

// measurer converts records of ARC files in memory and measures them.
type measurer struct {
	every    int
	software string
	root     string
	out      bytes.Buffer
	// zw measures a revisit's gzip member as the rewrite writes it (to
	// nowhere: only its length is wanted).
	zw *gzmulti.Writer
	rr *record.Reader
}

// arcRecord is one record of an ARC file: where it is, and its WARC
// record's length once measured or estimated (-1 before).
type arcRecord struct {
	offset, length, warc int64
}

// file estimates one ARC file: its records found, the filedesc, each
// duplicate and one record in every converted and measured (measure),
// the others estimated from those (model), and each line of the file
// given its record's WARC length (place).
func (m *measurer) file(t *estimated) {
	f, err := os.Open(t.path)
	if err != nil {
		t.err = err
		return
	}
	defer f.Close()
	warcName := convert.OutputName(filepath.Base(t.path), false)
	if _, err := os.Lstat(filepath.Join(filepath.Dir(t.path), warcName)); err == nil {
		t.left = fmt.Sprintf("its WARC name %s is taken: a run adopts that file if it proves to be this ARC's conversion (and retires the ARC), else leaves both; not estimated", warcName)
		return
	}
	recs, gz, left, err := m.records(f, t.file)
	if err != nil {
		t.err = err
		return
	}
	if left != "" {
		t.left = left
		return
	}
	t.records = int64(len(recs))
	sample, ok := m.measure(t, f, recs)
	if !ok {
		return
	}
	t.warcSize = sample.warcinfo + sample.model(recs, gz, &t.modelled)
	t.place(recs)
}

// measured adds up the records measured beside the filedesc, and has
// the length of the WARC file's warcinfo record.
type measured struct {
	diff, arc, warc, n int64
	warcinfo           int64
}

// measure converts the filedesc, each duplicate (with its revisit) and
// one record in every, and notes each one's WARC length in recs and the
// revisits' lengths in t. False
// if the file would not be converted (t.left) or could not be read
// (t.err).
func (m *measurer) measure(t *estimated, f *os.File, recs []arcRecord) (measured, bool) {
	var sample measured
	fd := make([]byte, recs[0].length)
	if _, err := f.ReadAt(fd, recs[0].offset); err != nil {
		t.err = fmt.Errorf("%s: %w", t.path, err)
		return sample, false
	}
	dups := map[int64]int{}
	for i := range t.lines {
		if l := &t.lines[i]; l.IsDuplicate() {
			dups[l.Offset] = i
		}
	}
	t.revisit = make([]int64, len(t.lines))
	for i := range t.revisit {
		t.revisit[i] = -1
	}
	name := filepath.Base(t.path)
	if rel, err := filepath.Rel(m.root, t.path); err == nil && m.root != "" {
		name = filepath.ToSlash(rel)
	}
	info, fdWARC, _, err := m.convert(fd, nil, name)
	if err != nil {
		t.left = fmt.Sprintf("it could not be converted: %v", err)
		return sample, false
	}
	sample.warcinfo = info
	recs[0].warc = fdWARC
	t.measured++
	var raw []byte
	for k := 1; k < len(recs); k++ {
		r := &recs[k]
		line, dup := dups[r.offset]
		if !dup && k%m.every != 1%m.every {
			continue
		}
		raw = slices.Grow(raw[:0], int(r.length))[:r.length]
		if _, err := f.ReadAt(raw, r.offset); err != nil {
			t.err = fmt.Errorf("%s: %w", t.path, err)
			return sample, false
		}
		_, _, w, err := m.convert(fd, raw, name)
		if err == nil && dup {
			l := &t.lines[line]
			t.revisit[line], err = m.revisit(&revisitOf{uri: l.RefURI, date: l.RefDate})
		}
		if err != nil {
			t.left = fmt.Sprintf("its record at offset %d could not be converted: %v", r.offset, err)
			return sample, false
		}
		r.warc = w
		t.measured++
		sample.diff += w - r.length
		sample.arc += r.length
		sample.warc += w
		sample.n++
	}
	return sample, true
}

// model estimates the WARC length of each record not measured from those
// measured: in an .arc.gz, its member plus their mean difference; in a
// plain .arc, its length times their ratio. It counts them in modelled
// and returns the WARC lengths of all the records.
func (s measured) model(recs []arcRecord, gz bool, modelled *int64) int64 {
	var size int64
	for k := range recs {
		r := &recs[k]
		if r.warc < 0 {
			switch {
			case s.n == 0:
				r.warc = r.length
			case gz:
				r.warc = r.length + (s.diff+s.n/2)/s.n
			default:
				r.warc = (r.length*s.warc + s.arc/2) / s.arc
			}
			*modelled++
		}
		size += r.warc
	}
	return size
}

// place gives each line of the file its record's WARC length (-1 and
// counted as unplaced when no record starts at its offset), and keeps a
// duplicate's revisit length only where the revisit is smaller.
func (t *estimated) place(recs []arcRecord) {
	t.length = make([]int64, len(t.lines))
	for i := range t.lines {
		k, found := slices.BinarySearchFunc(recs, t.lines[i].Offset, func(r arcRecord, off int64) int {
			return cmp.Compare(r.offset, off)
		})
		t.length[i] = -1
		if !found {
			t.unplaced++
			t.revisit[i] = -1
			continue
		}
		t.length[i] = recs[k].warc
		if t.revisit[i] >= t.length[i] {
			// Not smaller: the rewrite leaves such a duplicate as it is.
			t.revisit[i] = -1
		}
	}
}

// records reads where each record of an ARC file is; left says why the
// file would not be converted (damage, no ARC), gz whether it is gzip.
func (m *measurer) records(f *os.File, name string) (recs []arcRecord, gz bool, left string, err error) {
	if m.rr, err = record.Reuse(m.rr, f, name); err != nil {
		return nil, false, "", err
	}
	gz = m.rr.Compressed()
	for {
		r, err := m.rr.Next()
		if err == io.EOF {
			break
		}
		var damage *record.Error
		if errors.As(err, &damage) {
			return nil, gz, fmt.Sprintf("damaged: %v", err), nil
		}
		if err != nil {
			return nil, gz, "", err
		}
		if r.Format != record.ARC {
			return nil, gz, fmt.Sprintf("not ARC: it holds %s records", r.Format), nil
		}
		off := r.Offset
		if err := m.rr.Finish(); err != nil {
			if errors.As(err, &damage) {
				return nil, gz, fmt.Sprintf("damaged: %v", err), nil
			}
			return nil, gz, "", err
		}
		recs = append(recs, arcRecord{offset: off, length: r.Length, warc: -1})
	}
	if len(recs) == 0 {
		return nil, gz, "not ARC: no ARC record could be read", nil
	}
	return recs, gz, "", nil
}

// revisitOf is the original a duplicate's revisit would refer to.
type revisitOf struct{ uri, date string }

// convert converts the ARC made of the filedesc fd and the record raw
// (none: the filedesc alone) in memory, as package convert converts a
// file, and returns the lengths of the WARC's first members: warcinfo,
// the filedesc's metadata, and raw's record. m.out keeps the WARC.
func (m *measurer) convert(fd, raw []byte, name string) (info, meta, rec int64, err error) {
	m.out.Reset()
	src := io.MultiReader(bytes.NewReader(fd), bytes.NewReader(raw))
	var damage []string
	opt := convert.Options{Version: "1.0", Software: m.software, Damage: func(err error) { damage = append(damage, err.Error()) }}
	st, err := convert.Convert(src, name, path.Base(convert.OutputName(name, false)), &m.out, opt)
	if err != nil {
		return 0, 0, 0, err
	}
	if len(damage) > 0 || st.Truncated+st.Dropped > 0 {
		return 0, 0, 0, fmt.Errorf("%s", strings.Join(damage, "; "))
	}
	rr, err := record.NewReader(bytes.NewReader(m.out.Bytes()), name)
	if err != nil {
		return 0, 0, 0, err
	}
	var lens []int64
	for {
		r, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, 0, err
		}
		if err := rr.Finish(); err != nil {
			return 0, 0, 0, err
		}
		lens = append(lens, r.Length)
	}
	want := 2
	if raw != nil {
		want = 3
	}
	if len(lens) != want {
		return 0, 0, 0, fmt.Errorf("its conversion has %d records, not %d", len(lens), want)
	}
	if raw == nil {
		return lens[0], lens[1], 0, nil
	}
	return lens[0], lens[1], lens[2], nil
}

// revisit builds the revisit the rewrite would write in place of the
// record m.out's conversion ends with, compressed as the rewrite
// compresses it, and returns its length.
func (m *measurer) revisit(of *revisitOf) (int64, error) {
	rr, err := record.NewReader(bytes.NewReader(m.out.Bytes()), "conversion")
	if err != nil {
		return 0, err
	}
	var rec *record.Record
	for range 3 {
		if rec, err = rr.Next(); err != nil {
			return 0, err
		}
		if rec.Type == "response" {
			break
		}
		if err := rr.Finish(); err != nil {
			return 0, err
		}
	}
	if rec.Type != "response" {
		return -1, nil
	}
	head, err := rr.ReadHTTPHead()
	if err != nil {
		return -1, nil // no HTTP head: the rewrite would not make it a revisit
	}
	v := revisit.Revisit{Record: rec, HTTPHead: head.Raw, RefURI: of.uri, RefDate: of.date, PayloadDigest: rec.Header.Get("WARC-Payload-Digest")}
	b, err := v.Bytes()
	if err != nil {
		return 0, err
	}
	if m.zw == nil {
		// At the rewrite's level: the default one makes each revisit
		// some 20 bytes smaller than the run writes it, and the estimate
		// of the bytes saved too large.
		m.zw = gzmulti.NewWriter(io.Discard, refs.RevisitLevel)
	} else {
		m.zw.Reset(io.Discard)
	}
	if _, err := m.zw.Write(b); err != nil {
		return 0, err
	}
	member, err := m.zw.CloseMember()
	return member.Length, err
}

// ARCInputs are the ARC files among a listing's inputs.
func ARCInputs(inputs []warcsum.Input) []warcsum.Input {
	var arcs []warcsum.Input
	for _, in := range inputs {
		if archname.IsARC(in.Name) {
			arcs = append(arcs, in)
		}
	}
	return arcs
}
