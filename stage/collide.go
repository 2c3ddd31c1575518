package stage

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/collres"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/rewritelog"
)

// Collide resolves byte for byte the digests whose duplicates the rewrite
// kept apart from their original (Rewrite.Apart): a hash collision, a
// capture the policy keeps apart (same bytes, another status, type or
// redirect), an original gone or stale. Resolve numbered the copies from
// the manifest alone, reading nothing, so that each duplicate is compared
// once, in the rewrite; this stage is the rare second look, as warccollres
// does it, at just those digests.
//
// Its input, on digest, is every line of those digests the rewrite left
// as a response that may take part: the originals of the first numbering
// (copy 1), which stay originals (Kept: the revisits the rewrite made
// refer to them), the lines kept apart, and the revisit lines (whose
// targets stay responses). Their offsets are followed through the
// entries the rewrite logged (LogFrom on), so that Out, the new
// numbering, names the records where they are now; the second rewrite
// (Rewrite with Log.Since the log's size now) moves them only by its own.
type Collide struct {
	Apart    string // the lines kept apart, numbered, on file
	Numbered string // the first numbering, on digest
	// Log is the rewrite log; LogFrom its size when the hash stage listed
	// the files: the entries since, the rewrite's, move the lines.
	Log     string
	LogFrom int64
	Source  collres.Opener // the records, read now
	Policy  policy.Policy
	Jobs    int
	Sorter  syssort.Sorter
	// Out is the new numbering, on digest, whole or not at all; Origins
	// maps each line resolved again, and each original of the first
	// numbering it is resolved with, from where it is now back to where
	// the hash stage found it, with its class in the first numbering
	// (CollideOrigins), for the account.
	Out, Origins string
	// Also names duplicates of the first numbering to number again
	// though the rewrite did not find them apart: those in files the
	// rewrite does not read (ARC: no revisit form), whose classes the
	// account reports. It names a line by its file alone: it is asked
	// once for each file (InARCFile).
	Also func(l *manifest.Line) bool
	// Besides those, the originals of a class beyond its first (captures
	// that existing revisits refer to, pinned as copy 1 of the digest's
	// class) are numbered again: no duplicate was compared with them, so
	// only reading them tells whether they are served as the class's
	// first or apart, as the comparing resolve tells (the account's
	// classes served apart).
	Messages Messages
	Meter    progress.Meter
}

// CollideResult is what a Collide did.
type CollideResult struct {
	Digests int64         `json:"digests"` // digests resolved again
	Apart   int64         `json:"apart"`   // lines numbered again: kept apart by the rewrite, in ARC files, originals beyond their class's first
	Stats   collres.Stats `json:"stats"`
	Stale   []string      `json:"stale,omitempty"`
}

// Note says what a Collide did.
func (c *CollideResult) Note() string {
	return fmt.Sprintf("%s records (duplicates kept apart by the rewrite or in ARC files, originals existing revisits keep beside their class's first), in %s digests, resolved again byte for byte: %s collisions, %s classes kept apart by the policy, %s stale",
		progress.Count(c.Apart), progress.Count(c.Digests), progress.Count(c.Stats.Collisions), progress.Count(c.Stats.Split), progress.Count(c.Stats.Stale))
}

// WithCollided returns the resolution's result with what the collisions
// stage found added, in warcdedup run and warcdedup cluster alike: the
// stale lines it left out (a record it could not read, a storage host
// down), as the job's report counts them and its exit reasons give them,
// and the collisions (a resolve that numbers from the manifests compares
// nothing, so that these are the job's), which the report gives as why
// responses are served apart.
func (r ResolveResult) WithCollided(c *CollideResult) ResolveResult {
	if c == nil {
		return r
	}
	r.Stats.Collisions += c.Stats.Collisions
	r.Stats.Stale += c.Stats.Stale
	r.Stale = append(r.Stale[:len(r.Stale):len(r.Stale)], c.Stale[:min(len(c.Stale), max(0, KeepFirst-len(r.Stale)))]...)
	return r
}

// Run resolves the digests again.
func (c *Collide) Run(ctx context.Context) (CollideResult, error) {
	var res CollideResult
	tmp := c.Sorter.TempDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return res, err
	}
	input, err := os.CreateTemp(tmp, "collide-input-*")
	if err != nil {
		return res, err
	}
	defer os.Remove(input.Name())
	kept, err := c.gather(c.Apart, input, &res)
	if cerr := input.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}
	// No digest to resolve again, the usual case, leaves the input
	// empty: sorted as it is, it is resolved to an empty numbering.
	sorted := input.Name()
	if res.Digests > 0 {
		sorted += "-sorted"
		defer os.Remove(sorted)
		if err := c.Sorter.Sort(ctx, manifest.ByDigest.Command, []string{input.Name()}, sorted); err != nil {
			return res, err
		}
	}
	in, err := os.Open(sorted)
	if err != nil {
		return res, err
	}
	defer in.Close()
	r := Resolve{In: manifest.NewReader(in, sorted), Out: c.Out, Source: c.Source, Policy: c.Policy, Jobs: c.Jobs,
		Kept: func(l *manifest.Line) bool {
			return kept[lineAt{l.File, l.Offset}]
		},
		Messages: c.Messages, Meter: c.Meter}
	rr, err := r.Run(ctx)
	res.Stats, res.Stale = rr.Stats, rr.Stale
	return res, err
}

// The roles of the lines in CollideOrigins.
const (
	originAgain = 'a' // numbered again: kept apart, in an ARC file, or an original beyond its class's first
	originKept  = 'k' // an original of the first numbering, which stays one
)

// extraOriginals finds, in a numbering read on digest, the originals of a
// class beyond its first: copy 1 again in a class that has one.
type extraOriginals struct {
	digest string
	seen   map[int]bool // the digest's classes with an original
}

func (e *extraOriginals) is(l *manifest.Line) bool {
	if l.IsRevisit() || !l.IsKept() {
		return false
	}
	if l.Digest != e.digest || e.seen == nil {
		e.digest, e.seen = l.Digest, map[int]bool{}
	}
	if e.seen[l.Class] {
		return true
	}
	e.seen[l.Class] = true
	return false
}

// lineAt names a record by file (as manifest field 1) and offset.
type lineAt struct {
	file   string
	offset int64
}

// gather writes the resolution's input (6-field responses at their
// offsets now, revisit lines as they are) and the origins, and returns
// the originals of the first numbering at their offsets now: a set as
// large as the lines of the digests resolved again, a small share of the
// collection's.
func (c *Collide) gather(apartName string, out io.Writer, res *CollideResult) (map[lineAt]bool, error) {
	digests, err := c.digestsAgain(apartName)
	if err != nil {
		return nil, err
	}
	res.Digests = int64(len(digests))
	origins, err := atomicfile.Create(c.Origins, 0o644)
	if err != nil {
		return nil, err
	}
	defer origins.Abort()
	g := &gathering{digests: digests, also: c.also, res: res, kept: map[lineAt]bool{},
		out: bufio.NewWriter(out), origins: bufio.NewWriter(origins)}
	if len(digests) > 0 {
		// The rewrite log, indexed, is read only to move the lines
		// taken: with no digest to resolve again, not at all.
		log, err := rewritelog.Open(c.Log)
		if err != nil {
			return nil, err
		}
		defer log.Close()
		log.Since(c.LogFrom)
		g.log = log
		// This pass parses only the lines it takes (the digest-less
		// revisit lines, pins of every digest, and the lines of the
		// digests resolved again); the others it splits no further than
		// their digest.
		err = eachLineOf(c.Numbered, func(digest []byte) bool {
			return digests[string(digest)] || string(digest) == manifest.NoDigest
		}, g.numbered)
		if err == nil {
			err = EachLine(apartName, g.again)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := g.out.Flush(); err != nil {
		return nil, err
	}
	if err := g.origins.Flush(); err != nil {
		return nil, err
	}
	return g.kept, origins.CommitRenamed()
}

// digestsAgain returns the digests to resolve again: those of the lines
// kept apart, of the originals of a class beyond its first, and of the
// duplicates Also names, whose files the rewrite does not read.
//
// It reads every line of the first numbering, the whole collection's,
// to find the few digests it takes: with manifest.Split, which splits a
// line into its fields rather than parse it (parsing them all was half
// the stage's time on the bench collection, where it takes four
// digests) and refuses what manifest.Parse refuses, so that a damaged
// line is still an error naming it.
func (c *Collide) digestsAgain(apartName string) (map[string]bool, error) {
	digests := map[string]bool{}
	if err := EachLine(apartName, func(l *manifest.Line) error {
		digests[l.Digest] = true
		return nil
	}); err != nil {
		return nil, err
	}
	scan := numberedScan{also: c.also, alsoFile: map[string]bool{}}
	err := eachRawLine(c.Numbered, func(raw []byte) error {
		digest, take, err := scan.line(raw)
		if err == nil && take {
			digests[string(digest)] = true
		}
		return err
	})
	return digests, err
}

// numberedScan finds, in the raw lines of a numbering read on digest, the
// digests to resolve again but for those kept apart: those holding an
// original of a class beyond its first (extraOriginals, from the fields
// alone) or a duplicate Also names (asked once per file: Also depends on
// the line's file only).
type numberedScan struct {
	also     func(*manifest.Line) bool
	alsoFile map[string]bool // Also's answer, by file as manifest field 1
	digest   []byte          // the digest read last
	classes  []int64         // its classes with an original so far
	split    manifest.Split
}

// line reports whether raw, a line of the numbering, makes its digest
// one to resolve again.
func (s *numberedScan) line(raw []byte) ([]byte, bool, error) {
	l := &s.split
	if err := l.Read(raw); err != nil {
		return nil, false, err
	}
	switch {
	case l.IsKept():
		return l.Digest, s.original(l.Digest, int64(l.Class)), nil
	case !l.IsDuplicate() || s.also == nil:
		return nil, false, nil
	}
	also, known := s.alsoFile[string(l.File)]
	if !known {
		parsed, err := manifest.Parse(raw)
		if err != nil {
			return nil, false, err
		}
		also = s.also(&parsed)
		s.alsoFile[parsed.File] = also
	}
	return l.Digest, also, nil
}

// original notes an original (copy 1) of class in digest, and reports
// whether its class has one already: an original beyond its class's
// first, as extraOriginals finds it.
func (s *numberedScan) original(digest []byte, class int64) bool {
	if !bytes.Equal(digest, s.digest) {
		s.digest = append(s.digest[:0], digest...)
		s.classes = s.classes[:0]
	}
	if slices.Contains(s.classes, class) {
		return true
	}
	s.classes = append(s.classes, class)
	return false
}

// also reports whether Also names l, a duplicate, to be numbered again.
func (c *Collide) also(l *manifest.Line) bool {
	return c.Also != nil && l.IsDuplicate() && c.Also(l)
}

// gathering writes the lines of the digests resolved again to the
// resolution's input (out) and the origins file, and notes the originals
// of the first numbering that stay (kept).
type gathering struct {
	log     *rewritelog.Log // since the first rewrite: where each line is now
	digests map[string]bool
	also    func(*manifest.Line) bool
	extra   extraOriginals
	res     *CollideResult
	kept    map[lineAt]bool
	out     *bufio.Writer
	origins *bufio.Writer
	buf     []byte
}

// numbered takes a line of the first numbering, read on digest.
func (g *gathering) numbered(l *manifest.Line) error {
	isExtra := g.extra.is(l)
	switch {
	case l.IsRevisit() && l.Digest == manifest.NoDigest:
		// Pins of every digest.
		return g.write(l)
	case !g.digests[l.Digest]:
		return nil
	case l.IsRevisit():
		return g.write(l)
	case isExtra:
		return g.again(l)
	case l.IsKept():
		if err := g.origin(l, originKept); err != nil {
			return err
		}
		g.kept[lineAt{l.File, l.Offset}] = true
		return nil
	case g.also(l):
		return g.again(l)
	}
	return nil // a duplicate: a revisit now, or in a file refused
}

// again writes l to be numbered again: kept apart, in an ARC file, or an
// original beyond its class's first.
func (g *gathering) again(l *manifest.Line) error {
	g.res.Apart++
	return g.origin(l, originAgain)
}

// origin writes l (a line of the first numbering) to be numbered again,
// at its offset now, noting where the hash stage found it and its class
// then.
func (g *gathering) origin(l *manifest.Line, role byte) error {
	was := *l
	if err := g.move(l); err != nil {
		return err
	}
	fmt.Fprintf(g.origins, "%s\t%d\t%d\t%d\t%d\t%c\n", l.File, l.Offset, was.Offset, was.Length, max(was.Class, 0), role)
	l.Fields, l.Class = 6, 0
	return g.write(l)
}

// move sets l's offset to where its record is now.
func (g *gathering) move(l *manifest.Line) error {
	name, err := manifest.UnescapeFile(l.File)
	if err != nil {
		return err
	}
	at, err := g.log.Move(name, l.Offset)
	if err != nil {
		return fmt.Errorf("%s offset %d: following it through the rewrite log: %w", l.File, l.Offset, err)
	}
	l.Offset = at
	return nil
}

func (g *gathering) write(l *manifest.Line) error {
	g.buf = l.Append(g.buf[:0])
	_, err := g.out.Write(g.buf)
	return err
}

// CollideBack carries what the collisions stages did back to the hash
// stage's offsets, where the job's other work files are: the revisits the
// second rewrite wrote (its saved.tsv, SavedNow, at the offsets then)
// into Saved, on file, which the account reads with saved.tsv; and the
// new numbering of the lines kept apart into Numbered (on digest, again
// sorted), so that the account and the job's records see each
// duplicate's original as it is. It may run again over its own output
// (a run killed in it): a line's new numbering depends on Collide only.
// Either half may be left out (SavedNow or Numbered ""): a cluster job
// carries each host's revisits back on its host, the numbering in its
// account.
//
// A numbering that changes no line of Numbered (the collisions stage
// numbered each line again as the first numbering had) leaves Numbered
// and ByFile as they are: the same lines sort to the same files.
type CollideBack struct {
	Origins, Collide, SavedNow string
	Saved, Numbered            string
	// ByFile, if not "", is Numbered on file, written anew with it. It
	// is written before Numbered, so that a run killed between the two
	// finds Numbered numbered as before and writes both again.
	ByFile string
	Sorter syssort.Sorter
}

// origin is a line of CollideOrigins: where the hash stage found the
// line, its class in the first numbering, and whether it was numbered
// again or is an original of the first numbering.
type origin struct {
	was   lineAt
	ext   int
	again bool
}

// renumbered is a line kept apart as the collisions stage numbered it.
type renumbered struct {
	ext, copy       int
	refURI, refDate string
}

// Run writes Saved and Numbered anew.
func (b *CollideBack) Run(ctx context.Context) error {
	origins, err := readOrigins(b.Origins)
	if err != nil {
		return err
	}
	if b.SavedNow != "" {
		if err := b.saved(ctx, origins); err != nil {
			return err
		}
	}
	if b.Numbered == "" {
		return nil
	}
	lines, digests, err := b.renumbering(origins)
	if err != nil {
		return err
	}
	if changed, err := b.changes(lines, digests); err != nil || !changed {
		return err
	}
	return b.numbered(ctx, lines, digests)
}

// changes reports whether the renumbering changes a line of Numbered, as
// numbered would find it, reading only the lines of the digests
// renumbered (the others it writes as they are): a renumbering that
// changes nothing, the usual one, leaves Numbered unread but for them.
func (b *CollideBack) changes(lines map[lineAt]renumbered, digests map[string]bool) (bool, error) {
	var group []manifest.Line
	was := map[lineAt]numbering{}
	changed := false
	flush := func() {
		if len(group) > 0 && renumber(group, was) {
			changed = true
		}
		group = group[:0]
		clear(was)
	}
	err := eachLineOf(b.Numbered, func(digest []byte) bool { return digests[string(digest)] }, func(l *manifest.Line) error {
		if len(group) > 0 && l.Digest != group[0].Digest {
			flush()
		}
		at := lineAt{l.File, l.Offset}
		was[at] = numbering{l.Class, l.Copy, l.RefURI, l.RefDate}
		if n, ok := lines[at]; ok && !l.IsRevisit() {
			l.Class, l.Copy, l.RefURI, l.RefDate = n.ext, n.copy, n.refURI, n.refDate
		}
		group = append(group, *l)
		return nil
	})
	flush()
	return changed, err
}

// numbering is a line's class, copy and Refers-To.
type numbering struct {
	class, copy     int
	refURI, refDate string
}

// renumber numbers the lines of a digest (see numbered), in place, and
// reports whether a line's numbering is now another than was has it (as
// read).
func renumber(group []manifest.Line, was map[lineAt]numbering) bool {
	// The classes in the order the comparing resolve founds them: by
	// their first line on date, file and offset.
	slices.SortFunc(group, func(a, b manifest.Line) int {
		return cmp.Or(strings.Compare(a.Date, b.Date), strings.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
	})
	exts := map[int]int{}
	for i := range group {
		l := &group[i]
		if l.IsRevisit() {
			continue
		}
		ext, ok := exts[l.Class]
		if !ok {
			ext = len(exts)
			exts[l.Class] = ext
		}
		l.Class = ext
	}
	slices.SortFunc(group, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) })
	ext, copies := manifest.RevisitClass, 0
	for i := range group {
		l := &group[i]
		if l.IsRevisit() {
			continue
		}
		if l.Class != ext {
			ext, copies = l.Class, 1
		}
		if l.Copy > 1 {
			copies++
			l.Copy = copies
		}
	}
	changed := false
	for i := range group {
		l := &group[i]
		if w := was[lineAt{l.File, l.Offset}]; w != (numbering{l.Class, l.Copy, l.RefURI, l.RefDate}) {
			changed = true
		}
	}
	return changed
}

// eachLineOf calls fn with each line of the manifest file name whose
// digest (field 6) take takes, parsed; the others are not parsed.
func eachLineOf(name string, take func(digest []byte) bool, fn func(*manifest.Line) error) error {
	f, err := gzfile.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 256<<10), 64<<20)
	sc.Split(manifest.ScanLines)
	n := 1
	for ; sc.Scan(); n++ {
		raw := sc.Bytes()
		if !take(manifest.Field(raw, 5)) {
			continue
		}
		l, err := manifest.Parse(raw)
		if err != nil {
			return fmt.Errorf("%s: line %d: %w", name, n, err)
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
	return scanErr(sc, name, n)
}

// scanErr is the error of a scan of the manifest file name stopped at
// its n-th line: a last line without its line feed named as the line.
func scanErr(sc *bufio.Scanner, name string, n int) error {
	err := sc.Err()
	switch {
	case errors.Is(err, manifest.ErrTruncated):
		return fmt.Errorf("%s: line %d: %w", name, n, err)
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// eachRawLine calls fn with each line of the manifest file name, as
// read; its errors name the file and line.
func eachRawLine(name string, fn func(raw []byte) error) error {
	f, err := gzfile.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 256<<10), 64<<20)
	sc.Split(manifest.ScanLines)
	n := 1
	for ; sc.Scan(); n++ {
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s: line %d: %w", name, n, err)
		}
	}
	return scanErr(sc, name, n)
}

// readOrigins reads CollideOrigins: each line numbered again and each
// original it was numbered with, where it is now, where the hash stage
// found it and its class then. A line of four fields (an earlier
// version's, of lines numbered again only) has class 0.
func readOrigins(name string) (map[lineAt]origin, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[lineAt]origin{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var file string
		var now, was, length int64
		o := origin{again: true}
		role := originAgain
		fields := strings.Split(sc.Text(), "\t")
		var err error
		switch len(fields) {
		case 4:
			_, err = fmt.Sscanf(sc.Text(), "%s\t%d\t%d\t%d", &file, &now, &was, &length)
		case 6:
			_, err = fmt.Sscanf(sc.Text(), "%s\t%d\t%d\t%d\t%d\t%c", &file, &now, &was, &length, &o.ext, &role)
		default:
			err = fmt.Errorf("%d fields, want 6", len(fields))
		}
		if err == nil && role != originAgain && role != originKept {
			err = fmt.Errorf("role %q", role)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, n, err)
		}
		o.again = role == originAgain
		o.was = lineAt{file, was}
		m[lineAt{file, now}] = o
	}
	return m, sc.Err()
}

// saved writes the second rewrite's revisits at the hash stage's offsets.
func (b *CollideBack) saved(ctx context.Context, origins map[lineAt]origin) error {
	in, err := OpenSaved(b.SavedNow)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := b.Saved + ".unsorted"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	bw := bufio.NewWriter(out)
	for {
		s, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Close()
			return err
		}
		o, ok := origins[lineAt{s.File, s.Offset}]
		if !ok || !o.again {
			out.Close()
			return fmt.Errorf("%s: %s offset %d is no line the collisions stage resolved", b.SavedNow, s.File, s.Offset)
		}
		fmt.Fprintf(bw, "%s\t%d\t%d\t%d\n", s.File, o.was.offset, s.Length, s.RevisitLength)
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return b.Sorter.Sort(ctx, manifest.ByFile.Command, []string{tmp}, b.Saved)
}

// renumbering reads the collisions stage's numbering: for each line
// numbered again (at the hash stage's offset), its class and copy in the
// job's numbering. A class of the collisions stage that holds an original
// of the first numbering is that class (its ext then); the others are
// classes of their own, numbered after the digest's classes of the first
// numbering in the order the collisions stage found them, as the
// comparing resolve numbers them.
func (b *CollideBack) renumbering(origins map[lineAt]origin) (map[lineAt]renumbered, map[string]bool, error) {
	f, err := gzfile.Open(b.Collide)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	in := manifest.NewReader(f, b.Collide)
	lines, digests := map[lineAt]renumbered{}, map[string]bool{}
	var digest string
	var first map[int]int     // the digest's classes holding an original of the first numbering: their ext then
	var last int              // the digest's largest ext in the first numbering
	var again []manifest.Line // the digest's lines numbered again
	flush := func() {
		fresh := map[int]int{}
		var news []int
		for _, l := range again {
			if _, ok := first[l.Class]; !ok {
				if _, ok := fresh[l.Class]; !ok {
					fresh[l.Class] = 0
					news = append(news, l.Class)
				}
			}
		}
		slices.Sort(news)
		for i, c := range news {
			fresh[c] = last + 1 + i
		}
		for _, l := range again {
			digests[l.Digest] = true
			ext, ok := first[l.Class]
			if !ok {
				ext = fresh[l.Class]
			}
			lines[origins[lineAt{l.File, l.Offset}].was] = renumbered{ext: ext, copy: l.Copy, refURI: l.RefURI, refDate: l.RefDate}
		}
		again = again[:0]
	}
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if l.Digest != digest {
			flush()
			digest, first, last = l.Digest, map[int]int{}, 0
		}
		if l.IsRevisit() {
			continue
		}
		o, ok := origins[lineAt{l.File, l.Offset}]
		if !ok {
			continue
		}
		last = max(last, o.ext)
		if o.again {
			again = append(again, l)
		} else if e, ok := first[l.Class]; !ok || o.ext < e {
			first[l.Class] = o.ext
		}
	}
	flush()
	return lines, digests, nil
}

// numbered writes Numbered with the lines numbered again renumbered, and
// the classes and copies of their digests numbered again as the comparing
// resolve numbers them: the classes in the order of their first line on
// date, file and offset; in each, its originals copy 1 and its duplicates
// 2, 3, ... in the order of the manifest. The job's numbering is then the
// one the comparing resolve gives, whatever order the collisions stage
// found the classes in.
func (b *CollideBack) numbered(ctx context.Context, lines map[lineAt]renumbered, digests map[string]bool) error {
	f, err := gzfile.Open(b.Numbered)
	if err != nil {
		return err
	}
	defer f.Close()
	in := manifest.NewReader(f, b.Numbered)
	tmp := b.Numbered + ".renumbered"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	bw := bufio.NewWriter(out)
	var buf []byte
	var group []manifest.Line // the lines of a digest renumbered
	// was is each renumbered line's numbering as read; changed is set
	// once a line is written numbered otherwise.
	was := map[lineAt]numbering{}
	changed := false
	flush := func() {
		if renumber(group, was) {
			changed = true
		}
		for i := range group {
			buf = group[i].Append(buf[:0])
			bw.Write(buf)
		}
		group = group[:0]
		clear(was)
	}
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Close()
			return err
		}
		if len(group) > 0 && l.Digest != group[0].Digest {
			flush()
		}
		at := lineAt{l.File, l.Offset}
		if digests[l.Digest] {
			was[at] = numbering{l.Class, l.Copy, l.RefURI, l.RefDate}
		}
		if n, ok := lines[at]; ok && !l.IsRevisit() {
			l.Class, l.Copy, l.RefURI, l.RefDate = n.ext, n.copy, n.refURI, n.refDate
		}
		if digests[l.Digest] {
			group = append(group, l)
			continue
		}
		buf = l.Append(buf[:0])
		bw.Write(buf)
	}
	flush()
	if err := bw.Flush(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if !changed {
		return nil
	}
	if b.ByFile != "" {
		if err := b.Sorter.Sort(ctx, manifest.ByFile.Command, []string{tmp}, b.ByFile); err != nil {
			return err
		}
	}
	return b.Sorter.Sort(ctx, manifest.ByDigest.Command, []string{tmp}, b.Numbered)
}
