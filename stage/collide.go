package stage

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

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
	// maps each line kept apart from where it is now back to where the
	// hash stage found it (CollideOrigin), for the account.
	Out, Origins string
	// Also names duplicates of the first numbering to number again
	// though the rewrite did not find them apart: those in files the
	// rewrite does not read (ARC: no revisit form), whose classes the
	// account reports.
	Also     func(l *manifest.Line) bool
	Messages Messages
	Meter    progress.Meter
}

// CollideResult is what a Collide did.
type CollideResult struct {
	Digests int64         `json:"digests"` // digests resolved again
	Apart   int64         `json:"apart"`   // lines kept apart by the rewrite
	Stats   collres.Stats `json:"stats"`
	Stale   []string      `json:"stale,omitempty"`
}

// Note says what a Collide did.
func (c *CollideResult) Note() string {
	return fmt.Sprintf("%s duplicates kept apart by the rewrite or in ARC files, in %s digests, resolved again byte for byte: %s collisions, %s classes kept apart by the policy, %s stale",
		progress.Count(c.Apart), progress.Count(c.Digests), progress.Count(c.Stats.Collisions), progress.Count(c.Stats.Split), progress.Count(c.Stats.Stale))
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
	sorted := input.Name() + "-sorted"
	defer os.Remove(sorted)
	if err := c.Sorter.Sort(ctx, manifest.ByDigest.Command, []string{input.Name()}, sorted); err != nil {
		return res, err
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

// lineAt names a record by file (as manifest field 1) and offset.
type lineAt struct {
	file   string
	offset int64
}

// gather writes the resolution's input (6-field responses at their
// offsets now, revisit lines as they are) and the origins, and returns
// the originals of the first numbering at their offsets now: a set as
// large as the lines of the digests resolved again, a small share of the
// collection's. The digests are those of the lines kept apart and those
// of the duplicates Also names, whose files the rewrite does not read.
func (c *Collide) gather(apartName string, out io.Writer, res *CollideResult) (map[lineAt]bool, error) {
	log, err := rewritelog.Open(c.Log)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	log.Since(c.LogFrom)
	move := func(l *manifest.Line) error {
		name, err := manifest.UnescapeFile(l.File)
		if err != nil {
			return err
		}
		at, err := log.Move(name, l.Offset)
		if err != nil {
			return fmt.Errorf("%s offset %d: following it through the rewrite log: %w", l.File, l.Offset, err)
		}
		l.Offset = at
		return nil
	}
	also := func(l *manifest.Line) bool { return c.Also != nil && l.IsDuplicate() && c.Also(l) }
	digests := map[string]bool{}
	if err := EachLine(apartName, func(l *manifest.Line) error {
		digests[l.Digest] = true
		return nil
	}); err != nil {
		return nil, err
	}
	if err := EachLine(c.Numbered, func(l *manifest.Line) error {
		if also(l) {
			digests[l.Digest] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	res.Digests = int64(len(digests))
	origins, err := atomicfile.Create(c.Origins, 0o644)
	if err != nil {
		return nil, err
	}
	defer origins.Abort()
	ow := bufio.NewWriter(origins)
	bw := bufio.NewWriter(out)
	var buf []byte
	write := func(l *manifest.Line) error {
		buf = l.Append(buf[:0])
		_, err := bw.Write(buf)
		return err
	}
	// resolveAgain writes a duplicate to be numbered again, noting where
	// the hash stage found it.
	resolveAgain := func(l *manifest.Line) error {
		was := *l
		if err := move(l); err != nil {
			return err
		}
		l.Fields, l.Class = 6, 0
		res.Apart++
		fmt.Fprintf(ow, "%s\t%d\t%d\t%d\n", l.File, l.Offset, was.Offset, was.Length)
		return write(l)
	}
	kept := map[lineAt]bool{}
	if len(digests) > 0 {
		err = EachLine(c.Numbered, func(l *manifest.Line) error {
			switch {
			case l.IsRevisit() && l.Digest == manifest.NoDigest:
				// Pins of every digest.
				return write(l)
			case !digests[l.Digest]:
				return nil
			case l.IsRevisit():
				return write(l)
			case l.IsKept():
				if err := move(l); err != nil {
					return err
				}
				kept[lineAt{l.File, l.Offset}] = true
				l.Fields, l.Class = 6, 0
				return write(l)
			case also(l):
				return resolveAgain(l)
			}
			return nil // a duplicate: a revisit now, or in a file refused
		})
		if err == nil {
			err = EachLine(apartName, resolveAgain)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if err := ow.Flush(); err != nil {
		return nil, err
	}
	return kept, origins.CommitRenamed()
}

// CollideBack carries what the collisions stages did back to the hash
// stage's offsets, where the job's other work files are: the revisits the
// second rewrite wrote (its saved.tsv, SavedNow, at the offsets then)
// into Saved, on file, which the account reads with saved.tsv; and the
// new numbering of the lines kept apart into Numbered (on digest, again
// sorted), so that the account and the job's records see each
// duplicate's original as it is. It may run again over its own output
// (a run killed in it): a line's new numbering depends on Collide only.
type CollideBack struct {
	Origins, Collide, SavedNow string
	Saved, Numbered            string
	Sorter                     syssort.Sorter
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
	if err := b.saved(ctx, origins); err != nil {
		return err
	}
	lines, err := b.renumbering(origins)
	if err != nil {
		return err
	}
	return b.numbered(ctx, lines)
}

// readOrigins reads CollideOrigins: each line kept apart, where it is now
// and where the hash stage found it.
func readOrigins(name string) (map[lineAt]lineAt, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[lineAt]lineAt{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var file string
		var now, was, length int64
		if _, err := fmt.Sscanf(sc.Text(), "%s\t%d\t%d\t%d", &file, &now, &was, &length); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, n, err)
		}
		m[lineAt{file, now}] = lineAt{file, was}
	}
	return m, sc.Err()
}

// saved writes the second rewrite's revisits at the hash stage's offsets.
func (b *CollideBack) saved(ctx context.Context, origins map[lineAt]lineAt) error {
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
		was, ok := origins[lineAt{s.File, s.Offset}]
		if !ok {
			out.Close()
			return fmt.Errorf("%s: %s offset %d is no line the collisions stage resolved", b.SavedNow, s.File, s.Offset)
		}
		fmt.Fprintf(bw, "%s\t%d\t%d\t%d\n", s.File, was.offset, s.Length, s.RevisitLength)
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

// renumbering reads the collisions stage's numbering: for each line kept
// apart (at the hash stage's offset), its class and copy in the job's
// numbering. A line whose original is one of the first numbering's (a
// line of the digest Collide has that is not one kept apart) joins that
// class, ext 0; the others, classes of their own, ext 1 and on.
func (b *CollideBack) renumbering(origins map[lineAt]lineAt) (map[lineAt]renumbered, error) {
	f, err := gzfile.Open(b.Collide)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in := manifest.NewReader(f, b.Collide)
	lines := map[lineAt]renumbered{}
	type capture struct{ uri, date string }
	var digest string
	var first map[capture]bool // the digest's originals of the first numbering
	var apart []manifest.Line  // the digest's lines kept apart
	flush := func() {
		for _, l := range apart {
			was := origins[lineAt{l.File, l.Offset}]
			n := renumbered{ext: 1 + l.Class, copy: l.Copy, refURI: l.RefURI, refDate: l.RefDate}
			if l.Copy > 1 && first[capture{l.RefURI, l.RefDate}] {
				n.ext = 0
			}
			lines[was] = n
		}
		apart = apart[:0]
	}
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if l.Digest != digest {
			flush()
			digest, first = l.Digest, map[capture]bool{}
		}
		if l.IsRevisit() {
			continue
		}
		if _, ok := origins[lineAt{l.File, l.Offset}]; ok {
			apart = append(apart, l)
		} else if l.IsKept() {
			first[capture{l.URI, l.Date}] = true
		}
	}
	flush()
	return lines, nil
}

// numbered writes Numbered with the lines kept apart renumbered.
func (b *CollideBack) numbered(ctx context.Context, lines map[lineAt]renumbered) error {
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
	for {
		l, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Close()
			return err
		}
		if n, ok := lines[lineAt{l.File, l.Offset}]; ok && !l.IsRevisit() {
			l.Class, l.Copy, l.RefURI, l.RefDate = n.ext, n.copy, n.refURI, n.refDate
		}
		buf = l.Append(buf[:0])
		bw.Write(buf)
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return b.Sorter.Sort(ctx, manifest.ByDigest.Command, []string{tmp}, b.Numbered)
}
