package refs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"warcdedup/digest"
	"warcdedup/gzmember"
	"warcdedup/gzmulti"
	"warcdedup/inplace"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/record"
	"warcdedup/revisit"
)

// The reasons a line refuses its file, wrapped in an *inplace.RefusedError, besides
// those of a line that no longer names its record (manifest.ErrNotARecord
// and the others).
var (
	ErrOverlap = errors.New("the line overlaps the record before it")
	// ErrNotEquivalent: the original would replay differently (policy).
	ErrNotEquivalent = errors.New("its original would replay differently")
	// ErrPayloadDiffers: the payload is not byte for byte the original's.
	ErrPayloadDiffers = errors.New("its payload differs from its original's, byte for byte")
	// errARC: an ARC record has no revisit form; the file is skipped, not
	// refused (convert it to WARC, then deduplicate the WARC).
	errARC = errors.New("ARC records cannot become revisits: convert the file to WARC first")
)

// The WARC fields the rewrite reads.
const (
	hRefersURI     = "WARC-Refers-To-Target-URI"
	hRefersDate    = "WARC-Refers-To-Date"
	hPayloadDigest = "WARC-Payload-Digest"
	hBlockDigest   = "WARC-Block-Digest"
)

// found is what stands at a line's offset.
type found struct {
	revisit   []byte // the revisit to write (plain record bytes), for a response
	already   bool   // the record is already this line's revisit
	protected bool   // a revisit in the collection refers to it: it stays
	length    int64  // the record's length as stored
	digest    string // the revisit's WARC-Payload-Digest, for the log
	refURI    string // its WARC-Refers-To-Target-URI, escaped, for the log
	refDate   string // its WARC-Refers-To-Date, escaped, for the log
	// member is the description of the record's gzip member as stored
	// (gzmember.Description's text form), for the log; "" in an
	// uncompressed file or when the member could not be described.
	member string
}

// examiner examines records; one per goroutine, keeping its buffers.
type examiner struct {
	r *Rewriter
	// moves moves the originals' offsets: the run's log in place.
	moves  originals.Mover
	hashes map[digest.Algorithm]hash.Hash
	head   []byte
	// rawHeader is the record's header as stored, kept past the reads of
	// its block (the reader's own copy is valid until its next record).
	rawHeader []byte
	blocks    map[digest.Algorithm]hash.Hash
	buf       []byte // comparison buffer
	rr        *record.Reader
	zw        *gzmulti.Writer
	zbuf      bytes.Buffer
	// describer describes the member of the record being examined in a
	// .gz file, from the bytes the reader reads.
	describer *gzmember.Describer
}

func newExaminer(r *Rewriter, moves originals.Mover) *examiner {
	return &examiner{r: r, moves: moves, hashes: map[digest.Algorithm]hash.Hash{}, blocks: map[digest.Algorithm]hash.Hash{}, buf: make([]byte, 0, 64<<10)}
}

// blockHash is a hash of a's for a block, apart from those of hash (the
// block and payload are hashed at once, maybe in the same algorithm).
func (x *examiner) blockHash(a digest.Algorithm) hash.Hash {
	h := x.blocks[a]
	if h == nil {
		h = a.New()
		x.blocks[a] = h
	}
	h.Reset()
	return h
}

// reader returns the examiner's record reader, reset onto src.
func (x *examiner) reader(src io.Reader, name string) (*record.Reader, error) {
	rr, err := record.Reuse(x.rr, src, name)
	if rr != nil {
		rr.KeepHeaders(true) // what a revisit may keep for undo
	}
	x.rr = rr
	return rr, err
}

func (x *examiner) hash(a digest.Algorithm) hash.Hash {
	h := x.hashes[a]
	if h == nil {
		h = a.New()
		x.hashes[a] = h
	}
	h.Reset()
	return h
}

// examine reads the record at the reader's start and checks it against l:
// either the response l names (then the revisit that replaces it is built)
// or a revisit of l's original written by an earlier run (then nothing is
// to be done). A response becomes a revisit only if its payload hashes to
// l's digest and equals, byte for byte, the payload of the original p
// names, read and checked now, and the two would replay alike.
func (x *examiner) examine(ctx context.Context, rr *record.Reader, l *manifest.Line, p originals.Plan) (*found, error) {
	rec, err := x.readRecord(rr, l)
	if err != nil {
		return nil, err
	}
	if rec.Type == "revisit" {
		return x.earlierRevisit(rr, rec, l)
	}
	head, err := manifest.ReadHTTPHead(rr)
	if err != nil {
		return nil, refusal(l, err)
	}
	x.head = append(x.head[:0], head.Raw...)
	key := x.r.Policy.Key(rec, head)
	orig, origPayload, err := x.original(ctx, l, p)
	if err != nil {
		return nil, err
	}
	if origPayload != nil {
		defer origPayload.Close() // once the revisit is built
	}
	if orig.Key != key {
		return nil, refusal(l, fmt.Errorf("%w under the %s policy: it is %s, this record %s", ErrNotEquivalent, x.r.Policy, policy.Describe(orig.Key), policy.Describe(key)))
	}
	sums, err := x.comparePayload(rr, rec, l, p, orig, originals.NewComparer(orig, origPayload, x.buf))
	if err != nil {
		return nil, err
	}
	return x.revisitOf(rec, l, p, orig, &sums)
}

// refusal is err as the reason l refuses its file.
func refusal(l *manifest.Line, err error) error {
	return &inplace.RefusedError{File: l.File, Offset: l.Offset, Err: err}
}

// readRecord reads the record at the reader's start: the WARC record l
// names, a response or an earlier run's revisit.
func (x *examiner) readRecord(rr *record.Reader, l *manifest.Line) (*record.Record, error) {
	rec, err := manifest.NextRecord(rr)
	if err != nil {
		return nil, refusal(l, err)
	}
	if rec.Format != record.WARC {
		return nil, errARC
	}
	// Rewriting from an offset that names no record (a plain file's line
	// ends before one, which the reader skips) would cut the terminator of
	// the record before.
	if err := l.CheckRecord(rec, manifest.Expect{Revisit: true}); err != nil {
		return nil, refusal(l, err)
	}
	return rec, nil
}

// earlierRevisit checks a revisit where l's response was: done by an
// earlier run if it points where l says and is whole.
func (x *examiner) earlierRevisit(rr *record.Reader, rec *record.Record, l *manifest.Line) (*found, error) {
	if revisit.RefersURI(rec) != l.RefURI || rec.Header.Get(hRefersDate) != l.RefDate {
		return nil, refusal(l, fmt.Errorf("%w: a revisit that refers to %s %s, not %s %s", manifest.ErrNotResponse,
			rec.Header.Get(hRefersURI), rec.Header.Get(hRefersDate), l.RefURI, l.RefDate))
	}
	if err := rr.Finish(); err != nil {
		return nil, refusal(l, fmt.Errorf("%w: %v", manifest.ErrNotARecord, err))
	}
	return &found{already: true, length: rec.Length}, nil
}

// original opens the original p names, read and checked now; its payload
// is nil when the original holds it in memory. A cancelled run is no
// refusal of l's file.
func (x *examiner) original(ctx context.Context, l *manifest.Line, p originals.Plan) (*originals.Original, io.ReadCloser, error) {
	orig, payload, err := x.r.Originals.OpenPlanned(ctx, p, x.r.Policy, x.moves)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, refusal(l, fmt.Errorf("%w %s offset %d (%s %s): %v", originals.ErrOriginal, p.Original.File, p.Original.Offset, p.Original.URI, p.Original.Date, err))
	}
	return orig, payload, nil
}

// payloadSums are the hashes a response's payload and block stream into as
// they are compared with the original's, and what its revisit needs of
// them.
type payloadSums struct {
	// sum hashes the payload in the manifest's algorithm, unless deferred
	// does (its cmp set): then nothing is hashed while the payload equals
	// an original's in memory that has l's digest. sumOf is the payload's
	// digest once it was all read.
	sum      hash.Hash
	deferred deferredSum
	sumOf    []byte
	// The record's own WARC-Payload-Digest, ownOK if it has one that
	// parses; own hashes the payload in its algorithm when that is not the
	// manifest's, to know whether the record's value may be kept.
	ownValue string
	ownSum   []byte
	ownOK    bool
	own      hash.Hash
	// block is the block's digest as undo would write it, when the record
	// has a WARC-Block-Digest (blockValue), to know whether the revisit
	// must keep the header (see revisit.KeptFor).
	blockValue string
	block      hash.Hash
	trailer    []byte // the line ends after the block, as stored
}

// comparePayload streams the rest of the record into its hashes and cmp,
// and refuses it unless it ends where l says, hashes to l's digest and
// its payload is the original's, byte for byte.
//
// The payload is not hashed in l's algorithm while cmp finds it equal to
// an original's payload in memory known to have l's digest, as an earlier
// duplicate equal to it and hashed whole had (Original.PayloadHasDigest,
// deferredSum): equal to it, byte for byte, it has that digest too. Where
// it differs, its digest is known all the same, so that a file changed
// since the manifest was made is refused for its digest (a stale
// manifest) and a collision kept apart as before
// (TestPayloadKeptInMemoryStale). On the bench collection 3,640 of the
// 12,117 duplicates (80 of 355 MB of payload) are not hashed so
// (BenchmarkComparePayload: 3.7 us against 19.7 for 30 kB).
func (x *examiner) comparePayload(rr *record.Reader, rec *record.Record, l *manifest.Line, p originals.Plan, orig *originals.Original, cmp *originals.Comparer) (payloadSums, error) {
	s := x.newPayloadSums(rec, l)
	if known, ok := knownDigest(l, orig, cmp); ok {
		s.deferred = deferredSum{h: s.sum, cmp: cmp, orig: orig.Payload, known: known}
		s.sum = nil
	}
	var w [4]io.Writer // room for every writer: no allocation per record
	x.rawHeader = append(x.rawHeader[:0], rr.RawHeader()...)
	if _, err := rr.WriteTo(io.MultiWriter(s.writers(w[:0], cmp)...)); err != nil {
		if errors.Is(err, originals.ErrOriginal) {
			return s, refusal(l, fmt.Errorf("%s offset %d: %w", p.Original.File, p.Original.Offset, err))
		}
		return s, refusal(l, fmt.Errorf("%w: %v", manifest.ErrNotARecord, err))
	}
	if err := l.CheckEnd(rr, rec, false); err != nil {
		return s, refusal(l, err)
	}
	trailer, whole := rr.Trailer()
	if !whole {
		return s, refusal(l, fmt.Errorf("%w: more line ends follow its block than a revisit keeps for undo", manifest.ErrNotARecord))
	}
	s.trailer = trailer
	if s.sum != nil {
		s.sumOf = s.sum.Sum(nil)
	} else {
		s.sumOf = s.deferred.sum()
	}
	if err := l.CheckDigest(s.sumOf); err != nil {
		return s, refusal(l, err)
	}
	same, err := cmp.End()
	if err != nil {
		return s, refusal(l, fmt.Errorf("%s offset %d: %w", p.Original.File, p.Original.Offset, err))
	}
	if !same {
		return s, refusal(l, fmt.Errorf("%w (%s offset %d)", ErrPayloadDiffers, p.Original.File, p.Original.Offset))
	}
	if s.sum != nil && cmp.InMemory() {
		// Hashed whole to l's digest and equal to it: so is the original's.
		orig.NotePayloadDigest(l.Digest)
	}
	return s, nil
}

// newPayloadSums starts the hashes of the payload, in the manifest's
// algorithm and, if it differs, in that of the record's own
// WARC-Payload-Digest, and of the block (its HTTP head already in).
func (x *examiner) newPayloadSums(rec *record.Record, l *manifest.Line) payloadSums {
	algo := l.Algorithm()
	s := payloadSums{sum: x.hash(algo)}
	ownValue, hasOwn := rec.Header.Lookup(hPayloadDigest)
	ownAlgo, ownSum, ownErr := digest.ParseHeader(ownValue)
	s.ownValue, s.ownSum, s.ownOK = ownValue, ownSum, hasOwn && ownErr == nil
	if s.ownOK && ownAlgo != algo {
		s.own = x.hash(ownAlgo)
	}
	blockValue, hasBlock := rec.Header.Lookup(hBlockDigest)
	if hasBlock {
		s.blockValue = blockValue
		s.block = x.blockHash(revisit.BlockDigestAlgorithm(blockValue))
		s.block.Write(x.head)
	}
	return s
}

// knownDigest returns l's digest, decoded, if cmp compares the payload
// with the original's in memory, known to hash to it.
func knownDigest(l *manifest.Line, orig *originals.Original, cmp *originals.Comparer) ([]byte, bool) {
	if !cmp.InMemory() || !orig.PayloadHasDigest(l.Digest) {
		return nil, false
	}
	_, sum, err := digest.Parse(l.Digest)
	return sum, err == nil
}

// writers appends to w what the record streams into: the payload's hash,
// cmp, then the other hashes there are. cmp comes before those so that an
// original that cannot be read stops the copy at once, and before the
// deferred hash of the payload, which goes by what cmp found.
func (s *payloadSums) writers(w []io.Writer, cmp io.Writer) []io.Writer {
	if s.sum != nil {
		w = append(w, s.sum, cmp)
	} else {
		w = append(w, cmp, &s.deferred)
	}
	if s.own != nil {
		w = append(w, s.own)
	}
	if s.block != nil {
		w = append(w, s.block)
	}
	return w
}

// deferredSum hashes a payload that cmp compares with an original's
// payload in memory known to have l's digest (Original.PayloadHasDigest):
// nothing while the payload equals it, byte for byte (it then has that
// digest, known); from the first write that differs, the part found
// equal, taken from the original, then the rest. Its digest is then known
// whatever the payload holds, at the cost of a hash only where it
// differs. It must be written after cmp, which has then judged each
// write.
type deferredSum struct {
	h       hash.Hash
	cmp     *originals.Comparer
	orig    []byte // the original's payload
	known   []byte // its digest, l's
	started bool
}

func (d *deferredSum) Write(p []byte) (int, error) {
	if !d.started {
		if !d.cmp.Differs() {
			return len(p), nil
		}
		d.started = true
		d.h.Write(d.orig[:d.cmp.Matched()])
	}
	return d.h.Write(p)
}

// sum is the digest of the payload written.
func (d *deferredSum) sum() []byte {
	switch {
	case d.started:
		return d.h.Sum(nil)
	case d.cmp.Matched() == int64(len(d.orig)):
		return d.known
	}
	// Shorter than the original, and equal to its start.
	d.h.Write(d.orig[:d.cmp.Matched()])
	return d.h.Sum(nil)
}

// payloadDigest is the revisit's WARC-Payload-Digest: the record's own
// when it is right (what an indexer saw on the original, so lookups
// match), else l's.
func (s *payloadSums) payloadDigest(l *manifest.Line) string {
	if !s.ownOK {
		return l.Digest
	}
	got := s.sumOf
	if s.own != nil {
		got = s.own.Sum(nil)
	}
	if bytes.Equal(got, s.ownSum) {
		return strings.TrimSpace(s.ownValue)
	}
	return l.Digest
}

// revisitOf builds the revisit that replaces rec, keeping what undo needs
// of its header and trailer that the revisit would not give back.
func (x *examiner) revisitOf(rec *record.Record, l *manifest.Line, p originals.Plan, orig *originals.Original, s *payloadSums) (*found, error) {
	payloadDigest := s.payloadDigest(l)
	// The original's URI and date as its record spells them (without a
	// wget <...> wrapper): what indexers record for it, byte for byte.
	v := revisit.Revisit{Record: rec, HTTPHead: x.head, RefURI: orig.URI, RefDate: orig.Date, PayloadDigest: payloadDigest}
	if x.r.Container != nil {
		v.Container = x.r.Container(l, p.Original)
	}
	b, err := v.Bytes()
	if err != nil {
		return nil, refusal(l, err)
	}
	var blockDigest string
	if s.block != nil {
		blockDigest = revisit.BlockDigestAlgorithm(s.blockValue).Format(s.block.Sum(nil))
	}
	if v.Kept, err = revisit.KeptFor(b, x.rawHeader, s.trailer, rec.BlockLength, blockDigest); err != nil {
		return nil, refusal(l, err)
	}
	if v.Kept.Any() {
		if b, err = v.Bytes(); err != nil {
			return nil, refusal(l, err)
		}
	}
	return &found{revisit: b, length: rec.Length, digest: payloadDigest, refURI: manifest.EscapeField(orig.URI), refDate: manifest.EscapeField(orig.Date)}, nil
}
