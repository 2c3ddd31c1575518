package refs

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/rewritetest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/source"
)

// hostileConfigs are the collections the property test lies about: every
// WARC format, cross-file duplicates, request, revisit and other
// non-candidate records, replay variants (digests of two classes), URIs
// with spaces and <...>, chunked payloads.
var hostileConfigs = []gen.Config{
	{Files: 4, Records: 80, DupRate: 0.5, MeanPayload: 2 << 10, NonCandidates: true, ReplayVariants: 0.1,
		Quirks: true, Chunked: 0.1, Formats: warcFormats},
	{Files: 3, Records: 60, DupRate: 0.6, MeanPayload: 2 << 10, NonCandidates: true, SameURL: 0.7,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}},
}

// hostileColl is a collection of the property test and what is known of
// it before any run.
type hostileColl struct {
	*coll
	files  map[string][]byte
	before []byte // its warcsum manifest
	// pins are the (digest, refuri, refdate) of its revisit lines, and
	// pinned the records ("file offset") they refer to.
	pins   map[string]bool
	pinned map[string]bool
}

func newHostileColl(t *testing.T, cfg gen.Config) *hostileColl {
	t.Helper()
	h := &hostileColl{coll: generate(t, cfg), pins: map[string]bool{}, pinned: map[string]bool{}}
	h.files = regularFiles(t, h.dir)
	h.before = warcsumDirs(t, h.dir)
	var p manifest.Pins
	for _, l := range h.all {
		if l.IsRevisit() {
			h.pins[pinKey(&l)] = true
			p.Add(&l)
		}
	}
	for _, l := range h.all {
		if !l.IsRevisit() && p.Has(l.URI, l.Date) {
			h.pinned[recKey(l.File, l.Offset)] = true
		}
	}
	return h
}

func pinKey(l *manifest.Line) string { return l.Digest + " " + l.RefURI + " " + l.RefDate }

// mutation is one way of making a numbered manifest lie; apply returns
// false when the manifest has nothing it applies to.
type mutation struct {
	name  string
	apply func(m *mutant) bool
}

// mutant is a manifest being made to lie.
type mutant struct {
	r       *rand.Rand
	c       *hostileColl
	lines   []manifest.Line
	reorder bool // two lines of one file swapped in the input
}

// pick returns a random line that ok accepts, or nil.
func (m *mutant) pick(ok func(*manifest.Line) bool) *manifest.Line {
	var idx []int
	for i := range m.lines {
		if ok(&m.lines[i]) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	return &m.lines[idx[m.r.IntN(len(idx))]]
}

func isResponse(l *manifest.Line) bool { return !l.IsRevisit() }
func isKept(l *manifest.Line) bool     { return l.IsKept() }
func isDup(l *manifest.Line) bool      { return l.IsDuplicate() }
func isRevisit(l *manifest.Line) bool  { return l.IsRevisit() }
func anyLine(*manifest.Line) bool      { return true }

// class returns the response lines of l's digest and ext, l first.
func (m *mutant) class(l *manifest.Line) []*manifest.Line {
	out := []*manifest.Line{l}
	for i := range m.lines {
		o := &m.lines[i]
		if o != l && !o.IsRevisit() && o.Digest == l.Digest && o.Class == l.Class {
			out = append(out, o)
		}
	}
	return out
}

func (m *mutant) remove(l *manifest.Line) {
	i := 0
	for j := range m.lines {
		if &m.lines[j] == l {
			i = j
		}
	}
	m.lines = slices.Delete(m.lines, i, i+1)
}

func (m *mutant) delta() int64 {
	d := int64(1 + m.r.IntN(8))
	if m.r.IntN(2) == 0 {
		return -d
	}
	return d
}

// hostileMutations are the lies the property test tells, in any number
// and combination.
var hostileMutations = []mutation{
	{"self-reference", func(m *mutant) bool {
		l := m.pick(isResponse)
		if l == nil {
			return false
		}
		refer(l, *l)
		return true
	}},
	{"cycle", func(m *mutant) bool {
		l := m.pick(isResponse)
		if l == nil {
			return false
		}
		cls := m.class(l)
		if len(cls) < 2 {
			return false
		}
		m.r.Shuffle(len(cls), func(i, j int) { cls[i], cls[j] = cls[j], cls[i] })
		n := min(len(cls), 2+m.r.IntN(2))
		orig := make([]manifest.Line, n)
		for i := range n {
			orig[i] = *cls[i]
		}
		for i := range n {
			refer(cls[i], orig[(i+1)%n])
		}
		return true
	}},
	{"drop an original", func(m *mutant) bool {
		l := m.pick(isKept)
		if l == nil {
			return false
		}
		m.remove(l)
		return true
	}},
	{"drop a line", func(m *mutant) bool {
		l := m.pick(anyLine)
		if l == nil {
			return false
		}
		m.remove(l)
		return true
	}},
	{"demote an original", func(m *mutant) bool {
		l := m.pick(isKept)
		if l == nil {
			return false
		}
		cls := m.class(l)
		o := *cls[m.r.IntN(len(cls))]
		if m.r.IntN(3) == 0 {
			o = *m.pick(isResponse)
		}
		refer(l, o)
		return true
	}},
	{"promote a duplicate", func(m *mutant) bool {
		l := m.pick(isDup)
		if l == nil {
			return false
		}
		keep(l)
		return true
	}},
	{"swap references", func(m *mutant) bool {
		a, b := m.pick(isDup), m.pick(isDup)
		if a == nil || a == b {
			return false
		}
		a.RefURI, b.RefURI = b.RefURI, a.RefURI
		a.RefDate, b.RefDate = b.RefDate, a.RefDate
		return true
	}},
	{"shift an offset", func(m *mutant) bool {
		l := m.pick(anyLine)
		if l == nil {
			return false
		}
		l.Offset = max(0, l.Offset+m.delta())
		return true
	}},
	{"shift a length", func(m *mutant) bool {
		l := m.pick(anyLine)
		if l == nil {
			return false
		}
		l.Length = max(1, l.Length+m.delta())
		return true
	}},
	{"change an ext", func(m *mutant) bool {
		l := m.pick(isResponse)
		if l == nil {
			return false
		}
		l.Class = max(0, l.Class+int(m.delta()%2))
		if m.r.IntN(2) == 0 {
			l.Class++
		}
		return true
	}},
	{"change a digest", func(m *mutant) bool {
		l, o := m.pick(anyLine), m.pick(isResponse)
		if l == nil || o == nil {
			return false
		}
		l.Digest = o.Digest
		return true
	}},
	{"the same record under another algorithm", func(m *mutant) bool {
		// The record's real SHA-256 where the line still names one,
		// and, half the time, another record of its class kept under it.
		l := m.pick(isResponse)
		if l == nil {
			return false
		}
		sum := rewritetest.FormatDigest(digest.SHA256, []byte(strconv.Itoa(m.r.Int())))
		if p, ok := payloadAt(m.c.dir, l); ok {
			sum = rewritetest.FormatDigest(digest.SHA256, p)
		}
		cls := m.class(l)
		l.Digest = sum
		if len(cls) > 1 && m.r.IntN(2) == 0 {
			o := *cls[1+m.r.IntN(len(cls)-1)]
			refer(l, o)
			o.Digest = sum
			keep(&o)
			m.lines = append(m.lines, o)
		}
		return true
	}},
	{"refer to a revisit record", func(m *mutant) bool {
		d, rv := m.pick(isDup), m.pick(isRevisit)
		if d == nil || rv == nil {
			return false
		}
		refer(d, *rv)
		return true
	}},
	{"keep a revisit record", func(m *mutant) bool {
		// A kept line naming an existing revisit record (its place,
		// URI and date), its class's duplicates referring to it.
		k, rv := m.pick(isKept), m.pick(isRevisit)
		if k == nil || rv == nil {
			return false
		}
		cls := m.class(k)
		k.File, k.Offset, k.Length, k.URI, k.Date = rv.File, rv.Offset, rv.Length, rv.URI, rv.Date
		for _, d := range cls[1:] {
			if d.IsDuplicate() {
				refer(d, *k)
			}
		}
		return true
	}},
	{"duplicate a line", func(m *mutant) bool {
		l := m.pick(isResponse)
		if l == nil {
			return false
		}
		c := *l
		cls := m.class(l)
		switch m.r.IntN(3) {
		case 0:
			keep(&c)
		case 1:
			refer(&c, *cls[m.r.IntN(len(cls))])
		}
		m.lines = append(m.lines, c)
		return true
	}},
	{"a kept line for another record", func(m *mutant) bool {
		// A kept line of a class at another record's place, with the
		// URI and date of a member of the class or of the record.
		l, o := m.pick(isResponse), m.pick(isResponse)
		if l == nil || o == nil {
			return false
		}
		f := *o
		f.File, f.Offset, f.Length = l.File, l.Offset, l.Length
		if m.r.IntN(2) == 0 {
			f.URI, f.Date = l.URI, l.Date
		}
		keep(&f)
		m.lines = append(m.lines, f)
		return true
	}},
	{"reorder a file's lines", func(m *mutant) bool {
		m.reorder = true
		return true
	}},
	{"remove the revisit lines", func(m *mutant) bool {
		n := len(m.lines)
		if m.r.IntN(2) == 0 {
			m.lines = slices.DeleteFunc(m.lines, func(l manifest.Line) bool { return l.IsRevisit() })
		} else if l := m.pick(isRevisit); l != nil {
			m.remove(l)
		}
		return len(m.lines) < n
	}},
	{"another spelling of a file name", func(m *mutant) bool {
		l := m.pick(anyLine)
		if l == nil {
			return false
		}
		l.File = aliasName(l.File)
		return true
	}},
	{"another file", func(m *mutant) bool {
		l := m.pick(anyLine)
		if l == nil {
			return false
		}
		l.File = m.c.res.Names[m.r.IntN(len(m.c.res.Names))]
		return true
	}},
	{"change a URI or date", func(m *mutant) bool {
		l := m.pick(anyLine)
		if l == nil {
			return false
		}
		if m.r.IntN(2) == 0 {
			l.URI += "x"
		} else {
			l.Date = strings.Replace(l.Date, "2024", "2023", 1)
		}
		return true
	}},
	{"refer to another digest's original", func(m *mutant) bool {
		d := m.pick(isDup)
		if d == nil {
			return false
		}
		k := m.pick(func(l *manifest.Line) bool { return l.IsKept() && l.Digest != d.Digest })
		if k == nil {
			return false
		}
		refer(d, *k)
		return true
	}},
	{"the original again, as a duplicate of a record made kept", func(m *mutant) bool {
		// The attack on "the duplicate is not itself kept": the original
		// listed once more, under its name, another spelling of it or
		// another algorithm, as a duplicate of another record of its
		// class that the lie keeps; the class's duplicates still refer
		// to the original.
		k := m.pick(isKept)
		if k == nil {
			return false
		}
		cls := m.class(k)
		if len(cls) < 2 {
			return false
		}
		o := cls[1+m.r.IntN(len(cls)-1)]
		again := *k
		refer(&again, *o)
		switch m.r.IntN(3) {
		case 1:
			again.File = aliasName(again.File)
		case 2:
			p, ok := payloadAt(m.c.dir, k)
			if !ok {
				return false
			}
			again.Digest = rewritetest.FormatDigest(digest.SHA256, p)
			kept := *o
			kept.Digest = again.Digest
			keep(&kept)
			m.lines = append(m.lines, kept)
		}
		keep(o)
		m.lines = append(m.lines, again)
		return true
	}},
	{"the original kept again, with another URI or date", func(m *mutant) bool {
		// A second kept line at the original's place that the record does
		// not match, a duplicate referring to it: it must be checked as
		// the first was, even once the original is read.
		k := m.pick(isKept)
		if k == nil {
			return false
		}
		cls := m.class(k)
		if len(cls) < 2 {
			return false
		}
		f := *k
		if m.r.IntN(2) == 0 {
			f.Date = strings.Replace(f.Date, "2024", "2001", 1)
		} else {
			f.URI += "?again"
		}
		refer(cls[1+m.r.IntN(len(cls)-1)], f)
		m.lines = append(m.lines, f)
		return true
	}},
	{"an absurd offset or length", func(m *mutant) bool {
		l := m.pick(anyLine)
		if l == nil {
			return false
		}
		big := []int64{1 << 31, 1 << 40, math.MaxInt64 - int64(m.r.IntN(2)), math.MaxInt64 - l.Offset}
		if m.r.IntN(2) == 0 {
			l.Offset = big[m.r.IntN(len(big)-1)]
		} else {
			l.Length = big[m.r.IntN(len(big))]
		}
		return true
	}},
	{"refer to any date", func(m *mutant) bool {
		d := m.pick(isDup)
		if d == nil {
			return false
		}
		d.RefDate = "*"
		return true
	}},
	{"renumber a copy", func(m *mutant) bool {
		d := m.pick(isDup)
		if d == nil {
			return false
		}
		d.Copy = 2 + m.r.IntN(9)
		return true
	}},
}

// payloadAt returns the payload of the record l names in the collection
// under dir, if l names one.
func payloadAt(dir string, l *manifest.Line) ([]byte, bool) {
	data, err := os.ReadFile(filepath.Join(dir, l.File))
	// Lengths up to MaxInt64 are among the lies: no sum that overflows.
	if err != nil || l.Offset < 0 || l.Length < 0 || l.Offset > int64(len(data)) || l.Length > int64(len(data))-l.Offset {
		return nil, false
	}
	p, err := payloadFromRecord(data[l.Offset:l.Offset+l.Length], l.File)
	return p, err == nil
}

// hostileTally counts what the property test did.
type hostileTally struct {
	mu                                          sync.Mutex
	trials, runs, mutations                     int
	byMutation                                  map[string]int
	filesRefused, filesRewritten, filesKept     int
	revisits, manifestErrors, pinsRemovedDrops  int
	honestRuns, honestRewritten, honestRevisits int
	violations                                  int
}

func (h *hostileTally) add(f func(h *hostileTally)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// TestHostileManifests is the property test of issue 8: random lies told
// about a correct numbered manifest (self-references, cycles, dropped and
// demoted originals, swapped references, shifted offsets and lengths,
// other exts, digests, algorithms, file names and files, references to
// revisit records, duplicated and reordered lines, removed revisit lines)
// are given to warcrefs in place, as the input and the originals, as the
// input with the correct originals, and as the originals with the correct
// input. Whatever warcrefs does, nothing may be lost: warcsumcmp finds no
// violation, every file is byte-identical or its complete rewrite (every
// revisit resolves to a response with the same payload, byte for byte),
// refused files are untouched, no temporary file is left, the log
// describes the revisits written, and the only errors are manifest errors.
//
// WARCDEDUP_HOSTILE_TRIALS=N runs N trials (default 40),
// WARCDEDUP_HOSTILE_SEED=S starts from another seed, and
// WARCDEDUP_HOSTILE_COLLECTIONS=N lies about N generated collections.
func TestHostileManifests(t *testing.T) {
	trials := envInt(t, "WARCDEDUP_HOSTILE_TRIALS", 40)
	seed := uint64(envInt(t, "WARCDEDUP_HOSTILE_SEED", 1))
	ncoll := envInt(t, "WARCDEDUP_HOSTILE_COLLECTIONS", len(hostileConfigs))
	var colls []*hostileColl
	for i := range ncoll {
		cfg := hostileConfigs[i%len(hostileConfigs)]
		cfg.Seed = int64(seed)*1000 + int64(i)
		colls = append(colls, newHostileColl(t, cfg))
	}
	tally := &hostileTally{byMutation: map[string]int{}}
	t.Run("trials", func(t *testing.T) {
		for i := range trials {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				hostileTrial(t, colls[i%len(colls)], rand.New(rand.NewPCG(seed, uint64(i))), tally)
			})
		}
	})
	t.Logf("%d trials (seed %d, %d collections), %d mutations, %d runs: %d files refused, %d rewritten, %d left as they were; "+
		"%d revisits written; %d runs stopped by a manifest error; %d duplicate lines of pinned records dropped (revisit lines removed); "+
		"%d honest runs after a lie: %d files rewritten, %d revisits in all; %d violations",
		tally.trials, seed, ncoll, tally.mutations, tally.runs, tally.filesRefused, tally.filesRewritten, tally.filesKept,
		tally.revisits, tally.manifestErrors, tally.pinsRemovedDrops, tally.honestRuns, tally.honestRewritten, tally.honestRevisits, tally.violations)
	for _, mu := range hostileMutations {
		t.Logf("  %5d × %s", tally.byMutation[mu.name], mu.name)
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}

// hostileTrial tells one set of lies in the three ways and checks each run;
// after the first, an honest run (the correct manifest, the same log)
// must lose nothing either, and the lies are also told with an output
// directory.
func hostileTrial(t *testing.T, c *hostileColl, r *rand.Rand, tally *hostileTally) {
	m := &mutant{r: r, c: c, lines: slices.Clone(c.all)}
	var told []string
	for n := 1 + r.IntN(4); len(told) < n; {
		mu := hostileMutations[r.IntN(len(hostileMutations))]
		if mu.apply(m) {
			told = append(told, mu.name)
		}
	}
	tally.add(func(h *hostileTally) {
		h.trials++
		h.mutations += len(told)
		for _, n := range told {
			h.byMutation[n]++
		}
	})
	t.Logf("lies: %s", strings.Join(told, ", "))
	modes := []hostileMode{
		{name: "lying input and originals", input: m.lines, originals: m.lines, reorder: m.reorder, thenHonest: true},
		{name: "lying input, correct originals", input: m.lines, originals: c.all, reorder: m.reorder},
		{name: "correct input, lying originals", input: c.all, originals: m.lines},
		{name: "lying input and originals, output directory", input: m.lines, originals: m.lines, reorder: m.reorder, outputDir: true},
	}
	for _, mode := range modes {
		mode.jobs = 1 + r.IntN(3)
		hostileRun(t, c, mode, tally)
		if t.Failed() {
			t.Logf("the lying manifest:\n%s", rewritetest.ManifestText(m.lines))
			return
		}
	}
}

// hostileMode is one way of giving warcrefs a lie.
type hostileMode struct {
	name             string
	input, originals []manifest.Line
	reorder          bool // two lines of one file swapped in the input
	jobs             int
	outputDir        bool // new versions into an output directory, not in place
	thenHonest       bool // then the correct manifest, with the same log
}

// hostileRun runs warcrefs on a copy of the collection and checks that
// nothing was lost.
func hostileRun(t *testing.T, c *hostileColl, mode hostileMode, tally *hostileTally) {
	t.Helper()
	top, err := os.MkdirTemp("", "hostile-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(top)
	dir, out := filepath.Join(top, "coll"), filepath.Join(top, "out")
	rewritetest.CopyDir(t, c.dir, dir)
	ids := statFiles(t, dir, c.files)

	in := hostileInput(c, mode, tally)
	tl := newTestLog()
	rw := Rewriter{Roots: []string{dir}, Jobs: mode.jobs}
	if mode.outputDir {
		rw.OutputDir = out
	} else {
		rw.InPlace = true
	}
	o, err := hostileRewrite(t, rw, in, mode.originals, tl)
	var me *manifest.Error
	switch {
	case err == nil:
	case errors.As(err, &me) || errors.Is(err, originals.ErrMixedAlgorithms):
		tally.add(func(h *hostileTally) { h.manifestErrors++ })
	default:
		t.Errorf("%s: the run stopped with %v, which is no manifest error", mode.name, err)
	}

	// What a user has after the run: the collection, with the new
	// versions of an output directory moved into it.
	result := dir
	if mode.outputDir {
		for name, id := range ids {
			if why := id.untouched(filepath.Join(dir, name)); why != "" {
				t.Errorf("%s: the source %s was touched: %s", mode.name, name, why)
			}
		}
		if _, err := os.Stat(out); err == nil {
			rewritetest.CopyDir(t, out, dir)
		}
	}
	after := regularFiles(t, result)
	v := violations(t, c.before, warcsumDirs(t, result))
	for _, x := range v {
		t.Errorf("%s: warcsumcmp: %s", mode.name, x)
	}
	rewritten, revisits, problems := nothingLost(c.files, after, nil)
	for _, p := range problems {
		t.Errorf("%s: %s", mode.name, p)
	}
	for _, d := range []string{dir, out} {
		if tf := rewritetest.TempFiles(t, d); len(tf) > 0 {
			t.Errorf("%s: temporary files left: %v", mode.name, tf)
		}
	}
	refused := 0
	if o != nil {
		checkLogEntries(t, o, after)
		// The log names each file by its field 1 (one file may have
		// several, a lie being told about it under one of them).
		logged := map[string]bool{}
		for _, e := range o.log {
			logged[e.File] = true
			name, _ := manifest.UnescapeFile(e.File)
			logged[name] = true
		}
		// The log names a file by its name in the collection: a refused
		// name of a file is logged only when another name of it was
		// rewritten (a lie told under another spelling).
		refusedNames := refusedFiles(t, o)
		rewrittenUnder := func(f string) bool {
			name, _ := manifest.UnescapeFile(f)
			for _, l := range mode.input {
				if other, _ := manifest.UnescapeFile(l.File); l.File != f && other == name {
					if _, no := refusedNames[l.File]; !no {
						return true
					}
				}
			}
			return false
		}
		for f, re := range refusedNames {
			refused++
			if slices.ContainsFunc(o.log, func(e rewritelog.Entry) bool { return e.File == f }) && !rewrittenUnder(f) {
				t.Errorf("%s: %s was refused (%v) and logged", mode.name, f, re)
			}
		}
		for _, name := range rewritten {
			if !logged[name] {
				t.Errorf("%s: %s was rewritten without a log entry", mode.name, name)
			}
		}
	}
	if !mode.outputDir {
		for _, name := range sortedKeys(c.files) {
			if !slices.Contains(rewritten, name) {
				if why := ids[name].untouched(filepath.Join(dir, name)); why != "" {
					t.Errorf("%s: %s has its bytes but was touched: %s", mode.name, name, why)
				}
			}
		}
	}
	tally.add(func(h *hostileTally) {
		h.runs++
		h.filesRefused += refused
		h.filesRewritten += len(rewritten)
		h.filesKept += len(c.files) - len(rewritten)
		h.revisits += revisits
		h.violations += len(v) + len(problems)
	})

	if mode.thenHonest && !mode.outputDir {
		// The correct manifest after the lie, with the same log: what the
		// lie made of the files stands, the rest is done, nothing lost.
		o2, err := hostileRewrite(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: mode.jobs}, byFileOrder(c.all), c.all, tl)
		if err != nil {
			t.Errorf("the honest run after the lie: %v", err)
		}
		final := regularFiles(t, dir)
		v := violations(t, c.before, warcsumDirs(t, dir))
		for _, x := range v {
			t.Errorf("the honest run after the lie: warcsumcmp: %s", x)
		}
		done, revisits, problems := nothingLost(c.files, final, nil)
		for _, p := range problems {
			t.Errorf("the honest run after the lie: %s", p)
		}
		if tf := rewritetest.TempFiles(t, dir); len(tf) > 0 {
			t.Errorf("the honest run after the lie: temporary files left: %v", tf)
		}
		if o2 != nil {
			checkLogEntries(t, o2, final)
		}
		tally.add(func(h *hostileTally) {
			h.honestRuns++
			h.honestRewritten += len(done)
			h.honestRevisits += revisits
			h.violations += len(v) + len(problems)
		})
	}
}

// hostileInput is the input of a run: the mode's lines sorted by file,
// without the duplicate lines of records existing revisits refer to when
// the originals do not say so (TestUnlistedRevisitTargets), and with two
// lines of a file swapped if the mode says.
func hostileInput(c *hostileColl, mode hostileMode, tally *hostileTally) []manifest.Line {
	pins := map[string]bool{}
	for _, l := range mode.originals {
		if l.IsRevisit() {
			pins[pinKey(&l)] = true
		}
	}
	intact := true
	for k := range c.pins {
		intact = intact && pins[k]
	}
	in := byFileOrder(mode.input)
	if !intact {
		n := len(in)
		in = slices.DeleteFunc(in, func(l manifest.Line) bool {
			name, err := manifest.UnescapeFile(l.File)
			return l.IsDuplicate() && err == nil && c.pinned[recKey(name, l.Offset)]
		})
		tally.add(func(h *hostileTally) { h.pinsRemovedDrops += n - len(in) })
	}
	if mode.reorder {
		for i := 1; i < len(in); i++ {
			if in[i].File == in[i-1].File && in[i].Offset != in[i-1].Offset {
				in[i], in[i-1] = in[i-1], in[i]
				break
			}
		}
	}
	return in
}

// hostileRewrite runs rw on in with the originals manifest kept, whose
// records are read under rw's roots (and moved by tl's log in place).
func hostileRewrite(t *testing.T, rw Rewriter, in, kept []manifest.Line, tl *testLog) (*outcome, error) {
	t.Helper()
	orig, err := originals.New(&source.Locator{Roots: rw.Roots}, tableOf(t, kept, "originals.manifest"))
	if err != nil {
		return nil, err
	}
	rw.Originals = orig
	o := runLogged(t, rw, in, kept, tl)
	return o, o.err
}
