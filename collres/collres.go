// Package collres is stage 2 of the toolchain: collision resolution. It
// reads the manifest sorted on digest, fetches every record of each digest
// cluster, re-hashes its payload and compares payloads byte for byte, and
// writes each line with its hash extension: 0 for the first byte-identical
// class of the digest, 1, 2, ... for payloads that share the digest but
// differ in bytes. A line whose record no longer matches it is stale and is
// left out. Optionally it numbers the copies too (the paper's shortcut).
package collres

import (
	"bytes"
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
	"warcdedup/record"
	"warcdedup/sumproc"
)

// Resolver resolves the clusters of a manifest.
type Resolver struct {
	Source Opener
	Jobs   int  // clusters resolved at once; 1 if < 1
	Proc   bool // also number the copies: write the 10-field form
	// ClassMemory is the largest payload held in memory as a class; larger
	// ones go to a temporary file. 8 MiB if 0.
	ClassMemory int64
	// Stale receives each stale line (left out of the output), Warn each
	// collision and repeated record.
	Stale    func(error)
	Warn     func(error)
	Progress *Progress
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
	Collisions int64 // classes beyond the first of their digest (ext > 0)
	Stale      int64 // lines left out because their record no longer matches
	Repeated   int64 // with Proc: lines naming a record already listed
}

func (s *Stats) add(o *Stats) {
	s.Lines += o.Lines
	s.Written += o.Written
	s.Clusters += o.Clusters
	s.Fetched += o.Fetched
	s.Compared += o.Compared
	s.Collisions += o.Collisions
	s.Stale += o.Stale
	s.Repeated += o.Repeated
}

// Summary writes the end-of-run summary.
func (s *Stats) Summary(w io.Writer) {
	fmt.Fprintf(w, "lines: %d read, %d written, %d stale (left out)\n", s.Lines, s.Written, s.Stale)
	fmt.Fprintf(w, "clusters: %d with two or more lines; %d records fetched, %d payload bytes compared\n", s.Clusters, s.Fetched, s.Compared)
	fmt.Fprintf(w, "collisions: %d\n", s.Collisions)
	if s.Repeated > 0 {
		fmt.Fprintf(w, "repeated records listed once: %d\n", s.Repeated)
	}
}

func (r *Resolver) warn(err error) {
	if r.Warn != nil {
		r.Warn(err)
	}
}

// task is a unit of work: a run of single-line digests, which are passed
// through unfetched, or one cluster, whose lines stream in while it is
// resolved. Its output is spooled until the tasks before it are written.
type task struct {
	lines   chan manifest.Line
	cluster bool
	out     *spool.Spool
	done    chan struct{}
	stats   Stats
	err     error
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
	clusterBuffer  = 32
	spoolMemory    = 1 << 20
)

// Run reads in, which must be sorted by manifest.ByDigest, and writes the
// resolved manifest to out in input order. The error is one that stops the
// run: bad input, a failed write, or ctx ending. Stale lines are warned
// about, counted and left out; they do not stop the run.
func (r *Resolver) Run(ctx context.Context, in *manifest.Reader, out io.Writer) (Stats, error) {
	in.RequireFields(6)
	in.RequireOrder(manifest.ByDigest)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := max(r.Jobs, 1)
	if r.Progress == nil {
		r.Progress = new(Progress)
	}

	q := ordered.New[*task](4 * jobs)
	var readErr error
	go func() {
		defer q.Close()
		readErr = r.dispatch(ctx, in, q)
	}()
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.newWorker()
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
			total.add(&t.stats)
			if t.err != nil {
				fatal = t.err
			} else if _, err := t.out.WriteTo(out); err != nil {
				fatal = err
			}
			if fatal != nil {
				cancel()
			}
		}
		t.out.Close()
		q.Release()
	}
	wg.Wait()
	if fatal == nil {
		fatal = readErr
	}
	return total, fatal
}

// dispatch reads the manifest and hands out tasks in input order.
func (r *Resolver) dispatch(ctx context.Context, in *manifest.Reader, q *ordered.Queue[*task]) error {
	start := func(cluster bool) (*task, error) {
		size := singletonBatch
		if cluster {
			size = clusterBuffer
		}
		t := &task{lines: make(chan manifest.Line, size), cluster: cluster, out: spool.New(spoolMemory), done: make(chan struct{})}
		if err := q.Add(ctx, t); err != nil {
			return nil, err
		}
		return t, nil
	}
	send := func(t *task, l manifest.Line) error {
		select {
		case t.lines <- l:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	var (
		batch   *task // open run of single-line digests
		cluster *task // open cluster
		held    *manifest.Line
	)
	closeBatch := func() {
		if batch != nil {
			close(batch.lines)
			batch = nil
		}
	}
	// flushHeld passes the held line on as a single-line digest.
	flushHeld := func() error {
		if held == nil {
			return nil
		}
		if batch == nil {
			var err error
			if batch, err = start(false); err != nil {
				return err
			}
		}
		if err := send(batch, *held); err != nil {
			return err
		}
		held = nil
		if len(batch.lines) == cap(batch.lines) {
			closeBatch()
		}
		return nil
	}
	defer func() {
		closeBatch()
		if cluster != nil {
			close(cluster.lines)
		}
	}()
	var last string
	for {
		l, err := in.Next()
		if err == io.EOF {
			return flushHeld()
		}
		if err != nil {
			return err
		}
		r.Progress.Lines.Add(1)
		if l.Digest == last {
			if cluster == nil {
				// The held line starts a cluster.
				closeBatch()
				if cluster, err = start(true); err != nil {
					return err
				}
				if err := send(cluster, *held); err != nil {
					return err
				}
				held = nil
			}
			if err := send(cluster, l); err != nil {
				return err
			}
			continue
		}
		if cluster != nil {
			close(cluster.lines)
			cluster = nil
		}
		if err := flushHeld(); err != nil {
			return err
		}
		last = l.Digest
		held = &l
	}
}

// worker resolves tasks; it keeps its buffers between them.
type worker struct {
	r       *Resolver
	hashes  map[string]hash.Hash
	buf     []byte
	scratch []byte
	rr      *record.Reader // reset onto each fetched record
}

func (r *Resolver) newWorker() *worker {
	return &worker{r: r, hashes: map[string]hash.Hash{}}
}

func (w *worker) emit(t *task, l *manifest.Line) error {
	w.buf = l.Append(w.buf[:0])
	_, err := t.out.Write(w.buf)
	t.stats.Written++
	return err
}

func (w *worker) run(ctx context.Context, t *task) error {
	defer func() {
		for range t.lines { // drain after an error so dispatch never blocks
		}
	}()
	if !t.cluster {
		for l := range t.lines {
			t.stats.Lines++
			l.Ext, l.Fields = 0, 7
			if w.r.Proc {
				var n sumproc.Numberer
				n.Number(&l)
			}
			if err := w.emit(t, &l); err != nil {
				return err
			}
		}
		return nil
	}
	t.stats.Clusters++
	var classes []*class
	defer func() {
		for _, c := range classes {
			c.close()
		}
	}()
	numberers := map[int]*sumproc.Numberer{}
	for l := range t.lines {
		t.stats.Lines++
		ext, err := w.classify(ctx, &l, &classes, &t.stats)
		var st *StaleError
		if errors.As(err, &st) {
			t.stats.Stale++
			if w.r.Stale != nil {
				w.r.Stale(err)
			}
			continue
		}
		if err != nil {
			return err
		}
		l.Ext, l.Fields = ext, 7
		if w.r.Proc {
			n := numberers[ext]
			if n == nil {
				n = new(sumproc.Numberer)
				numberers[ext] = n
			}
			if !n.Number(&l) {
				t.stats.Repeated++
				w.r.warn(fmt.Errorf("%s: offset %d is listed twice; listed once", l.File, l.Offset))
				continue
			}
		}
		if err := w.emit(t, &l); err != nil {
			return err
		}
	}
	return nil
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

// classify fetches l's record and returns the ext of the class its payload
// belongs to, opening a new class if it equals none.
func (w *worker) classify(ctx context.Context, l *manifest.Line, classes *[]*class, st *Stats) (int, error) {
	limit := w.r.ClassMemory
	if limit == 0 {
		limit = 8 << 20
	}
	// The first payload of a cluster always founds a class, so it is
	// collected while it is compared; later ones are only fetched again in
	// the rare case that they turn out to collide.
	var collect *classWriter
	if len(*classes) == 0 {
		collect = newClassWriter(l, limit)
	}
	cmp, err := w.compare(ctx, l, *classes, collect, st)
	if err != nil {
		if collect != nil {
			collect.c.close()
		}
		return 0, err
	}
	if k := cmp.matched(); k >= 0 {
		return k, nil
	}
	if collect == nil {
		collect = newClassWriter(l, limit)
		if _, err := w.compare(ctx, l, nil, collect, st); err != nil {
			collect.c.close()
			return 0, err
		}
		st.Collisions++
		first := (*classes)[0].line
		w.r.warn(fmt.Errorf("hash collision: %s: %s offset %d differs in bytes from %s offset %d; it gets ext %d",
			l.Digest, l.File, l.Offset, first.File, first.Offset, len(*classes)))
	}
	*classes = append(*classes, collect.c)
	return len(*classes) - 1, nil
}

// compare streams l's payload through a comparer and checks its digest.
func (w *worker) compare(ctx context.Context, l *manifest.Line, classes []*class, collect *classWriter, st *Stats) (*comparer, error) {
	p, err := openPayload(ctx, w.r.Source, l, w.rr)
	if err != nil {
		return nil, err
	}
	w.rr = p.rr
	st.Fetched++
	w.r.Progress.Fetched.Add(1)
	h := w.hashFor(l)
	var sink io.Writer
	if collect != nil {
		sink = collect
	}
	if collect != nil {
		collect.grow(p.rr.BlockLeft())
	}
	cmp := newComparer(h, classes, sink, w.scratch)
	n, err := p.WriteTo(cmp)
	w.scratch = cmp.scratch
	st.Compared += n
	w.r.Progress.Bytes.Add(n)
	if err != nil {
		p.close()
		return nil, err
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	if got := l.Algorithm().AppendFormat(nil, h.Sum(nil)); !bytes.Equal(got, []byte(l.Digest)) {
		return nil, stale(l, fmt.Errorf("%w: it hashes to %s", ErrDigestMismatch, got))
	}
	return cmp, nil
}
