package refs

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"warcdedup/gzmember"
	"warcdedup/gzmulti"
	"warcdedup/inplace"
	"warcdedup/manifest"
)

// lookAhead is read past a record's stated end, so that the check that the
// next record starts there sees its whole first line.
const lookAhead = 64 << 10

// aheadRead is what one read takes of the bytes past the record: the next
// member's header and first line are a few hundred bytes.
const aheadRead = 4 << 10

// recordSection reads a record's bytes and the look-ahead after them: the
// record in reads as large as the caller's (one, through the readers'
// 256 kB buffers), the look-ahead aheadRead bytes at a time. A plain
// io.SectionReader filled those buffers with the whole look-ahead, 64 kB
// copied from the page cache (and inflated, in a .gz file) for every
// duplicate, where the end check reads a few hundred bytes of it.
type recordSection struct {
	s      *io.SectionReader
	record int64 // the record's length: read whole
	pos    int64
}

func newRecordSection(r io.ReaderAt, off, n, record int64) *recordSection {
	return &recordSection{s: io.NewSectionReader(r, off, n), record: record}
}

func (r *recordSection) Read(p []byte) (int, error) {
	if left := r.record - r.pos; left > 0 {
		p = p[:min(int64(len(p)), left)]
	} else if len(p) > aheadRead {
		p = p[:aheadRead]
	}
	n, err := r.s.Read(p)
	r.pos += int64(n)
	return n, err
}

func (r *recordSection) Seek(offset int64, whence int) (int64, error) {
	pos, err := r.s.Seek(offset, whence)
	if err == nil {
		r.pos = pos
	}
	return pos, err
}

// prepare examines the record of l at offset at of src and, for a response,
// builds its revisit as it will be stored (a gzip member in a .gz file).
// The bytes returned are the caller's.
//
// In a .gz file the record's member is described as it is read (its
// header, length and SHA-256: gzmember), for the log, so that undo can
// rebuild it bit for bit: nothing is read twice. A member that cannot be
// described (a header over gzmember.MaxHeader bytes, damage) has no
// description, and undo compresses it afresh.
func (x *examiner) prepare(ctx context.Context, src io.ReaderAt, size int64, gz bool, l *manifest.Line, at int64) (*found, []byte, error) {
	p, err := x.r.Originals.Plan(l)
	if err != nil {
		return nil, nil, &inplace.RefusedError{File: l.File, Offset: l.Offset, Err: err}
	}
	if p.Protected {
		return &found{protected: true}, nil, nil
	}
	if at < 0 || at >= size {
		return nil, nil, &inplace.RefusedError{File: l.File, Offset: l.Offset, Err: manifest.ErrNotARecord}
	}
	// Read the record and a little beyond (the start of the next one, for
	// the end check): not the rest of the file, which read-ahead would
	// otherwise pull through the kernel for every record.
	var in io.Reader = newRecordSection(src, at, min(size-at, l.Length+lookAhead), l.Length)
	if gz {
		if x.describer == nil {
			x.describer = gzmember.NewDescriber(l.Length)
		} else {
			x.describer.Reset(l.Length)
		}
		in = x.describer.Tee(in.(io.ReadSeeker))
	}
	rr, err := x.reader(in, l.File)
	if err != nil {
		return nil, nil, &inplace.RefusedError{File: l.File, Offset: l.Offset, Err: err}
	}
	rr.SetBase(at)
	f, err := x.examine(ctx, rr, l, p)
	if err != nil || f.already {
		return f, nil, err
	}
	if !gz {
		return f, f.revisit, nil
	}
	if d, err := x.describer.Description(); err == nil {
		f.member = d.String()
	}
	stored, err := x.gzip(f.revisit)
	if err != nil {
		return nil, nil, err
	}
	return f, bytes.Clone(stored), nil
}

// RevisitLevel is the compression level of a revisit's member. A revisit
// is under a kilobyte (864 bytes in the bench collection): level 1 makes
// it 571 bytes, the default 550, the best 546 (BenchmarkRevisitGzip), 21
// bytes a revisit, under a thousandth of what the revisit saves. Level 1's
// hash table is a third of the default's (128 kB, not 384 kB) and, between
// two revisits, the inflation and hashing of a duplicate evict them from
// the caches: the default level cost about 27 us a revisit, level 1 18.
const RevisitLevel = gzip.BestSpeed

// gzip compresses a revisit as a gzip member of its own.
func (x *examiner) gzip(b []byte) ([]byte, error) {
	x.zbuf.Reset()
	if x.zw == nil {
		x.zw = gzmulti.NewWriter(&x.zbuf, RevisitLevel)
	} else {
		x.zw.Reset(&x.zbuf)
	}
	if _, err := x.zw.Write(b); err != nil {
		return nil, err
	}
	if _, err := x.zw.CloseMember(); err != nil {
		return nil, err
	}
	return x.zbuf.Bytes(), nil
}

// examined is one line's record, examined ahead of the writer.
type examined struct {
	line      manifest.Line
	at        int64 // the offset it was examined at
	protected bool
	found     *found
	stored    []byte
	err       error
	done      chan struct{}
}

// lookahead examines a file's records on several goroutines while the
// writer, which must go in file order, consumes them in order from results.
type lookahead struct {
	results chan *examined
	shrink  atomic.Int64 // the writer's shift, for offsets examined from now on
	halt    chan struct{}
	wg      sync.WaitGroup
}

// examiners is how many records of one file are examined at once.
func examiners() int { return min(runtime.GOMAXPROCS(0), 4) }

// ownExaminer is the writer's examiner, for a record examined again.
func (w *worker) ownExaminer() *examiner {
	if w.own == nil {
		w.own = newExaminer(w.r, w.moves)
	}
	return w.own
}

// examineAhead starts examining t's lines. The examiners are the walk's
// (kept between files), each with its readers, hashes and gzip writer.
func (w *worker) examineAhead(ctx context.Context, t *task, src io.ReaderAt, size int64, gz bool) *lookahead {
	n := examiners()
	for len(w.walk.ahead) < n {
		w.walk.ahead = append(w.walk.ahead, newExaminer(w.r, w.moves))
	}
	a := &lookahead{results: make(chan *examined, 2*n), halt: make(chan struct{})}
	jobs := make(chan *examined, 2*n)
	for _, ex := range w.walk.ahead[:n] {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for e := range jobs {
				e.found, e.stored, e.err = ex.prepare(ctx, src, size, gz, &e.line, e.at)
				e.protected = e.err == nil && e.found.protected
				close(e.done)
			}
		}()
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(jobs)
		defer close(a.results)
		for l := range t.lines {
			e := &examined{line: l, at: l.Offset - a.shrink.Load(), done: make(chan struct{})}
			select {
			case a.results <- e:
			case <-a.halt:
				return
			}
			select {
			case jobs <- e:
			case <-a.halt:
				close(e.done)
				return
			}
		}
	}()
	return a
}

// stop ends the look-ahead early or late: it waits for every examiner, so
// nothing reads the file after the writer is done with it.
func (a *lookahead) stop() {
	close(a.halt)
	for e := range a.results {
		<-e.done
	}
	a.wg.Wait()
}
