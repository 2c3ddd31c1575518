// Package collres is stage 2 of the toolchain: collision resolution. It
// reads the manifest sorted on digest, fetches every record of each digest
// cluster, re-hashes its payload and compares payloads byte for byte, and
// writes each line with its class within the digest (field 7, ext): records
// of one class have the same bytes and, under the replay policy, replay the
// same way. A payload that shares the digest but differs in bytes (a hash
// collision) opens a class of its own, as does one that a replay tool would
// serve differently. A line whose record no longer matches it is stale and
// is left out. Optionally it numbers the copies too (the paper's shortcut).
//
// Revisit lines (ext -1: revisit records already in the collection) pass
// through unchanged; the responses they refer to are never numbered as
// duplicates.
package collres

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"sync/atomic"

	"warcdedup/internal/ordered"
	"warcdedup/internal/spool"
	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/record"
)

// Resolver resolves the clusters of a manifest.
type Resolver struct {
	Source Opener
	// Policy decides which byte-identical records share a class (ext):
	// policy.Replay, the zero value, keeps apart records a replay tool
	// would serve differently.
	Policy policy.Policy
	Jobs   int // clusters resolved at once; 1 if < 1
	// Number also numbers the copies (warccollres -p, the paper's
	// warcsumproc in the same pass): the 10-field form is written.
	Number bool
	// FromManifest, with Number, numbers the copies from the manifest
	// alone and reads no record: every response of a digest is one class
	// (its ext as the line has it, 0 for a 6-field line). The caller's
	// rewrite then compares each duplicate with its original byte for
	// byte, as it does anyway, and resolves what it finds apart with a
	// Resolver that reads (warcdedup run: each duplicate compared once,
	// issue 21). Source is not used, nor Jobs: one goroutine does it
	// (Resolver.inline).
	FromManifest bool
	// Class, with FromManifest, is what the manifest line tells of the
	// record's policy key (the URI under policy.URI, the container a file
	// name shows under policy.Replay): lines of one digest with different
	// classes are numbered apart, in the order their first lines come,
	// as byte-identical records of different keys are when compared.
	// What the line cannot tell (a status, a redirect's target) the
	// rewrite's comparison finds. Nil: one class per digest.
	Class func(l *manifest.Line) string
	// ClassMemory is the largest payload held in memory as a class; larger
	// ones go to a temporary file. 8 MiB if 0.
	ClassMemory int64
	// Stale receives each stale line (left out of the output), Warn each
	// collision and repeated record.
	Stale    func(error)
	Warn     func(error)
	Progress *Progress
	// Kept, with Number, names the records that must stay responses
	// whatever their date: the committed originals of a crawl index,
	// merged into the manifest, which later runs never rewrite. Their
	// lines take the URI and date their record spells (an index imported
	// from CDX writes its own).
	Kept func(l *manifest.Line) bool
}

// Progress is updated while Run works.
type Progress struct {
	Lines   atomic.Int64
	Fetched atomic.Int64
	Bytes   atomic.Int64 // payload bytes compared
}

// Stats counts what a run did.
type Stats struct {
	Lines      int64 // lines read
	Written    int64 // lines written
	Clusters   int64 // digests with two or more lines
	Fetched    int64 // records fetched
	Compared   int64 // payload bytes read and compared
	Collisions int64 // payloads that share a digest with another but differ in bytes
	// Split counts classes of identical bytes beyond the first that the
	// policy keeps apart (another status, type or encoding).
	Split    int64
	Stale    int64 // lines left out because their record no longer matches
	Repeated int64 // with Number: lines naming a record already listed
	Revisits int64 // revisit lines passed through
	Pinned   int64 // with Number: responses kept because a revisit in the collection refers to them
}

// Add adds o to s: the figures of runs over parts of a manifest, summed.
func (s *Stats) Add(o *Stats) {
	s.Lines += o.Lines
	s.Written += o.Written
	s.Clusters += o.Clusters
	s.Fetched += o.Fetched
	s.Compared += o.Compared
	s.Collisions += o.Collisions
	s.Split += o.Split
	s.Stale += o.Stale
	s.Repeated += o.Repeated
	s.Revisits += o.Revisits
	s.Pinned += o.Pinned
}

// Summary writes the end-of-run summary.
func (s *Stats) Summary(w io.Writer) {
	fmt.Fprintf(w, "lines: %d read, %d written, %d stale (left out)\n", s.Lines, s.Written, s.Stale)
	fmt.Fprintf(w, "clusters: %d with two or more lines; %d records fetched, %d payload bytes compared\n", s.Clusters, s.Fetched, s.Compared)
	fmt.Fprintf(w, "collisions: %d; classes of identical bytes kept apart by the policy: %d\n", s.Collisions, s.Split)
	fmt.Fprintf(w, "revisit lines passed through: %d\n", s.Revisits)
	if s.Pinned > 0 {
		fmt.Fprintf(w, "captures kept because existing revisits refer to them: %d\n", s.Pinned)
	}
	if s.Repeated > 0 {
		fmt.Fprintf(w, "repeated records listed once: %d\n", s.Repeated)
	}
}

func (r *Resolver) warn(err error) {
	if r.Warn != nil {
		r.Warn(err)
	}
}

// task is a unit of work: a run of lines that need no fetch (digests with
// one response, digest-less revisit lines), or one digest group, whose
// lines stream in while it is resolved. Its output is spooled until the
// tasks before it are written.
type task struct {
	lines chan manifest.Line
	group bool
	out   *spool.Spool
	// direct, if not nil, is where the task's lines go instead of out:
	// the output itself, where one goroutine resolves (inline).
	direct io.Writer
	done   chan struct{}
	stats  Stats
	err    error
}

// Abandon finishes a task that no worker will run.
func (t *task) Abandon(err error) {
	close(t.lines)
	t.err = err
	close(t.done)
}

// Batches of single-line digests, and the read-ahead of cluster lines. A
// task's channel buffer is allocated per task (a Line is ~150 bytes), so
// these stay small: most clusters have a few lines.
const (
	singletonBatch = 256
	groupBuffer    = 32
	spoolMemory    = 1 << 20
)

// Run reads in, which must be sorted by manifest.ByDigest, and writes the
// resolved manifest to out in input order. The error is one that stops the
// run: bad input, a failed write, or ctx ending. Stale lines are warned
// about, counted and left out; they do not stop the run.
func (r *Resolver) Run(ctx context.Context, in *manifest.Reader, out io.Writer) (Stats, error) {
	in.RequireFields(6, 10)
	in.RequireOrder(manifest.ByDigest)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := max(r.Jobs, 1)
	// Progress is counted where the caller asked, or nowhere: Run leaves
	// its Resolver as it was given.
	prog := r.Progress
	if prog == nil {
		prog = new(Progress)
	}

	if r.FromManifest {
		return r.inline(ctx, in, out, prog)
	}
	q := ordered.New[*task](4 * jobs)
	// Each task's output is spooled; the spools of tasks written out are
	// used again by later ones.
	spools := spool.NewPool(spoolMemory, 4*jobs)
	// The run's pins of the revisit lines without a digest in the
	// manifest's algorithm: they sort before every digest, so dispatch
	// has read them all before it hands out the first cluster.
	global := new(manifest.Pins)
	var readErr error
	go func() {
		defer q.Close()
		readErr = r.dispatch(ctx, in, q, spools, global, prog)
	}()
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.newWorker(global, prog)
			for t := range q.Work() {
				t.err = w.run(ctx, t)
				close(t.done)
			}
		}()
	}

	var total Stats
	var fatal error
	for t := range q.Results() {
		<-t.done
		if fatal == nil {
			total.Add(&t.stats)
			if t.err != nil {
				fatal = t.err
			} else if _, err := t.out.WriteTo(out); err != nil {
				fatal = err
			}
			if fatal != nil {
				cancel()
			}
		}
		spools.Put(t.out)
		q.Release()
	}
	wg.Wait()
	if fatal == nil {
		fatal = readErr
	}
	return total, fatal
}

// dispatch reads the manifest and hands out tasks in input order: a digest
// with revisit lines or two or more responses is a group of its own; lines
// that need no fetch are batched.
func (r *Resolver) dispatch(ctx context.Context, in *manifest.Reader, q *ordered.Queue[*task], spools *spool.Pool, global *manifest.Pins, prog *Progress) error {
	d := dispatcher{r: r, ctx: ctx, q: q, spools: spools, global: global}
	defer d.closeAll()
	for {
		l, err := in.Next()
		if err == io.EOF {
			return d.endDigest()
		}
		if err != nil {
			return err
		}
		if l.Fields == 10 && !l.IsRevisit() {
			return in.Errorf("a numbered line (copy %d): warccollres reads warcsum's manifest (6 fields and revisit lines)", l.Copy)
		}
		prog.Lines.Add(1)
		if err := d.add(l); err != nil {
			return err
		}
	}
}

// inline is Run where nothing is read but the manifest (FromManifest):
// one goroutine reads, numbers and writes each line, grouped by digest
// as dispatch and the workers group them, in the same order. A line then
// costs its parse and its write; handed to a worker, it cost a task, two
// channels and a spool a digest of two or more lines, and the hand-offs
// between goroutines (the bench collection's 30,000 lines in 7,288
// clusters: 194 ms of wall, mostly waiting).
func (r *Resolver) inline(ctx context.Context, in *manifest.Reader, out io.Writer, prog *Progress) (Stats, error) {
	d := inlineDispatcher{ctx: ctx, w: r.newWorker(new(manifest.Pins), prog), t: &task{direct: out}}
	defer d.close()
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return d.t.stats, ctx.Err()
		}
		l, err := in.Next()
		if err == io.EOF {
			return d.t.stats, d.endDigest()
		}
		if err != nil {
			return d.t.stats, err
		}
		if l.Fields == 10 && !l.IsRevisit() {
			return d.t.stats, in.Errorf("a numbered line (copy %d): warccollres reads warcsum's manifest (6 fields and revisit lines)", l.Copy)
		}
		prog.Lines.Add(1)
		if err := d.add(l); err != nil {
			return d.t.stats, err
		}
	}
}

// inlineDispatcher is dispatcher and worker at once (Resolver.inline): a
// digest's lines go to a group of its own where dispatcher starts one,
// the others as worker.run writes a batch's, all into one task.
type inlineDispatcher struct {
	ctx   context.Context
	w     *worker
	t     *task
	group *group
	digestLines
}

func (d *inlineDispatcher) add(l manifest.Line) error {
	return route(d, &d.digestLines, d.w.global, l)
}

func (d *inlineDispatcher) grouped() bool { return d.group != nil }

// startGroup opens a group for the current digest, with the held
// response.
func (d *inlineDispatcher) startGroup() error {
	d.group = &group{w: d.w, t: d.t}
	if d.held != nil {
		held := *d.held
		d.held = nil
		return d.toGroup(held)
	}
	return nil
}

func (d *inlineDispatcher) toGroup(l manifest.Line) error {
	d.t.stats.Lines++
	return d.group.add(d.ctx, l)
}

// single writes a line of no group, as worker.run writes a batch's.
func (d *inlineDispatcher) single(l manifest.Line) error {
	d.t.stats.Lines++
	if l.IsRevisit() {
		d.t.stats.Revisits++
	} else {
		d.w.single(&l)
	}
	return d.w.emit(d.t, &l)
}

// endDigest ends the current digest's group, or writes its one response.
func (d *inlineDispatcher) endDigest() error {
	if g := d.group; g != nil {
		d.group = nil
		err := g.end()
		g.close()
		return err
	}
	if d.held != nil {
		l := *d.held
		d.held = nil
		return d.single(l)
	}
	return nil
}

// alone writes a digest-less revisit, pinned already, by itself.
func (d *inlineDispatcher) alone(l manifest.Line) error { return d.single(l) }

func (d *inlineDispatcher) close() {
	if d.group != nil {
		d.group.close()
	}
}

// dispatcher groups the lines of one digest.
type dispatcher struct {
	r      *Resolver
	ctx    context.Context
	q      *ordered.Queue[*task]
	spools *spool.Pool
	global *manifest.Pins // the run's (see Run)
	batch  *task          // open run of lines that need no fetch
	group  *task          // open digest group
	digestLines
}

func (d *dispatcher) add(l manifest.Line) error {
	return route(d, &d.digestLines, d.global, l)
}

func (d *dispatcher) grouped() bool { return d.group != nil }

func (d *dispatcher) toGroup(l manifest.Line) error { return d.send(d.group, l) }

// alone batches a digest-less revisit, pinned already, with the lines
// that need no fetch.
func (d *dispatcher) alone(l manifest.Line) error { return d.toBatch(l) }

// digestLines is where a dispatcher is in the manifest: the digest of the
// lines read last, and its first response while it is alone.
type digestLines struct {
	held   *manifest.Line // the digest's first response, alone so far
	digest string
}

// router is what route needs of a dispatcher: dispatcher hands the
// lines to workers, inlineDispatcher numbers them itself.
type router interface {
	endDigest() error              // the current digest's lines are over
	alone(l manifest.Line) error   // a digest-less revisit, pinned
	grouped() bool                 // a group of the current digest is open
	startGroup() error             // open one, with the held response
	toGroup(l manifest.Line) error // add a line to it
}

// route takes line l of a manifest on digest where both dispatchers
// take it, so that a resolve that reads nothing numbers the copies as one
// that compares them (TestFromManifestNumbersAsComparing): a new digest
// ends the one before; a revisit without a digest pins its target for
// every cluster (all of them come before the first) and goes alone; a
// digest's first response is held until a second line, or a revisit,
// makes it a group.
func route(r router, at *digestLines, global *manifest.Pins, l manifest.Line) error {
	if l.Digest != at.digest {
		if err := r.endDigest(); err != nil {
			return err
		}
		at.digest = l.Digest
	}
	switch {
	case l.IsRevisit() && l.Digest == manifest.NoDigest:
		global.Add(&l)
		return r.alone(l)
	case r.grouped():
		return r.toGroup(l)
	case l.IsRevisit() || at.held != nil:
		if err := r.startGroup(); err != nil {
			return err
		}
		return r.toGroup(l)
	}
	at.held = &l
	return nil
}

// startGroup opens a group for the current digest, with the held response.
func (d *dispatcher) startGroup() error {
	d.closeBatch()
	t, err := d.start(true)
	if err != nil {
		return err
	}
	d.group = t
	if d.held != nil {
		l := *d.held
		d.held = nil
		return d.send(t, l)
	}
	return nil
}

// endDigest closes the current digest's group, or batches its one response.
func (d *dispatcher) endDigest() error {
	if d.group != nil {
		close(d.group.lines)
		d.group = nil
	}
	if d.held != nil {
		l := *d.held
		d.held = nil
		return d.toBatch(l)
	}
	return nil
}

func (d *dispatcher) toBatch(l manifest.Line) error {
	if d.batch == nil {
		t, err := d.start(false)
		if err != nil {
			return err
		}
		d.batch = t
	}
	if err := d.send(d.batch, l); err != nil {
		return err
	}
	if len(d.batch.lines) == cap(d.batch.lines) {
		d.closeBatch()
	}
	return nil
}

func (d *dispatcher) closeBatch() {
	if d.batch != nil {
		close(d.batch.lines)
		d.batch = nil
	}
}

func (d *dispatcher) closeAll() {
	d.closeBatch()
	if d.group != nil {
		close(d.group.lines)
		d.group = nil
	}
}

func (d *dispatcher) start(group bool) (*task, error) {
	size := singletonBatch
	if group {
		size = groupBuffer
	}
	t := &task{lines: make(chan manifest.Line, size), group: group, out: d.spools.Get(), done: make(chan struct{})}
	if err := d.q.Add(d.ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

func (d *dispatcher) send(t *task, l manifest.Line) error {
	select {
	case t.lines <- l:
		return nil
	case <-d.ctx.Done():
		return d.ctx.Err()
	}
}

// worker resolves tasks; it keeps its buffers between them.
type worker struct {
	r       *Resolver
	prog    *Progress      // Run's
	global  *manifest.Pins // the run's (see Run)
	hashes  map[string]hash.Hash
	buf     []byte
	scratch []byte
	rr      *record.Reader // reset onto each fetched record
}

func (r *Resolver) newWorker(global *manifest.Pins, prog *Progress) *worker {
	return &worker{r: r, prog: prog, global: global, hashes: map[string]hash.Hash{}}
}

func (w *worker) emit(t *task, l *manifest.Line) error {
	w.buf = l.Append(w.buf[:0])
	var err error
	if t.direct != nil {
		_, err = t.direct.Write(w.buf)
	} else {
		_, err = t.out.Write(w.buf)
	}
	t.stats.Written++
	return err
}

func (w *worker) run(ctx context.Context, t *task) error {
	defer func() {
		for range t.lines { // drain after an error so dispatch never blocks
		}
	}()
	if !t.group {
		for l := range t.lines {
			t.stats.Lines++
			if l.IsRevisit() {
				t.stats.Revisits++
			} else {
				w.single(&l)
			}
			if err := w.emit(t, &l); err != nil {
				return err
			}
		}
		return nil
	}
	g := &group{w: w, t: t}
	defer g.close()
	for l := range t.lines {
		t.stats.Lines++
		if err := g.add(ctx, l); err != nil {
			return err
		}
	}
	return g.end()
}

// single gives the only response of its digest ext 0 (and copy 1).
func (w *worker) single(l *manifest.Line) {
	l.Class, l.Fields = 0, 7
	if w.r.Number {
		var n manifest.Numberer
		n.Number(l)
	}
}

// group resolves the lines of one digest: its revisit lines first (the
// order puts them there), whose targets it pins, then its responses in
// (date, file, offset) order. The first response is only fetched when a
// second one comes: a digest with one response has nothing to compare.
type group struct {
	w    *worker
	t    *task
	pins manifest.Pins
	held *manifest.Line
	// payloads are the distinct payloads of the digest, in the order
	// found; classes maps a payload and a policy key to its ext.
	payloads  []*class
	classes   map[classKey]int
	keys      map[int]int // classes per payload
	numberers map[int]*manifest.Numberer
}

type classKey struct {
	payload int
	key     string
}

func (g *group) add(ctx context.Context, l manifest.Line) error {
	if l.IsRevisit() {
		g.pins.Add(&l)
		g.t.stats.Revisits++
		return g.w.emit(g.t, &l)
	}
	if g.held == nil && g.classes == nil {
		g.held = &l
		return nil
	}
	if g.held != nil {
		g.t.stats.Clusters++
		held := *g.held
		g.held = nil
		if err := g.resolve(ctx, held); err != nil {
			return err
		}
	}
	return g.resolve(ctx, l)
}

// end writes the digest's one response, if it had only one.
func (g *group) end() error {
	if g.held == nil {
		return nil
	}
	l := *g.held
	g.w.single(&l)
	return g.w.emit(g.t, &l)
}

func (g *group) close() {
	for _, c := range g.payloads {
		c.close()
	}
}

// resolve classifies l and writes it, numbered with Number; a stale line is
// reported and left out.
func (g *group) resolve(ctx context.Context, l manifest.Line) error {
	w, st := g.w, &g.t.stats
	ext, err := g.classify(ctx, &l)
	var stale *StaleError
	if errors.As(err, &stale) {
		st.Stale++
		if w.r.Stale != nil {
			w.r.Stale(err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	l.Class, l.Fields = ext, 7
	if w.r.Number {
		n := g.numberers[ext]
		if n == nil {
			n = &manifest.Numberer{Pinned: g.pinned, Kept: w.r.Kept}
			g.numberers[ext] = n
		}
		if !n.Number(&l) {
			st.Repeated++
			w.r.warn(fmt.Errorf("%s: offset %d is listed twice; listed once", l.File, l.Offset))
			return nil
		}
		if g.pinned(l.URI, l.Date) {
			st.Pinned++
		}
	}
	return w.emit(g.t, &l)
}

func (g *group) pinned(uri, date string) bool {
	return g.pins.Has(uri, date) || g.w.global.Has(uri, date)
}

func (w *worker) hashFor(l *manifest.Line) hash.Hash {
	algo := l.Algorithm()
	h := w.hashes[algo.String()]
	if h == nil {
		h = algo.New()
		w.hashes[algo.String()] = h
	}
	return h
}

// classify fetches l's record and returns the ext of its class: the
// payload it equals byte for byte (a new one if it equals none) together
// with its policy key.
func (g *group) classify(ctx context.Context, l *manifest.Line) (int, error) {
	w, st := g.w, &g.t.stats
	limit := w.r.ClassMemory
	if limit == 0 {
		limit = 8 << 20
	}
	if g.classes == nil {
		g.classes = map[classKey]int{}
		g.keys = map[int]int{}
		g.numberers = map[int]*manifest.Numberer{}
	}
	if w.r.FromManifest {
		// Numbered from the manifest alone: the class is what the line
		// tells of its key.
		var key string
		if w.r.Class != nil {
			key = w.r.Class(l)
		}
		ck := classKey{max(l.Class, 0), key}
		ext, ok := g.classes[ck]
		if !ok {
			ext = len(g.classes)
			g.classes[ck] = ext
			if len(g.classes) > 1 {
				st.Split++
			}
		}
		return ext, nil
	}
	// The first payload of a digest always founds a class, so it is
	// collected while it is compared; later ones are only fetched again in
	// the rare case that they turn out to collide.
	var collect *classWriter
	if len(g.payloads) == 0 {
		collect = newClassWriter(l, limit)
	}
	cmp, key, err := w.compare(ctx, l, g.payloads, collect, st)
	if err != nil {
		if collect != nil {
			collect.c.close()
		}
		return 0, err
	}
	payload := cmp.matched()
	if payload < 0 {
		if collect == nil {
			collect = newClassWriter(l, limit)
			if _, _, err := w.compare(ctx, l, nil, collect, st); err != nil {
				collect.c.close()
				return 0, err
			}
			st.Collisions++
			first := g.payloads[0].line
			w.r.warn(fmt.Errorf("hash collision: %s: %s offset %d differs in bytes from %s offset %d", l.Digest, l.File, l.Offset, first.File, first.Offset))
		}
		g.payloads = append(g.payloads, collect.c)
		payload = len(g.payloads) - 1
	}
	ck := classKey{payload, key}
	ext, ok := g.classes[ck]
	if !ok {
		ext = len(g.classes)
		g.classes[ck] = ext
		if g.keys[payload]++; g.keys[payload] > 1 {
			st.Split++
		}
	}
	return ext, nil
}

// compare streams l's payload through a comparer, checks its digest, and
// returns the comparer and the record's policy key.
func (w *worker) compare(ctx context.Context, l *manifest.Line, classes []*class, collect *classWriter, st *Stats) (*comparer, string, error) {
	p, err := openPayload(ctx, w.r.Source, l, w.rr, w.r.Policy, w.r.Kept != nil && w.r.Kept(l))
	if err != nil {
		return nil, "", err
	}
	w.rr = p.rr
	st.Fetched++
	w.prog.Fetched.Add(1)
	h := w.hashFor(l)
	var sink io.Writer
	if collect != nil {
		sink = collect
		collect.grow(p.rr.BlockLeft())
	}
	cmp := newComparer(h, classes, sink, w.scratch)
	n, err := p.WriteTo(cmp)
	w.scratch = cmp.scratch
	st.Compared += n
	w.prog.Bytes.Add(n)
	if err != nil {
		p.close()
		return nil, "", err
	}
	if err := p.finish(); err != nil {
		return nil, "", err
	}
	if err := l.CheckDigest(h.Sum(nil)); err != nil {
		return nil, "", stale(l, err)
	}
	return cmp, p.key, nil
}
