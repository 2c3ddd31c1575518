package refs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/inplace"
	"warcdedup/internal/rewritetest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/revisit"
	"warcdedup/scripts/gen"
	"warcdedup/source"
)

// lieCfg is the collection the lying manifests are told about: a plain
// WARC/1.0 file, a WARC/1.0 .gz file and a WARC/1.1 .gz file, with
// request, revisit and other non-candidate records between the responses,
// and replay variants, so that digests have two payload classes.
var lieCfg = gen.Config{Files: 3, Records: 120, DupRate: 0.5, Seed: 61, MeanPayload: 3 << 10, NonCandidates: true,
	ReplayVariants: 0.15, Formats: []gen.Format{gen.WARC10, gen.WARC10Gz, gen.WARC11Gz}}

// lieSetup is the collection, its correct numbered manifest, and what a
// complete run of that manifest makes of it.
type lieSetup struct {
	c         *coll
	ref       map[string][]byte // every file after the complete run
	rewritten map[string]bool   // recKey of each record the complete run made a revisit
	classes   []lieClass        // the payload classes, in manifest order
}

// lieClass is one (digest, ext) class of the correct manifest.
type lieClass struct {
	kept []manifest.Line // copy 1, the original first
	dups []manifest.Line // copy > 1
}

func newLieSetup(t *testing.T) *lieSetup {
	t.Helper()
	c := generate(t, lieCfg)
	s := &lieSetup{c: c, rewritten: map[string]bool{}}
	dir := t.TempDir()
	rewritetest.CopyDir(t, c.dir, dir)
	o := mustRun(t, Rewriter{Roots: []string{dir}, InPlace: true}, c.lines)
	s.ref = regularFiles(t, dir)
	if v := violations(t, warcsumDirs(t, c.dir), warcsumDirs(t, dir)); len(v) > 0 {
		t.Fatalf("the correct manifest's run: %v", v)
	}
	for _, e := range o.log {
		s.rewritten[recKey(e.File, e.OldOffset)] = true
	}
	type ck struct {
		digest string
		ext    int
	}
	index := map[ck]int{}
	for _, l := range c.all {
		if l.IsRevisit() {
			continue
		}
		k := ck{l.Digest, l.Class}
		i, ok := index[k]
		if !ok {
			i = len(s.classes)
			index[k] = i
			s.classes = append(s.classes, lieClass{})
		}
		if l.IsKept() {
			s.classes[i].kept = append(s.classes[i].kept, l)
		} else {
			s.classes[i].dups = append(s.classes[i].dups, l)
		}
	}
	return s
}

// class returns the first class with one kept record and at least minDups
// duplicates, each of which the complete run made a revisit, that ok
// accepts (nil: any).
func (s *lieSetup) class(t *testing.T, minDups int, ok func(c *lieClass) bool) *lieClass {
	t.Helper()
	return s.classExcept(t, minDups, nil, ok)
}

// classExcept is class, skipping the class not.
func (s *lieSetup) classExcept(t *testing.T, minDups int, not *lieClass, ok func(c *lieClass) bool) *lieClass {
	t.Helper()
	for i := range s.classes {
		c := &s.classes[i]
		if c == not || len(c.kept) != 1 || len(c.dups) < minDups || c.kept[0].Digest == not.digest() {
			continue
		}
		all := true
		for _, d := range c.dups {
			all = all && s.rewritten[recKey(d.File, d.Offset)]
		}
		if all && (ok == nil || ok(c)) {
			return c
		}
	}
	t.Fatalf("no class of the collection fits the case")
	return nil
}

func (c *lieClass) digest() string {
	if c == nil {
		return ""
	}
	return c.kept[0].Digest
}

// members are the class's lines, kept first.
func (c *lieClass) members() []manifest.Line { return append(slices.Clone(c.kept), c.dups...) }

// at returns the line of m naming the record of l (file, offset, digest),
// not a revisit line.
func at(t *testing.T, m []manifest.Line, l manifest.Line) *manifest.Line {
	t.Helper()
	for i := range m {
		if !m[i].IsRevisit() && m[i].File == l.File && m[i].Offset == l.Offset && m[i].Digest == l.Digest {
			return &m[i]
		}
	}
	t.Fatalf("no line names %s", l.String())
	return nil
}

// refer makes l a duplicate naming the URI and date of o.
func refer(l *manifest.Line, o manifest.Line) {
	if l.Copy < 2 {
		l.Copy = 2
	}
	l.RefURI, l.RefDate = o.URI, o.Date
}

// keep makes l a kept line.
func keep(l *manifest.Line) { l.Copy, l.RefURI, l.RefDate = 1, "-", "-" }

// without returns m without the lines naming the record of l.
func without(m []manifest.Line, l manifest.Line) []manifest.Line {
	return slices.DeleteFunc(m, func(x manifest.Line) bool {
		return !x.IsRevisit() && x.File == l.File && x.Offset == l.Offset && x.Digest == l.Digest
	})
}

// told is what a lie case tells warcrefs, and what must become of it.
type told struct {
	lies []manifest.Line // the lying numbered manifest: the input and the originals
	// victims are lines of lies whose files (field 1) must be refused,
	// each at its first victim line.
	victims []manifest.Line
	input   []manifest.Line // if set, the input instead of lies
	loc     *source.Locator // if set, where originals are read instead of the copy
	altered []string        // files whose rewrite is not the complete run's: checked record by record
	policy  policy.Policy   // of the run
	lying   []manifest.Line // the lines that lie, if not the victims
}

// lieCase is one way a manifest lies.
type lieCase struct {
	name string
	// tell makes the lie from m, a copy of the correct numbered manifest,
	// and may change the copy of the collection in dir or move files of it
	// to remote (which the run does not reach as a root).
	tell func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told
	// want is the reason each victim's file is refused; wantRun, if set,
	// the error that stops the run before anything is written instead.
	want, wantRun error
	// orWhole, if set, are the reasons that may refuse a victim's whole
	// file instead of want: the lie names a file twice, and which name is
	// rewritten first depends on the order the workers reach them (both
	// at once: the file named twice; the other name's rewrite done
	// first: the file is no longer the version the log's replacement of
	// it left).
	orWhole []error
	// old is what warcrefs before the originals check (commit 66a8c35)
	// did with the manifest's duplicate lines; checked when
	// WARCDEDUP_OLD_WARCREFS names that warcrefs binary.
	old oldOutcome
}

// oldOutcome is what the warcrefs before the rebuild did with a lie.
type oldOutcome string

const (
	// oldLost: warcsumcmp or the record-by-record check finds a loss.
	oldLost oldOutcome = "lost data"
	// oldAccepted: it rewrote a lying line, and nothing is lost by bytes
	// (a revisit may replay differently, which warcsumcmp cannot see).
	oldAccepted oldOutcome = "accepted the lie without a loss warcsumcmp sees"
	// oldRefused: it rewrote no lying line.
	oldRefused oldOutcome = "refused the lie"
)

// lieCases are the lies of issue 8 and more.
var lieCases = []lieCase{
	{name: "self-reference: a duplicate naming its own URI and date", want: originals.ErrNoOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			d := s.class(t, 1, nil).dups[0]
			refer(at(t, m, d), d)
			return told{lies: m, victims: []manifest.Line{d}}
		}},
	{name: "self-reference, with a kept line of its URI and date", want: originals.ErrSelfReference, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			d := c.dups[0]
			refer(at(t, m, d), d)
			fake := c.kept[0]
			fake.URI, fake.Date = d.URI, d.Date
			return told{lies: append(m, fake), victims: []manifest.Line{d}}
		}},
	{name: "two-record cycle: the original and a duplicate name each other", want: originals.ErrNoOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			refer(at(t, m, c.kept[0]), c.dups[0])
			return told{lies: m, victims: c.members()}
		}},
	{name: "two-record cycle between duplicates", want: originals.ErrNoOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 2, nil)
			refer(at(t, m, c.dups[0]), c.dups[1])
			refer(at(t, m, c.dups[1]), c.dups[0])
			return told{lies: m, victims: c.dups[:2]}
		}},
	{name: "three-record cycle", want: originals.ErrNoOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 2, nil)
			refer(at(t, m, c.kept[0]), c.dups[0])
			refer(at(t, m, c.dups[0]), c.dups[1])
			refer(at(t, m, c.dups[1]), c.kept[0])
			return told{lies: m, victims: c.members()}
		}},
	{name: "the original left out", want: originals.ErrNoOriginal, old: oldAccepted,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			return told{lies: without(m, c.kept[0]), victims: c.dups}
		}},
	{name: "every record of the class a duplicate: the original demoted", want: originals.ErrNoOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			k := at(t, m, c.kept[0])
			k.Copy, k.RefURI, k.RefDate = 2, "http://example.invalid/none", k.Date
			return told{lies: m, victims: c.members()}
		}},
	{name: "a reference to a URI and date no record of the class has", want: originals.ErrNoOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			d := s.class(t, 1, nil).dups[0]
			at(t, m, d).RefDate = "1999-12-31T23:59:59Z"
			return told{lies: m, victims: []manifest.Line{d}}
		}},
	{name: "a reference to a kept line whose record has another URI", want: originals.ErrOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			fake := c.kept[0]
			fake.URI = "http://example.invalid/elsewhere"
			refer(at(t, m, c.dups[0]), fake)
			return told{lies: append(m, fake), victims: c.dups[:1]}
		}},
	{name: "a reference to a kept line whose record has another date", want: originals.ErrOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			// The original, read and kept in memory for the other
			// duplicates, must be checked against this line too.
			c := s.class(t, 2, nil)
			fake := c.kept[0]
			fake.Date = "2001-01-01T00:00:00Z"
			refer(at(t, m, c.dups[len(c.dups)-1]), fake)
			return told{lies: append(m, fake), victims: c.dups[len(c.dups)-1:]}
		}},
	{name: "a reference to the original of another class of the digest", want: originals.ErrNoOriginal, old: oldAccepted,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			d, other := s.otherExt(t)
			refer(at(t, m, d), other)
			return told{lies: m, victims: []manifest.Line{d}}
		}},
	{name: "a reference to the original of another class of the digest, the line's ext changed to match", want: ErrNotEquivalent, old: oldAccepted,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			d, other := s.otherExt(t)
			l := at(t, m, d)
			refer(l, other)
			l.Class = other.Class
			return told{lies: m, victims: []manifest.Line{d}}
		}},
	{name: "a reference to the original of another digest", want: originals.ErrNoOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			other := s.classExcept(t, 0, c, nil).kept[0]
			refer(at(t, m, c.dups[0]), other)
			return told{lies: m, victims: c.dups[:1]}
		}},
	{name: "a reference to the original of another digest, the line's digest changed to match", want: manifest.ErrDigestMismatch, old: oldRefused,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			other := s.classExcept(t, 0, c, nil).kept[0]
			l := at(t, m, c.dups[0])
			refer(l, other)
			l.Digest, l.Class = other.Digest, other.Class
			// The payload policy, so that the digest is what tells them
			// apart, not their headers.
			return told{lies: m, victims: c.dups[:1], policy: policy.Payload}
		}},
	{name: "swapped references between two classes", want: originals.ErrNoOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			e := s.classExcept(t, 1, c, nil)
			a, b := at(t, m, c.dups[0]), at(t, m, e.dups[0])
			a.RefURI, b.RefURI = b.RefURI, a.RefURI
			a.RefDate, b.RefDate = b.RefDate, a.RefDate
			return told{lies: m, victims: []manifest.Line{c.dups[0], e.dups[0]}}
		}},
	{name: "the original listed as a duplicate too", want: originals.ErrIsOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 2, nil)
			again := c.kept[0]
			refer(&again, c.dups[0])
			keep(at(t, m, c.dups[0]))
			return told{lies: append(m, again), victims: []manifest.Line{again}, altered: []string{c.dups[0].File}}
		}},
	{name: "the original listed as a duplicate too, under another spelling of its file name", want: originals.ErrIsOriginal, orWhole: []error{inplace.ErrNamedTwice, inplace.ErrNotLogged}, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			// A duplicate in a file rewritten before the original's
			// (names sort so): it becomes a revisit of the original while
			// that is still a response.
			c := s.class(t, 2, func(c *lieClass) bool {
				return slices.ContainsFunc(c.dups, func(d manifest.Line) bool { return d.File < c.kept[0].File })
			})
			again := c.kept[0]
			again.File = aliasName(again.File)
			promoted := c.dups[len(c.dups)-1]
			refer(&again, promoted)
			keep(at(t, m, promoted))
			return told{lies: append(m, again), victims: []manifest.Line{again}, altered: []string{promoted.File}}
		}},
	{name: "the original listed as a duplicate too, through a symbolic link to its file", want: originals.ErrIsOriginal, orWhole: []error{inplace.ErrNamedTwice, inplace.ErrNotLogged}, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 2, func(c *lieClass) bool {
				return slices.ContainsFunc(c.dups, func(d manifest.Line) bool { return d.File < c.kept[0].File })
			})
			again := c.kept[0]
			again.File = "zz-link-" + again.File
			if err := os.Symlink(c.kept[0].File, filepath.Join(dir, again.File)); err != nil {
				t.Fatal(err)
			}
			promoted := c.dups[len(c.dups)-1]
			refer(&again, promoted)
			keep(at(t, m, promoted))
			return told{lies: append(m, again), victims: []manifest.Line{again}, altered: []string{promoted.File}}
		}},
	{name: "the original listed as a duplicate too, under another digest algorithm", wantRun: errMixedAlgorithms, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 2, func(c *lieClass) bool {
				return slices.ContainsFunc(c.dups, func(d manifest.Line) bool { return d.File < c.kept[0].File })
			})
			// The original named again, as a SHA-256 duplicate of another
			// record of its class that a SHA-256 line keeps.
			promoted := c.dups[len(c.dups)-1]
			sum := rewritetest.FormatDigest(digest.SHA256, payloadOf(t, dir, &c.kept[0]))
			again, other := c.kept[0], promoted
			again.Digest, other.Digest = sum, sum
			refer(&again, promoted)
			keep(&other)
			m = without(m, promoted)
			return told{lies: append(m, again, other), lying: []manifest.Line{again}}
		}},
	{name: "a kept line at the offset of the request record before its response", want: originals.ErrOriginal, old: oldAccepted,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			k := at(t, m, c.kept[0])
			recs := recordsOf(t, filepath.Join(dir, k.File))
			for i := 1; i < len(recs); i++ {
				if recs[i].Offset == k.Offset && recs[i-1].Type == "request" {
					k.Offset, k.Length = recs[i-1].Offset, recs[i-1].Length
					return told{lies: m, victims: c.dups}
				}
			}
			t.Fatalf("no request record before %s", k)
			return told{}
		}},
	{name: "a kept line naming a revisit record, the duplicates referring to it", want: originals.ErrOriginal, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			k := at(t, m, c.kept[0])
			for _, name := range s.c.res.Names {
				for _, r := range recordsOf(t, filepath.Join(dir, name)) {
					if r.Type == "revisit" {
						k.File, k.Offset, k.Length = name, r.Offset, r.Length
						k.URI, k.Date = manifest.URIField(r), manifest.DateField(r)
						for _, d := range c.dups {
							refer(at(t, m, d), *k)
						}
						return told{lies: m, victims: c.dups}
					}
				}
			}
			t.Fatal("no revisit record in the collection")
			return told{}
		}},
	{name: "a kept line at an offset inside its record", want: originals.ErrOriginal, old: oldAccepted,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			c := s.class(t, 1, nil)
			at(t, m, c.kept[0]).Offset += 7
			return told{lies: m, victims: c.dups}
		}},
	{name: "originals on a storage host that is down", want: originals.ErrOriginal, old: oldAccepted,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			// The last file is only on the storage host; every duplicate
			// whose original is in it must be refused.
			away := s.c.res.Names[len(s.c.res.Names)-1]
			if err := os.Rename(filepath.Join(dir, away), filepath.Join(remote, away)); err != nil {
				t.Fatal(err)
			}
			inAway := map[string]bool{}
			for _, l := range m {
				if l.IsKept() && l.File == away {
					inAway[fmt.Sprint(l.Digest, l.Class, l.URI, l.Date)] = true
				}
			}
			var input, victims []manifest.Line
			for _, l := range m {
				if l.File == away {
					continue
				}
				input = append(input, l)
				if l.IsDuplicate() && inAway[fmt.Sprint(l.Digest, l.Class, l.RefURI, l.RefDate)] {
					victims = append(victims, l)
				}
			}
			return told{lies: m, input: input, victims: victims,
				loc: &source.Locator{Roots: []string{dir}, URLTemplate: closedPortURL(t), HTTP: fastHTTP()}}
		}},
	{name: "an original whose file changed since the manifest was made", want: ErrPayloadDiffers, old: oldLost,
		tell: func(t *testing.T, s *lieSetup, dir, remote string, m []manifest.Line) told {
			// An original in the plain file, one byte of its payload
			// changed: a duplicate is now its only copy.
			c := s.class(t, 1, func(c *lieClass) bool {
				return !strings.HasSuffix(c.kept[0].File, ".gz") && !slices.ContainsFunc(c.dups, func(d manifest.Line) bool { return d.File == c.kept[0].File })
			})
			k := c.kept[0]
			p := filepath.Join(dir, k.File)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data[k.Offset+k.Length-4-10] ^= 1 // the record ends with its payload and CRLF CRLF
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return told{lies: m, victims: c.dups, altered: []string{k.File}}
		}},
}

// otherExt returns a duplicate of a class and the original of another
// class of the same digest.
func (s *lieSetup) otherExt(t *testing.T) (manifest.Line, manifest.Line) {
	t.Helper()
	for i := range s.classes {
		a := &s.classes[i]
		if len(a.dups) == 0 || !s.rewritten[recKey(a.dups[0].File, a.dups[0].Offset)] {
			continue
		}
		for j := range s.classes {
			b := &s.classes[j]
			if i != j && b.kept[0].Digest == a.kept[0].Digest {
				return a.dups[0], b.kept[0]
			}
		}
	}
	t.Fatal("no digest of the collection has two classes")
	return manifest.Line{}, manifest.Line{}
}

// TestLyingManifests gives warcrefs numbered manifests that lie about which
// record is whose original, each lie as both the input and the originals
// manifest, and checks that the files the lie touches are refused (a
// *inplace.RefusedError wrapping the reason, at the first lying line) and left
// exactly as they were (same bytes, inode and modification time), that no
// temporary file is left, that every other file is rewritten as the
// correct manifest rewrites it, and that warcsumcmp finds nothing lost.
//
// With WARCDEDUP_OLD_WARCREFS naming the warcrefs binary built from commit
// 66a8c35 (before it checked originals), each manifest's duplicate lines
// are also given to it, and whether it lost data is checked against the
// case's old.
func TestLyingManifests(t *testing.T) {
	s := newLieSetup(t)
	for _, tc := range lieCases {
		for _, jobs := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s, %d jobs", tc.name, jobs), func(t *testing.T) {
				t.Parallel()
				s.runLie(t, tc, jobs)
			})
		}
		if old := os.Getenv("WARCDEDUP_OLD_WARCREFS"); old != "" {
			t.Run(tc.name+", warcrefs before the rebuild", func(t *testing.T) {
				t.Parallel()
				s.runOld(t, tc, old)
			})
		}
	}
}

func (s *lieSetup) runLie(t *testing.T, tc lieCase, jobs int) {
	dir, remote := t.TempDir(), t.TempDir()
	rewritetest.CopyDir(t, s.c.dir, dir)
	lie := tc.tell(t, s, dir, remote, slices.Clone(s.c.all))
	input := lie.input
	if input == nil {
		input = lie.lies
	}
	before := regularFiles(t, dir)
	elsewhere := regularFiles(t, remote)
	ids := statFiles(t, dir, before)
	sumBefore := warcsumDirs(t, dir, remote)

	loc := lie.loc
	if loc == nil {
		loc = &source.Locator{Roots: []string{dir}}
	}
	tl := newTestLog()
	orig, err := originals.New(loc, tableOf(t, lie.lies, "originals.manifest"))
	var o *outcome
	if err == nil {
		rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: jobs, Originals: orig, Policy: lie.policy}
		o = runLogged(t, rw, byFileOrder(input), lie.lies, tl)
		err = o.err
	}
	after := regularFiles(t, dir)
	if tf := rewritetest.TempFiles(t, dir); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
	if v := violations(t, sumBefore, warcsumDirs(t, dir, remote)); len(v) > 0 {
		t.Errorf("warcsumcmp: %d violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	_, _, problems := nothingLost(before, after, elsewhere)
	for _, p := range problems {
		t.Errorf("record by record: %s", p)
	}

	if tc.wantRun != nil {
		if !errors.Is(err, tc.wantRun) {
			t.Fatalf("the run: %v, want it stopped by %q", err, tc.wantRun)
		}
		for name := range before {
			if why := ids[name].untouched(filepath.Join(dir, name)); why != "" || !bytes.Equal(after[name], before[name]) {
				t.Errorf("%s changed by a run that stopped (%s)", name, why)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("Run: %v (a refusal must not stop the run)", err)
	}

	// The victims' files refused at their first lying line, for the
	// reason wanted; no other file refused.
	victimFiles := map[string]bool{}
	for _, v := range lie.victims {
		victimFiles[v.File] = true
	}
	refused := refusedFiles(t, o)
	for _, f := range sortedKeys(victimFiles) {
		re := refused[f]
		first := firstLine(lie.victims, f)
		switch {
		case re == nil:
			t.Errorf("%s was not refused (its line %s lies)", f, first)
		case re.Offset == -1 && slices.ContainsFunc(tc.orWhole, func(e error) bool { return errors.Is(re, e) }):
		case re.Offset != first.Offset:
			t.Errorf("%s refused at offset %d, want %d: %v", f, re.Offset, first.Offset, re)
		case !errors.Is(re, tc.want):
			t.Errorf("refusal %q does not wrap %q", re, tc.want)
		case !strings.Contains(re.Error(), f) || !strings.Contains(re.Error(), fmt.Sprintf("offset %d", first.Offset)):
			t.Errorf("refusal %q does not name the file and offset", re)
		}
	}
	for f, re := range refused {
		if !victimFiles[f] {
			t.Errorf("%s refused, though the lie is not in it: %v", f, re)
		}
	}
	if o.stats.Refused != int64(len(victimFiles)) {
		t.Errorf("stats %+v, want %d refused", o.stats, len(victimFiles))
	}

	// Refused files untouched; the others as the correct manifest makes
	// them, or checked record by record where the lie changed what is
	// right for them.
	inInput := map[string]bool{}
	for _, l := range input {
		inInput[l.File] = true
	}
	for _, name := range sortedKeys(before) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		switch {
		case victimFiles[name]:
			if why := ids[name].untouched(path); why != "" || !bytes.Equal(after[name], before[name]) {
				t.Errorf("%s was refused but changed (%s)", name, why)
			}
		case slices.Contains(lie.altered, name):
			if bytes.Equal(after[name], before[name]) {
				t.Errorf("%s was not rewritten", name)
			}
		case inInput[name] && !bytes.Equal(after[name], s.ref[name]):
			t.Errorf("%s is not what the correct manifest makes of it (%d bytes, want %d)", name, len(after[name]), len(s.ref[name]))
		}
	}
	for _, e := range o.log {
		if victimFiles[e.File] {
			t.Errorf("log entry %+v of a refused file", e)
		}
	}
	checkLogEntries(t, o, after)
}

// checkLogEntries checks that each log entry of a run names the revisit
// its file now has at the new offset: its length, payload digest and
// Refers-To URI and date, which a CDX index is updated with. A file
// rewritten twice in the run, under two names (field 1) of it, has only the
// entries of its last rewrite checked: the earlier ones name offsets of
// the version in between.
func checkLogEntries(t testing.TB, o *outcome, after map[string][]byte) {
	t.Helper()
	last := map[string]string{} // file -> field 1 of its last rewrite
	for _, f := range o.files {
		name, err := manifest.UnescapeFile(f.File)
		if err != nil {
			t.Errorf("log: %q: %v", f.File, err)
		}
		last[name] = f.File
	}
	for _, e := range o.log {
		name, err := manifest.UnescapeFile(e.File)
		if err != nil || last[name] != e.File {
			continue
		}
		data := after[name]
		if e.NewOffset+e.NewLength > int64(len(data)) {
			t.Errorf("log entry %+v: beyond the end of %s (%d bytes)", e, e.File, len(data))
			continue
		}
		r, _, err := readRecord(data[e.NewOffset : e.NewOffset+e.NewLength])
		if err != nil {
			t.Errorf("log entry %+v: %v", e, err)
			continue
		}
		if r.Type != "revisit" || revisit.RefersURI(r) != e.RefersToURI || manifest.EscapeField(r.Header.Get("WARC-Refers-To-Date")) != e.RefersTo ||
			r.Header.Get("WARC-Payload-Digest") != e.PayloadDigest {
			t.Errorf("log entry %+v: the record there is a %s referring to %s %s with digest %s", e, r.Type,
				revisit.RefersURI(r), r.Header.Get("WARC-Refers-To-Date"), r.Header.Get("WARC-Payload-Digest"))
		}
	}
}

// runOld gives the case's duplicate lines to the warcrefs of commit 66a8c35
// (--in-place, no originals manifest) and checks whether it lost data as
// the case says.
func (s *lieSetup) runOld(t *testing.T, tc lieCase, bin string) {
	// Not t.TempDir(): the test's name holds commas, at which that
	// warcrefs splits --root.
	top, err := os.MkdirTemp("", "old-warcrefs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	dir, remote := filepath.Join(top, "coll"), filepath.Join(top, "remote")
	os.Mkdir(remote, 0o755)
	rewritetest.CopyDir(t, s.c.dir, dir)
	lie := tc.tell(t, s, dir, remote, slices.Clone(s.c.all))
	input := lie.input
	if input == nil {
		input = lie.lies
	}
	// Files only on a storage host are where the old warcrefs never looks.
	before := regularFiles(t, dir)
	elsewhere := regularFiles(t, remote)
	sumBefore := warcsumDirs(t, dir, remote)
	mf := writeManifest(t, byFileOrder(duplicatesOnly(input)))
	logFile := filepath.Join(top, "rewrite.log")
	out, err := exec.Command(bin, "--in-place", "--root", dir, "-i", mf, "-j", "1", "--log", logFile).CombinedOutput()
	v := violations(t, sumBefore, warcsumDirs(t, dir, remote))
	rewritten, revisits, problems := nothingLost(before, regularFiles(t, dir), elsewhere)
	t.Logf("old warcrefs: %v; %d files rewritten, %d revisits; %d violations, %d record problems\n%s",
		err, len(rewritten), revisits, len(v), len(problems), out)
	for _, x := range append(v, problems...) {
		t.Logf("  %s", x)
	}
	logText, _ := os.ReadFile(logFile)
	done := map[string]bool{}
	for _, line := range strings.Split(string(logText), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && !strings.HasPrefix(line, "#") {
			done[f[0]+" "+f[1]] = true
		}
	}
	lying := lie.lying
	if lying == nil {
		lying = lie.victims
	}
	got := oldRefused
	switch {
	case len(v) > 0 || len(problems) > 0:
		got = oldLost
	case slices.ContainsFunc(lying, func(l manifest.Line) bool { return done[recKey(l.File, l.Offset)] }):
		got = oldAccepted
	}
	t.Logf("old warcrefs: %s", got)
	if got != tc.old {
		t.Errorf("the old warcrefs %s; the case says it %s", got, tc.old)
	}
}

// errMixedAlgorithms is what a manifest of originals mixing digest
// algorithms must be refused with.
var errMixedAlgorithms = originals.ErrMixedAlgorithms
