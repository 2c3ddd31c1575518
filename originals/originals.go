// Package originals knows the copies a deduplication keeps: which records
// of a payload class are kept (copy 1) and which responses the revisits
// already in the collection refer to, from the numbered manifest sorted
// on digest (manifest.Table); and it reads each original, checked to be
// the response its line names, where that manifest says it is, moved by
// the rewrite log where a run shortened its file. The rewrite (package
// refs) makes a duplicate a revisit only of an original read here and
// compared byte for byte (Comparer); undo (package restore) takes the
// payload it restores from one.
package originals

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"warcdedup/internal/lru"
	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/record"
)

// Opener opens the stored bytes of the record a manifest line names, on
// local disk or over HTTP. source.Locator is the Opener of the commands.
type Opener interface {
	Open(ctx context.Context, file string, offset, length int64) (io.ReadCloser, error)
}

// Originals tells warcrefs what it must know before a duplicate becomes a
// revisit: which records of its class are kept (copy 1), which responses
// revisits already in the collection refer to (Plan), and the original
// itself, read and checked (Open).
//
// warcrefs learns of originals from the numbered manifest (or only its
// copy-1 and revisit lines), sorted on digest, which it searches by
// digest (manifest.Table); it reads each original where that manifest says
// it is, locally or over HTTP (Opener), moved by the rewrite log where a
// run shortened its file (Mover).
type Originals struct {
	tables []*manifest.Table
	src    Opener
	// global pins what the digest-less revisit lines refer to: every
	// table's first lines, read when the Originals are made.
	global manifest.Pins

	digests  *lru.Cache[string, *digestInfo]
	payloads *lru.Cache[origKey, *keptPayload]
	// locks serialise reading an original with replacing its file.
	locks sync.Map // file -> *sync.RWMutex
	// kept keeps the local files originals are read from open (KeepOpen).
	kept keptFiles
	// readers are record readers kept between originals: each holds a
	// read buffer and an inflater, too costly to make for every read.
	readers sync.Pool
}

// Mover says where the record that a manifest puts at offset off of file
// (a name in the collection, unescaped) stands now, after the runs a
// rewrite log records: rewritelog.Log. A nil Mover leaves offsets as
// they are.
type Mover interface {
	Move(file string, off int64) (int64, error)
}

// digestInfo is what the tables say about one digest.
type digestInfo struct {
	kept []manifest.Line // copy-1 lines, every ext
	// uses counts, for each kept line, the duplicate lines (copy 2, 3,
	// ...) that name it as Plan finds their original: how many times a
	// rewrite reads it. 0 when the tables list no duplicate of it (only
	// copy-1 and revisit lines, or none of this class).
	uses []int
	pins manifest.Pins // what its revisit lines refer to
}

// countUses sets uses from the duplicates counted by the original they
// name (named), each count given to the first kept line that matches, as
// Plan chooses; all 0 (not known) if they named too many to count.
func (d *digestInfo) countUses(named *namedCounts) {
	d.uses = make([]int, len(d.kept))
	if named.overflow {
		return
	}
	for i := range d.kept {
		k := &d.kept[i]
		d.uses[i] = named.take(dupRef{k.Class, k.URI, k.Date})
	}
}

// dupRef is the original a duplicate line names.
type dupRef struct {
	class     int
	uri, date string
}

// namedCounts counts a digest's duplicate lines by the original they name,
// as a look-up reads them: memory in the originals named (one, mostly:
// no map then), never in the duplicates, of which a common payload (an
// empty body, a tracking pixel) has millions. Past maxNamed names, a
// lying or odd manifest's, it stops counting (overflow): the uses are
// then not known.
type namedCounts struct {
	first    dupRef
	firstN   int
	others   map[dupRef]int
	overflow bool
}

// maxNamed bounds the originals a digest's duplicates are counted for.
const maxNamed = 1 << 12

func (c *namedCounts) add(l *manifest.Line) {
	if c.overflow {
		return
	}
	r := dupRef{l.Class, l.RefURI, l.RefDate}
	switch {
	case c.firstN == 0 && c.others == nil:
		c.first, c.firstN = r, 1
		return
	case c.firstN > 0 && r == c.first:
		c.firstN++
		return
	}
	if _, ok := c.others[r]; !ok {
		if 1+len(c.others) >= maxNamed {
			c.others, c.overflow = nil, true
			return
		}
		if c.others == nil {
			c.others = map[dupRef]int{}
		}
	}
	c.others[r]++
}

// take returns the count of r, once: a later kept line of the same name
// is not Plan's.
func (c *namedCounts) take(r dupRef) int {
	if c.firstN > 0 && r == c.first {
		n := c.firstN
		c.firstN = 0
		return n
	}
	n := c.others[r]
	delete(c.others, r)
	return n
}

// keptPayload is an original kept in memory, with the reads of it still
// expected (left, of its uses; -1: not known): the last one drops it, so
// that the cache's budget holds the originals still to be read, where the
// least recently used ones held it, most of them read for the last time.
type keptPayload struct {
	orig *Original
	left atomic.Int64
}

type origKey struct {
	file   string
	offset int64
}

// Original is a record checked to be a response that can be an original.
type Original struct {
	Line manifest.Line
	URI  string // its WARC-Target-URI as written, without <...>
	Date string // its WARC-Date as written
	Key  string // its policy key
	// Head is its HTTP head as stored, and PayloadLength the length of
	// the payload after it: what a restored record takes from it.
	Head          []byte
	PayloadLength int64
	// Payload is its payload when small enough to keep; nil means it is
	// read again for each comparison.
	Payload []byte
	// payloadHashed is set once Payload is known to hash to Line's
	// digest (NotePayloadDigest).
	payloadHashed atomic.Bool
}

// NotePayloadDigest notes that o's payload in memory hashes to digest: a
// payload equal to it, byte for byte, was hashed whole and had that
// digest. If it is Line's, duplicates compared with o later need not be
// hashed while they equal its payload (PayloadHasDigest): they have that
// digest too. A stale manifest (original and duplicates changed alike
// since they were hashed) still shows, as no payload equal to o's has
// Line's digest then. The first duplicate pays the hash, no read of o.
func (o *Original) NotePayloadDigest(digest string) {
	if o.Payload != nil && digest == o.Line.Digest {
		o.payloadHashed.Store(true)
	}
}

// PayloadHasDigest reports whether o's payload in memory is known to hash
// to digest (NotePayloadDigest).
func (o *Original) PayloadHasDigest(digest string) bool {
	return o.Payload != nil && digest == o.Line.Digest && o.payloadHashed.Load()
}

// Budgets of the caches, and the largest payload kept in memory: a small
// original (a logo, a stylesheet) named by many duplicates is read once.
// The payloads' budget holds only originals still to be read (keptPayload):
// on the bench collection 8 MB held them for 2499 of the 4829 reads of an
// original read before, 16 MB for 3599 (peak memory unchanged within noise,
// 139 MB).
const (
	digestCache   = 24 << 20
	payloadCache  = 16 << 20
	payloadInline = 256 << 10
)

// New returns the Originals of the tables (each sorted on digest),
// reading originals through src.
func New(src Opener, tables ...*manifest.Table) (*Originals, error) {
	// A record's lines are found through its digest: the same record
	// listed under two algorithms could be kept under one digest and
	// rewritten under the other, its revisits left pointing at a revisit.
	var algorithms, from []string
	for _, t := range tables {
		for _, a := range t.Algorithms() {
			if !slices.Contains(algorithms, a) {
				algorithms, from = append(algorithms, a), append(from, t.Name())
			}
		}
	}
	if len(algorithms) > 1 {
		return nil, fmt.Errorf("%w: %s (%s) and %s (%s): a record listed under both could be kept under one and rewritten under the other",
			ErrMixedAlgorithms, algorithms[0], from[0], algorithms[1], from[1])
	}
	o := &Originals{tables: tables, src: src,
		digests:  lru.New[string, *digestInfo](digestCache),
		payloads: lru.New[origKey, *keptPayload](payloadCache)}
	for _, t := range tables {
		err := t.Find(manifest.NoDigest, func(l *manifest.Line) error {
			o.global.Add(l)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// lookup returns what the tables say about a digest.
func (o *Originals) lookup(digest string) (*digestInfo, error) {
	if d, ok := o.digests.Get(digest); ok {
		return d, nil
	}
	d := &digestInfo{}
	var named namedCounts
	// What the entry holds, as the heap counts it: the cache's element,
	// map slot and key, the digestInfo, and each line kept whole (its
	// struct and strings; issue 22 measured the estimate before, which
	// left the structs out, at 1.6 times under, the cache's 24 MB budget
	// holding 38 MB).
	cost := int64(160 + len(digest))
	for _, t := range o.tables {
		err := t.Find(digest, func(l *manifest.Line) error {
			switch {
			case l.IsRevisit():
				d.pins.Add(l)
				cost += int64(len(l.RefURI) + len(l.RefDate) + 64)
			case l.IsKept():
				d.kept = append(d.kept, *l)
				cost += lineCost(l) + 8
			case l.IsDuplicate():
				named.add(l)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	d.countUses(&named)
	o.digests.Put(digest, d, cost)
	return d, nil
}

// Responses returns the tables' lines of a digest that are not revisits:
// the records a revisit of that payload may refer to.
func (o *Originals) Responses(digest string) ([]manifest.Line, error) {
	var lines []manifest.Line
	for _, t := range o.tables {
		err := t.Find(digest, func(l *manifest.Line) error {
			if !l.IsRevisit() {
				lines = append(lines, *l)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return lines, nil
}

// Lock returns the lock of a file's replacement (field 1's spelling): a
// replacement takes it around the rename; no original is read from the
// file meanwhile, and those read after it are read from the new version.
func (o *Originals) Lock(file string) sync.Locker {
	key := fileKey(file)
	return &replaceLock{mu: o.lock(key), kept: &o.kept, file: key}
}

// lock is the lock of a file's replacement, by its key (fileKey): a read
// of an original in the file takes it for reading.
func (o *Originals) lock(key string) *sync.RWMutex {
	m, _ := o.locks.LoadOrStore(key, new(sync.RWMutex))
	return m.(*sync.RWMutex)
}

// ErrMixedAlgorithms: the originals manifests list digests of more than
// one algorithm.
var ErrMixedAlgorithms = errors.New("the originals manifests mix digest algorithms")

// ErrOriginal wraps why the original a line names cannot be used.
var ErrOriginal = errors.New("its original")

// Open reads the original l lists up to its payload and checks it: a whole
// response, not truncated or segmented, with l's URI and date, where the
// manifest, moved by moves, says it is. It returns the original and, if
// its payload is not kept in memory, a reader of the payload that checks
// the record's end when it reaches EOF.
//
// Open keeps a small original in memory until evicted, whatever the tables
// say of its reads (OpenPlanned does not): a caller may hold its payload
// while it opens another (undo's re-pointing), and a streamed payload
// holds its file's read lock, which a replacement waiting between the two
// would turn into a deadlock.
func (o *Originals) Open(ctx context.Context, l *manifest.Line, pol policy.Policy, moves Mover) (*Original, io.ReadCloser, error) {
	return o.open(ctx, l, 0, pol, moves)
}

// OpenPlanned is Open of the original p names, for the duplicate p was
// made for, by a caller that closes its payload before it opens another
// original (the rewrite's examiners): a small original is kept in memory
// only for the reads the tables say are still to come (the duplicate
// lines naming it), the only one streams it, the last drops it.
func (o *Originals) OpenPlanned(ctx context.Context, p Plan, pol policy.Policy, moves Mover) (*Original, io.ReadCloser, error) {
	return o.open(ctx, p.Original, p.uses, pol, moves)
}

// open is Open with how many duplicate lines name l (digestInfo.uses),
// 0 if not known.
func (o *Originals) open(ctx context.Context, l *manifest.Line, uses int, pol policy.Policy, moves Mover) (*Original, io.ReadCloser, error) {
	// One run has one policy, so a kept original's key stays right. Only
	// the line it was checked against may use it: another kept line at the
	// same place (a lying manifest's) names another URI, date or length,
	// which must be checked against the record, not taken on trust.
	key := origKey{l.File, l.Offset}
	if kp, ok := o.payloads.Get(key); ok && kp.orig.Line == *l {
		if kp.left.Add(-1) == 0 {
			o.payloads.Remove(key) // its last read
		}
		return kp.orig, nil, nil
	}
	// Hold the file's read lock while the record is read: a replacement of
	// its file in this run takes the write lock, so the offset moved by
	// the log and the file on disk agree.
	fk := fileKey(l.File)
	mu := o.lock(fk)
	mu.RLock()
	name, err := manifest.UnescapeFile(l.File)
	if err != nil {
		mu.RUnlock()
		return nil, nil, err
	}
	at := l.Offset
	if moves != nil {
		if at, err = moves.Move(name, l.Offset); err != nil {
			mu.RUnlock()
			return nil, nil, err
		}
	}
	body, err := o.kept.open(ctx, o.src, l.File, fk, at, l.Length)
	if err != nil {
		mu.RUnlock()
		return nil, nil, err
	}
	rr, err := o.reader(body, l.File)
	if err != nil {
		body.Close()
		mu.RUnlock()
		return nil, nil, err
	}
	rr.SetBase(at)
	r := &origReader{body: body, rr: rr, line: *l, unlock: mu.RUnlock, release: func() { o.readers.Put(rr) }}
	orig, err := r.start(pol)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	// A payload kept in memory is read into a slice of its own: for the
	// only read of it (one duplicate names it) the caller's comparison
	// buffer does, without the allocation (most originals of the bench
	// collection: 240 MB a run).
	if rr.BlockLeft() > payloadInline || uses == 1 {
		return orig, r, nil
	}
	orig.Payload, err = readAll(r, rr.BlockLeft())
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	kp := &keptPayload{orig: orig}
	kp.left.Store(int64(uses) - 1) // -1: not known, kept until evicted
	o.payloads.Put(key, kp, int64(len(orig.Payload)+len(orig.URI)+len(orig.Date)+len(orig.Key)+len(orig.Head)+256+16)+lineCost(l))
	return orig, nil, nil
}

// lineCost is what a manifest.Line copied into a cache holds: its struct
// and its strings, each a heap object of its own.
func lineCost(l *manifest.Line) int64 {
	return int64(unsafe.Sizeof(*l)) + int64(len(l.File)+len(l.URI)+len(l.Date)+len(l.Digest)+len(l.RefURI)+len(l.RefDate)) + 6*16
}

// readAll reads r to its end into a slice of the size the record says
// is left (size, at most payloadInline: only payloads kept in memory are
// read so): one allocation, where io.ReadAll's growth from 512 bytes made
// and cleared several for a 30 KB payload. A reader that gives more than
// size still reads whole (the slice grows); origReader never does, and
// checks the record's end itself.
func readAll(r io.Reader, size int64) ([]byte, error) {
	// One byte more, so that the read that meets the end has room.
	b := make([]byte, 0, min(max(size, 0), payloadInline)+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// reader returns a record reader of src from the pool, or a new one.
func (o *Originals) reader(src io.Reader, name string) (*record.Reader, error) {
	rr, _ := o.readers.Get().(*record.Reader)
	return record.Reuse(rr, src, name)
}

// origReader reads an original's payload, and checks at its end that the
// record ends exactly where its line says.
type origReader struct {
	body    io.ReadCloser
	rr      *record.Reader
	rec     *record.Record
	line    manifest.Line
	unlock  func()
	release func() // returns rr to its pool
	done    bool
}

func (r *origReader) start(pol policy.Policy) (*Original, error) {
	l := &r.line
	rec, head, err := l.ReadRecord(r.rr, manifest.Expect{})
	if err != nil {
		return nil, err
	}
	r.rec = rec
	// URI, Date and Key are cloned: as parts of the record's header they
	// would keep the whole of it in the payload cache, uncounted.
	return &Original{Line: *l, URI: strings.Clone(rec.TargetURI()), Date: strings.Clone(rec.Date), Key: strings.Clone(pol.Key(rec, head)),
		Head: bytes.Clone(head.Raw), PayloadLength: rec.BlockLength - int64(len(head.Raw))}, nil
}

func (r *origReader) Read(p []byte) (int, error) {
	n, err := r.rr.Read(p)
	if err == io.EOF && !r.done {
		r.done = true
		if ferr := r.finish(); ferr != nil {
			return n, ferr
		}
	}
	return n, err
}

// finish checks the record ends where its line says, with nothing after.
func (r *origReader) finish() error { return r.line.CheckEnd(r.rr, r.rec, true) }

func (r *origReader) Close() error {
	if r.unlock != nil {
		r.unlock()
		r.unlock = nil
	}
	err := r.body.Close()
	if r.release != nil {
		r.release()
		r.release = nil
	}
	return err
}
