// Package migrate converts a collection's ARC files to WARC in place (a
// format migration, in preservation terms), as the first stage of a legacy
// ARC archive's deduplication (shared/spec/prior-art.md, the BA plan's
// steps 3 and 4): each ARC file is converted to a WARC file beside itself
// (package convert), the conversion is proved record for record against
// the ARC (verify.Conversion: every record's type, URI, date and block
// byte for byte, and the warcsum listings of both in order), and only then
// is the WARC put in place and the ARC removed, or moved to a keep
// directory.
//
// # Crash safety
//
// Every step is durable before the next starts, and what a file's names
// hold says, after a kill anywhere, what was done (x.arc.gz, its WARC
// x.warc.gz, the proof WORKDIR/convert/x.arc.gz.proof):
//
//  1. the WARC is written under a temporary name, ".tmp-x.warc.gz-DIGITS",
//     and synced;
//  2. it is proved against the ARC; the proof (the ARC's and the WARC's
//     size and SHA-256, and where each record went: package convmap) is
//     written to the work directory atomically and synced;
//  3. the WARC is linked to its name, which fails rather than replace
//     anything there, the temporary name removed, the directory synced;
//  4. the ARC is removed (or moved to the keep directory, synced there
//     first), the directory synced.
//
// A rerun finds: an ARC alone (with or without temporary WARCs, which are
// removed): it starts again at 1; an ARC and its WARC with a proof that
// both match (size and SHA-256, read again): it does 4; a WARC alone with
// its proof: done. No ARC is removed unless a WARC whose bytes its proof
// names is in place.
//
// # A WARC name already taken
//
// An ARC whose WARC name is taken (x.arc.gz beside an x.warc.gz that is not
// one this package proved) is never overwritten: the existing WARC is
// proved against the ARC as if it had been written here. If it is the
// ARC's conversion (an earlier "arc2warc -o coll coll"), it is adopted and
// the ARC removed; otherwise neither file is touched and the ARC is named
// (Refused). Two ARCs with one WARC name (x.arc and x.arc.gz) are the same
// case for the second one.
//
// # Damage
//
// An ARC from which a record or a stretch of bytes could not be read, or
// whose last record is cut short, is left as it is and named (Damaged):
// its WARC could not hold every byte the ARC holds. So is a file named
// .arc that holds no ARC record (NotARC). The step goes on with the other
// files; the caller makes that exit status 1.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"warcdedup/archname"
	"warcdedup/atomicfile"
	"warcdedup/collock"
	"warcdedup/convert"
	"warcdedup/convmap"
	"warcdedup/fixity"
	"warcdedup/inplace"
	"warcdedup/internal/fspath"
	"warcdedup/internal/progress"
	"warcdedup/internal/within"
	"warcdedup/verify"
	"warcdedup/warcsum"
)

// Options of a conversion.
type Options struct {
	// WorkDir holds the proofs (WorkDir/convert/ARC.proof) and the map of
	// every conversion done so far (WorkDir/conversion.map). Required.
	WorkDir string
	// KeepARC, if set, is a directory the ARC files are moved to (their
	// path below the collection kept) instead of being removed.
	KeepARC string
	Jobs    int    // files at once; 1 if 0
	Version string // WARC version written: "1.0" (default) or "1.1"
	// Software names this software in each WARC's warcinfo record.
	Software string
	// Report, if set, receives each ARC left as it is, with why, and the
	// damage the conversion found, as found.
	Report func(error)
	// Locks, if set, are the job's locks (package collock), the keep
	// directory's own among them (LockKeepDir): each directory of the
	// keep directory an ARC goes into, made or found there, and each on
	// the way to it, is added one level at a time before it is used; one
	// another job holds leaves the ARC where it is (Failed).
	Locks *collock.Set
	// Hook, if set, is called between the steps of each file's conversion
	// with the step's name ("written", "proved", "linked", "copied" (a
	// copy into the keep directory written, not yet checked), "removed"):
	// tests stop the process there.
	Hook func(step, arc string)
}

// Status is what became of one ARC file.
type Status int

// The outcomes of an ARC file.
const (
	Converted Status = iota // converted, proved, put in place; the ARC removed or kept
	Adopted                 // a WARC of its name was there and proved to be its conversion; the ARC removed or kept
	Refused                 // its WARC name is taken by another file, or it is a symbolic link: left as it is
	Damaged                 // it has damage or a truncated record: left as it is
	NotARC                  // it holds no ARC record: left as it is
	Failed                  // it could not be converted (an I/O error): left as it is
)

func (s Status) String() string {
	return [...]string{"converted", "adopted", "refused", "damaged", "not ARC", "failed"}[s]
}

// Left reports whether the ARC is still in the collection.
func (s Status) Left() bool { return s >= Refused }

// Outcome is what became of one ARC file.
type Outcome struct {
	ARC, WARC         string // relative to the collection (WARC: the name it has or would have)
	Status            Status
	Reason            string // why it was left
	ARCSize, WARCSize int64
	Records           int64 // ARC records in the WARC
	Resumed           bool  // an earlier run had proved it; this one finished it
}

// Result is what a Run did.
type Result struct {
	Files []Outcome // the ARC files found, in name order
	// Map is the conversion map of every file converted in this work
	// directory so far, earlier runs included (package convmap).
	Map string
	// Earlier counts files an earlier run converted completely (their
	// proof is in the map, their ARC gone).
	Earlier int
}

// Count returns how many files have status s.
func (r *Result) Count(s Status) int {
	n := 0
	for _, o := range r.Files {
		if o.Status == s {
			n++
		}
	}
	return n
}

// Bytes returns the ARC and WARC bytes of the files converted or adopted.
func (r *Result) Bytes() (arc, warc int64) {
	for _, o := range r.Files {
		if !o.Status.Left() {
			arc += o.ARCSize
			warc += o.WARCSize
		}
	}
	return arc, warc
}

// The work directory's names.
const (
	ProofDir = "convert"        // a proof per ARC, named after it with ".proof"
	MapFile  = "conversion.map" // the proofs in one map
	proofExt = ".proof"
)

// Scan lists the ARC files of a collection (with its subdirectories), in
// name order, and their total size: a progress display's total.
func Scan(collection string) ([]warcsum.Input, int64, error) {
	all, err := warcsum.Collect([]string{collection}, true)
	if err != nil {
		return nil, 0, err
	}
	var arcs []warcsum.Input
	var total int64
	for _, in := range all {
		if archname.IsARC(in.Name) {
			arcs = append(arcs, in)
			total += in.Size
		}
	}
	return arcs, total, nil
}

// scan is Scan, and an Outcome (refused) for each symbolic link under an
// ARC's name: it is not followed, so its ARC is not converted, and the
// Result counts it among the ARC files left (a run that names it and says
// every ARC was converted would exit 0 with one not converted).
func (c *Converter) scan(root string) ([]warcsum.Input, []Outcome, error) {
	var links []Outcome
	col := warcsum.Collector{Recursive: true, Link: func(path string) {
		if !archname.IsARC(filepath.Base(path)) {
			return
		}
		name := path
		if rel, err := filepath.Rel(root, path); err == nil {
			name = filepath.ToSlash(rel)
		}
		links = append(links, Outcome{ARC: name, WARC: convert.OutputName(name, false), Status: Refused,
			Reason: "a symbolic link, not followed: not converted (converting through it would remove the link and leave the ARC it names; convert that ARC where it is)"})
	}}
	all, err := col.Collect([]string{root})
	if err != nil {
		return nil, nil, err
	}
	return slices.DeleteFunc(all, func(in warcsum.Input) bool { return !archname.IsARC(in.Name) }), links, nil
}

// KeepFile, in the work directory, names the keep directory its
// conversions keep the ARC files in (holdKeepDir).
const KeepFile = "keep-arc"

// holdKeepDir holds the work directory's conversion to the keep directory
// it was first given: an ARC an archivist asked to keep must never be
// removed because a rerun (of a killed run, or one whose keep failed)
// forgot the keep directory or named another. The first keep directory
// is recorded before any ARC is retired; a conversion without one before
// it may be given one.
func (c *Converter) holdKeepDir() error {
	keep := ""
	if c.KeepARC != "" {
		abs, err := fspath.Abs(c.KeepARC)
		if err != nil {
			return fmt.Errorf("migrate: keep directory %s: %w", c.KeepARC, err)
		}
		keep = abs
	}
	name := filepath.Join(c.WorkDir, KeepFile)
	b, err := os.ReadFile(name)
	switch {
	case err == nil:
		was := strings.TrimSuffix(string(b), "\n")
		if was == keep {
			return nil
		}
		now := "no keep directory"
		if keep != "" {
			now = "the keep directory " + keep
		}
		return fmt.Errorf("migrate: the conversion in the work directory %s keeps the ARC files in %s, and this one has %s: the ARC files left would not be kept there; give --keep-arc %s again (or another work directory)",
			c.WorkDir, was, now, was)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("migrate: %w", err)
	case keep == "":
		return nil
	}
	out, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer out.Abort()
	if _, err := out.Write([]byte(keep + "\n")); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return out.Commit()
}

// Converter converts a collection's ARC files in place.
type Converter struct {
	Options
	// syncDir and link, if set, replace atomicfile.SyncDir and os.Link
	// (the kept copy's): tests see what is synced when, and copy as
	// across file systems.
	syncDir func(dir string) error
	link    func(oldname, newname string) error
}

func (c *Converter) sync(dir string) error {
	if c.syncDir != nil {
		return c.syncDir(dir)
	}
	return atomicfile.SyncDir(dir)
}

func (c *Converter) linkFile(oldname, newname string) error {
	if c.link != nil {
		return c.link(oldname, newname)
	}
	return os.Link(oldname, newname)
}

// mkdirAll is os.MkdirAll made durable: each directory it makes is
// synced in its parent, so that a file put below dir and synced in its
// own directory survives a power cut.
func (c *Converter) mkdirAll(dir string) error {
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		_, err := os.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range made {
		if err := c.sync(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// syncUp syncs dir and each directory above it up to top, which is an
// ancestor of dir made durable before (mkdirAll): the path to a file
// put in dir is then durable whichever worker made its directories
// (another may have made them and not yet synced them).
func (c *Converter) syncUp(dir, top string) error {
	top = filepath.Clean(top)
	for d := dir; ; d = filepath.Dir(d) {
		if err := c.sync(d); err != nil {
			return err
		}
		if d == top || filepath.Dir(d) == d {
			return nil
		}
	}
}

// Run converts every ARC file of collection, resuming what an earlier
// run left. progress, if not nil, gets the ARC bytes read as they are.
// An error is returned only when the step could not go on (the work
// directory could not be written, the context was cancelled); a file that
// could not be converted is an Outcome.
func (c *Converter) Run(ctx context.Context, collection string, progress *atomic.Int64) (*Result, error) {
	if c.WorkDir == "" {
		return nil, errors.New("migrate: no work directory")
	}
	if c.Version != "" {
		if err := convert.CheckVersion(c.Version); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	if progress == nil {
		progress = new(atomic.Int64)
	}
	root, err := fspath.Abs(collection)
	if err != nil {
		return nil, err
	}
	if c.KeepARC != "" {
		// One spelling for the whole job, the kernel's (fspath.Abs: a
		// ".." after a symbolic link is the link's target's parent): the
		// kept copies' paths are joined to it, and the directory is made
		// and locked (LockKeepDir) by that spelling too.
		keep, err := fspath.Abs(c.KeepARC)
		if err != nil {
			return nil, fmt.Errorf("migrate: keep directory %s: %w", c.KeepARC, err)
		}
		c.KeepARC = keep
		if err := checkKeepDir(c.KeepARC, root); err != nil {
			return nil, err
		}
	}
	proofs := filepath.Join(c.WorkDir, ProofDir)
	if err := c.mkdirAll(proofs); err != nil {
		return nil, err
	}
	if c.KeepARC != "" {
		if err := checkKeepNotWork(c.KeepARC, c.WorkDir); err != nil {
			return nil, err
		}
	}
	arcs, links, err := c.scan(root)
	if err != nil {
		return nil, err
	}
	for _, o := range links {
		if c.Report != nil {
			c.Report(fmt.Errorf("%s: %s, left as it is: %s", o.ARC, o.Status, o.Reason))
		}
	}
	if len(arcs) > 0 {
		if err := c.holdKeepDir(); err != nil {
			return nil, err
		}
		if err := c.checkKeepRoom(arcs); err != nil { // lock.go
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	if c.KeepARC != "" && len(arcs) > 0 {
		if err := c.mkdirAll(c.KeepARC); err != nil {
			return nil, fmt.Errorf("migrate: keep directory %s: %w", c.KeepARC, err)
		}
	}
	res := &Result{Files: make([]Outcome, len(arcs)), Map: filepath.Join(c.WorkDir, MapFile)}
	for i, in := range arcs {
		// What a stopped run leaves of the files it did not reach.
		res.Files[i] = Outcome{ARC: in.Name, WARC: convert.OutputName(in.Name, false), ARCSize: in.Size, Status: Failed, Reason: "not reached: the conversion was stopped"}
	}
	c.convertAll(ctx, root, arcs, progress, res)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	found, left := map[string]bool{}, map[string]bool{}
	for _, o := range res.Files {
		found[o.ARC] = true
		left[o.ARC] = o.Status.Left()
	}
	n, err := writeMap(proofs, res.Map, found, left)
	res.Earlier = n
	// The links after the map: a proof of an ARC converted earlier under
	// the name a link has now stays in it.
	if len(links) > 0 {
		res.Files = append(res.Files, links...)
		slices.SortStableFunc(res.Files, func(a, b Outcome) int { return strings.Compare(a.ARC, b.ARC) })
	}
	return res, err
}

// convertAll converts arcs, Jobs at a time, into res.Files (in the
// order of arcs), reporting each one left; it returns when all are
// done or ctx is done. ARCs with one WARC name (x.arc and x.arc.gz) are
// converted one after the other, by one worker: the second finds the
// first's WARC and adopts it only if it proves to hold its records too.
func (c *Converter) convertAll(ctx context.Context, root string, arcs []warcsum.Input, progress *atomic.Int64, res *Result) {
	groups := sameWARCName(arcs)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(max(1, c.Jobs), max(1, len(groups))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				g := int(next.Add(1) - 1)
				if g >= len(groups) {
					return
				}
				for _, i := range groups[g] {
					if ctx.Err() != nil {
						return
					}
					f := &file{c: c, root: root, in: arcs[i], progress: progress}
					res.Files[i] = f.run(ctx)
					if o := res.Files[i]; o.Status.Left() && c.Report != nil {
						c.Report(fmt.Errorf("%s: %s, left as it is: %s", o.ARC, o.Status, o.Reason))
					}
				}
			}
		}()
	}
	wg.Wait()
}

// sameWARCName groups the indexes of arcs by the name of their WARC
// (case aside), in the order of arcs.
func sameWARCName(arcs []warcsum.Input) [][]int {
	var groups [][]int
	byWARC := map[string]int{}
	for i, in := range arcs {
		name := strings.ToLower(convert.OutputName(in.Name, false))
		g, ok := byWARC[name]
		if !ok {
			g = len(groups)
			byWARC[name] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// file is one ARC file's conversion.
type file struct {
	c        *Converter
	root     string
	in       warcsum.Input
	progress *atomic.Int64

	arcPath, warcName, warcPath, proofPath string
	// read is the ARC as it was when it was read for its proof: retire
	// refuses an ARC whose size or time changed since.
	read os.FileInfo
}

func (f *file) hook(step string) {
	if f.c.Hook != nil {
		f.c.Hook(step, f.in.Name)
	}
}

func (f *file) run(ctx context.Context) Outcome {
	f.arcPath = f.in.Path
	f.warcName = convert.OutputName(f.in.Name, false)
	f.warcPath = filepath.Join(f.root, filepath.FromSlash(f.warcName))
	f.proofPath = filepath.Join(f.c.WorkDir, ProofDir, filepath.FromSlash(f.in.Name)+proofExt)
	o := Outcome{ARC: f.in.Name, WARC: f.warcName, ARCSize: f.in.Size}
	left := func(s Status, format string, args ...any) Outcome {
		o.Status, o.Reason = s, fmt.Sprintf(format, args...)
		return o
	}
	// Temporary WARCs and proofs of a killed run are never anything but
	// that (a proof is written while its ARC is still there, so a run
	// that finds the ARC removes a killed one's half-written proof).
	atomicfile.RemoveLeftovers(f.warcPath)
	atomicfile.RemoveLeftovers(f.proofPath)

	proof, err := readProof(f.proofPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return left(Failed, "its proof: %v", err)
	}
	warcInfo, err := os.Lstat(f.warcPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f.convert(ctx, o)
	case err != nil:
		return left(Failed, "%v", err)
	case !warcInfo.Mode().IsRegular():
		return left(Refused, "%s exists and is no regular file", f.warcName)
	}
	// The WARC name is there: ours from a killed run (its proof matches
	// it), or another file, which is adopted only if it proves to be the
	// ARC's conversion.
	if proof != nil && proof.File.WARC == f.warcName && proof.File.WARCSize == warcInfo.Size() {
		warcSum, _, err := sumFile(f.warcPath, nil)
		if err != nil {
			return left(Failed, "%v", err)
		}
		if warcSum == proof.File.WARCSHA256 {
			if f.read, err = os.Stat(f.arcPath); err != nil {
				return left(Failed, "%v", err)
			}
			arcSum, size, err := sumFile(f.arcPath, f.progress)
			if err != nil {
				return left(Failed, "%v", err)
			}
			if arcSum != proof.File.ARCSHA256 || size != proof.File.ARCSize {
				return left(Refused, "it changed after its conversion %s was proved (SHA-256 %s, the proof says %s): the WARC stays, the ARC is not removed", f.warcName, arcSum, proof.File.ARCSHA256)
			}
			o.Status, o.Resumed = Converted, true
			o.WARCSize, o.Records = proof.File.WARCSize, int64(len(proof.Records))
			if err := f.retire(); err != nil {
				return left(Failed, "%v", err)
			}
			return o
		}
	}
	return f.adopt(ctx, o)
}

// convert writes, proves and puts in place the WARC of an ARC.
func (f *file) convert(ctx context.Context, o Outcome) Outcome {
	tmp, err := os.CreateTemp(filepath.Dir(f.warcPath), atomicfile.TempPrefix+filepath.Base(f.warcPath)+"-*")
	if err != nil {
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // after the link, or on failure
	if err := f.shareAttributes(tmp); err != nil {
		tmp.Close()
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	if f.read, err = os.Stat(f.arcPath); err != nil {
		tmp.Close()
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	st, arcSum, warcSum, err := f.write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, convert.ErrNotARC):
		o.Status, o.Reason = NotARC, err.Error()
		return o
	case err != nil:
		o.Status, o.Reason = Failed, err.Error()
		return o
	case st.Damaged > 0 || st.Truncated > 0 || st.Dropped > 0:
		o.Status, o.Reason = Damaged, fmt.Sprintf("%d damaged stretches, %d truncated records: its WARC could not hold every byte", st.Damaged, st.Truncated+st.Dropped)
		return o
	}
	if ctx.Err() != nil {
		o.Status, o.Reason = Failed, ctx.Err().Error()
		return o
	}
	f.hook("written")
	p, why, err := f.prove(tmpName, arcSum, warcSum)
	switch {
	case err != nil:
		o.Status, o.Reason = Failed, err.Error()
		return o
	case why != "":
		o.Status, o.Reason = Failed, "the conversion did not prove: "+why
		return o
	}
	if err := f.writeProof(p); err != nil {
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	f.hook("proved")
	// Link, not rename: a file that took the name meanwhile is kept.
	if err := inplace.Link(tmpName, f.warcPath); err != nil {
		if errors.Is(err, fs.ErrExist) {
			o.Status, o.Reason = Refused, fmt.Sprintf("%s appeared while it was converted: not overwritten", f.warcName)
		} else {
			o.Status, o.Reason = Failed, err.Error()
		}
		return o
	}
	f.hook("linked")
	if err := f.retire(); err != nil {
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	o.Status, o.WARCSize, o.Records = Converted, p.File.WARCSize, int64(len(p.Records))
	return o
}

// write converts the ARC into tmp and syncs it; it returns the SHA-256 of
// both as read and written.
func (f *file) write(tmp *os.File) (convert.Stats, string, string, error) {
	src, err := os.Open(f.arcPath)
	if err != nil {
		return convert.Stats{}, "", "", err
	}
	defer src.Close()
	arcHash, warcHash := fixity.New(mapAlgorithm), fixity.New(mapAlgorithm)
	in := io.TeeReader(progress.CountingReader(src, f.progress), arcHash)
	out := newBuffered(io.MultiWriter(tmp, warcHash))
	opt := convert.Options{Version: f.c.Version, Software: f.c.Software, Damage: f.damage}
	st, err := convert.Convert(in, f.in.Name, filepath.Base(f.warcPath), out, opt)
	if err == nil {
		// The ARC's hash covers every byte, whatever the converter left
		// unread after its last record.
		_, err = io.Copy(io.Discard, in)
	}
	if err == nil {
		err = out.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	return st, arcHash.Sum(mapAlgorithm), warcHash.Sum(mapAlgorithm), err
}

func (f *file) damage(err error) {
	if f.c.Report != nil {
		f.c.Report(err)
	}
}

// prove checks the WARC at warcPath against the ARC and maps its records;
// why says what did not prove.
func (f *file) prove(warcPath, arcSum, warcSum string) (*proof, string, error) {
	arc, err := os.Open(f.arcPath)
	if err != nil {
		return nil, "", err
	}
	defer arc.Close()
	warc, err := os.Open(warcPath)
	if err != nil {
		return nil, "", err
	}
	defer warc.Close()
	fa, err := arc.Stat()
	if err != nil {
		return nil, "", err
	}
	fw, err := warc.Stat()
	if err != nil {
		return nil, "", err
	}
	var problems []string
	st, err := verify.Conversion(verify.File{Name: f.in.Name, R: arc, Size: fa.Size()}, verify.File{Name: f.warcName, R: warc, Size: fw.Size()},
		func(v string) {
			if len(problems) < 3 {
				problems = append(problems, v)
			}
		})
	if err != nil {
		return nil, "", err
	}
	if st.Violations > 0 || st.ARCDamage > 0 || st.Truncated > 0 {
		// A truncation is no violation of the mapping: named apart, or
		// the reason said "0 problems: " and nothing more.
		var why []string
		if st.Violations > 0 {
			why = append(why, fmt.Sprintf("%d problems: %s", st.Violations, strings.Join(problems, "; ")))
		}
		if st.Truncated > 0 {
			why = append(why, fmt.Sprintf("%d truncated ARC records, whose missing bytes no WARC holds", st.Truncated))
		}
		if st.Violations == 0 && st.ARCDamage > 0 {
			why = append(why, fmt.Sprintf("%d damaged stretches of the ARC", st.ARCDamage))
		}
		return nil, strings.Join(why, "; "), nil
	}
	p := &proof{File: convmap.File{ARC: f.in.Name, WARC: f.warcName, ARCSize: fa.Size(), ARCSHA256: arcSum, WARCSize: fw.Size(), WARCSHA256: warcSum},
		Matched: st.Matched, Listed: st.ListedARC}
	if err := mapRecords(p, arc, fa.Size(), warc, fw.Size()); err != nil {
		return nil, "", err
	}
	return p, "", nil
}

// adopt proves the WARC already at the ARC's WARC name against it: its
// conversion is kept and the ARC retired; anything else is refused.
func (f *file) adopt(ctx context.Context, o Outcome) Outcome {
	// The ARC as it is before it is read: retire refuses it if it changed.
	var err error
	if f.read, err = os.Stat(f.arcPath); err != nil {
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	warcSum, _, err := sumFile(f.warcPath, nil)
	if err != nil {
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	arcSum, _, err := sumFile(f.arcPath, f.progress)
	if err != nil {
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	if ctx.Err() != nil {
		o.Status, o.Reason = Failed, ctx.Err().Error()
		return o
	}
	p, why, err := f.prove(f.warcPath, arcSum, warcSum)
	switch {
	case err != nil:
		o.Status, o.Reason = Refused, fmt.Sprintf("%s exists and could not be compared with it (%v): neither is changed", f.warcName, err)
		return o
	case why != "":
		o.Status, o.Reason = Refused, fmt.Sprintf("%s exists and is not its conversion (%s): neither is changed", f.warcName, why)
		return o
	}
	if err := f.writeProof(p); err != nil {
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	f.hook("proved")
	if err := f.retire(); err != nil {
		o.Status, o.Reason = Failed, err.Error()
		return o
	}
	o.Status, o.WARCSize, o.Records = Adopted, p.File.WARCSize, int64(len(p.Records))
	return o
}

// retire removes the ARC, or moves it to the keep directory, once its
// proved WARC is in place.
func (f *file) retire() error {
	if f.read != nil {
		now, err := os.Stat(f.arcPath)
		if err != nil {
			return err
		}
		if now.Size() != f.read.Size() || !now.ModTime().Equal(f.read.ModTime()) {
			return fmt.Errorf("it changed while it was converted (now %d bytes, modified %s): not removed", now.Size(), now.ModTime().Format(time.RFC3339Nano))
		}
	}
	if f.c.KeepARC != "" {
		if err := f.keep(); err != nil {
			return fmt.Errorf("keeping it in %s: %w", f.c.KeepARC, err)
		}
	}
	if err := os.Remove(f.arcPath); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(filepath.Dir(f.arcPath)); err != nil {
		return err
	}
	f.hook("removed")
	return nil
}

// checkKeepDir refuses a keep directory that is the collection or inside
// it, by its name or through a symbolic link: an ARC "kept" as itself
// would be removed, one kept below the collection listed again.
func checkKeepDir(keep, root string) error {
	in, err := within.Dir(keep, root)
	if err != nil {
		return fmt.Errorf("migrate: keep directory %s: %w", keep, err)
	}
	if in {
		return fmt.Errorf("migrate: keep directory %s is inside the collection %s: the ARC files kept there would be removed or listed again: name a keep directory outside it", keep, root)
	}
	return nil
}

// checkKeepNotWork refuses a keep directory in the work directory: its
// tmp is emptied at each warcdedup job's end (package workdir) and the
// whole is scratch space, removed once the job is done: the ARC files
// kept there would be lost.
func checkKeepNotWork(keep, workDir string) error {
	in, err := within.Dir(keep, workDir)
	if err != nil {
		return fmt.Errorf("migrate: keep directory %s: %w", keep, err)
	}
	if in {
		return fmt.Errorf("migrate: keep directory %s is inside the work directory %s, whose files are removed (its tmp at each job's end, all of it once the job is done): name a keep directory outside it", keep, workDir)
	}
	return nil
}

// keep puts a copy of the ARC in the keep directory, durably: a hard link
// on the same file system, else a copy checked by SHA-256.
func (f *file) keep() error {
	dst := filepath.Join(f.c.KeepARC, filepath.FromSlash(f.in.Name))
	// A keep directory that holds the collection may put a name in it.
	if in, err := within.Dir(dst, f.root); err != nil || in {
		if err == nil {
			err = fmt.Errorf("%s is inside the collection: not kept there", dst)
		}
		return err
	}
	if err := f.c.keepDir(filepath.Dir(dst)); err != nil { // lock.go
		return err
	}
	// A killed copy's temporary file (its name says it is one).
	atomicfile.RemoveLeftovers(dst)
	src, err := os.Stat(f.arcPath)
	if err != nil {
		return err
	}
	if have, err := os.Lstat(dst); err == nil {
		if !have.Mode().IsRegular() {
			// A link is no copy: the ARC it names would be removed.
			return fmt.Errorf("%s exists and is no regular file: not overwritten", dst)
		}
		// A killed run linked or copied it already; unless the name is
		// the ARC's own, reached another way (a bind mount): removing the
		// ARC then would lose it.
		if os.SameFile(src, have) {
			if sameEntry(f.arcPath, dst) {
				return fmt.Errorf("%s is the ARC itself: not removed", dst)
			}
			return f.c.syncUp(filepath.Dir(dst), f.c.KeepARC)
		}
		a, _, err := sumFile(f.arcPath, nil)
		if err != nil {
			return err
		}
		b, _, err := sumFile(dst, nil)
		if err != nil {
			return err
		}
		if a != b {
			return fmt.Errorf("%s exists and is another file: not overwritten", dst)
		}
		return f.c.syncUp(filepath.Dir(dst), f.c.KeepARC)
	}
	err = f.c.linkFile(f.arcPath, dst)
	if errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) {
		err = f.copyChecked(dst)
	}
	if err != nil {
		return err
	}
	// The copy's entry, and those of the directories made for it, are
	// durable before the ARC is removed.
	return f.c.syncUp(filepath.Dir(dst), f.c.KeepARC)
}

// sameEntry reports whether two names are one directory entry: the same
// base name in the same directory.
func sameEntry(a, b string) bool {
	if filepath.Base(a) != filepath.Base(b) {
		return false
	}
	da, err := os.Stat(filepath.Dir(a))
	if err != nil {
		return false
	}
	db, err := os.Stat(filepath.Dir(b))
	return err == nil && os.SameFile(da, db)
}

// copyChecked copies the ARC to dst, with its attributes: written beside
// dst under a temporary name (which a rerun removes if this one is
// killed), synced, read back and checked by SHA-256, and only then linked
// to its name, so that a bad copy never has the ARC's name and a file that
// took the name meanwhile is never overwritten.
func (f *file) copyChecked(dst string) error {
	in, err := os.Open(f.arcPath)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dst), atomicfile.TempPrefix+filepath.Base(dst)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name()) // after the link, or on failure
	h := fixity.New(mapAlgorithm)
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if err == nil {
		err = inplace.ShareAttributes(out, in)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	f.hook("copied")
	got, _, err := sumFile(out.Name(), nil)
	if err != nil {
		return err
	}
	if want := h.Sum(mapAlgorithm); got != want {
		return fmt.Errorf("the copy %s reads back with SHA-256 %s, not %s: removed", out.Name(), got, want)
	}
	err = inplace.Link(out.Name(), dst)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s appeared while the ARC was copied there: not overwritten", dst)
	}
	return err
}

// shareAttributes gives the new WARC the ARC's permissions and extended
// attributes, and its owner and group where this process may (as root, or
// the owner): see inplace.ShareAttributes.
func (f *file) shareAttributes(warc *os.File) error {
	arc, err := os.Open(f.arcPath)
	if err != nil {
		return err
	}
	defer arc.Close()
	return inplace.ShareAttributes(warc, arc)
}

// mapAlgorithm is what the conversion map's sums are taken with: SHA-256,
// written as bare hex (fixity's form of it, which replica reads).
const mapAlgorithm = fixity.SHA256

// sumFile returns a file's SHA-256 and size, adding what it reads to n.
func sumFile(name string, n *atomic.Int64) (string, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h, err := fixity.HashReader(progress.CountingReader(f, n), mapAlgorithm)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", name, err)
	}
	return h.Sum(mapAlgorithm), h.Size(), nil
}

// writeMap writes the proofs of dir into one map, atomically, but for
// those of the ARC files left in the collection (a proof written before a
// kill, of a file converted again since, or one that changed after it). It
// returns how many proofs are of files this run did not find (converted
// by an earlier run).
func writeMap(dir, name string, found, left map[string]bool) (int, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, proofExt) {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	slices.Sort(names)
	out, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return 0, err
	}
	defer out.Abort()
	w := newBuffered(out)
	earlier := 0
	for _, p := range names {
		pr, err := readProof(p)
		if err != nil {
			return 0, err
		}
		if left[pr.File.ARC] {
			continue
		}
		if !found[pr.File.ARC] {
			earlier++
		}
		if _, err := w.Write(pr.appendTo(nil)); err != nil {
			return 0, err
		}
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	return earlier, out.CommitRenamed()
}
