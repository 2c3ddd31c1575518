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
	refuse := func(err error) error { return &inplace.RefusedError{File: l.File, Offset: l.Offset, Err: err} }
	rec, err := manifest.NextRecord(rr)
	if err != nil {
		return nil, refuse(err)
	}
	if rec.Format != record.WARC {
		return nil, errARC
	}
	// Rewriting from an offset that names no record (a plain file's line
	// ends before one, which the reader skips) would cut the terminator of
	// the record before.
	if err := l.CheckRecord(rec, manifest.Expect{Revisit: true}); err != nil {
		return nil, refuse(err)
	}
	if rec.Type == "revisit" {
		// Done by an earlier run if it points where this line says.
		if revisit.RefersURI(rec) != l.RefURI || rec.Header.Get(hRefersDate) != l.RefDate {
			return nil, refuse(fmt.Errorf("%w: a revisit that refers to %s %s, not %s %s", manifest.ErrNotResponse,
				rec.Header.Get(hRefersURI), rec.Header.Get(hRefersDate), l.RefURI, l.RefDate))
		}
		if err := rr.Finish(); err != nil {
			return nil, refuse(fmt.Errorf("%w: %v", manifest.ErrNotARecord, err))
		}
		return &found{already: true, length: rec.Length}, nil
	}
	head, err := manifest.ReadHTTPHead(rr)
	if err != nil {
		return nil, refuse(err)
	}
	x.head = append(x.head[:0], head.Raw...)
	key := x.r.Policy.Key(rec, head)

	// The original, read and checked now.
	orig, origPayload, err := x.r.Originals.Open(ctx, p.Original, x.r.Policy, x.moves)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, refuse(fmt.Errorf("%w %s offset %d (%s %s): %v", originals.ErrOriginal, p.Original.File, p.Original.Offset, p.Original.URI, p.Original.Date, err))
	}
	if origPayload != nil {
		defer origPayload.Close()
	}
	if orig.Key != key {
		return nil, refuse(fmt.Errorf("%w under the %s policy: it is %s, this record %s", ErrNotEquivalent, x.r.Policy, policy.Describe(orig.Key), policy.Describe(key)))
	}

	// Hash the payload in the manifest's algorithm and, if it differs, in
	// that of the record's own WARC-Payload-Digest, to know whether the
	// record's value may be kept; compare it with the original's.
	algo := l.Algorithm()
	sum := x.hash(algo)
	var own hash.Hash
	ownValue, hasOwn := rec.Header.Lookup(hPayloadDigest)
	ownAlgo, ownSum, ownErr := digest.ParseHeader(ownValue)
	cmp := originals.NewComparer(orig, origPayload, x.buf)
	sinks := []io.Writer{sum, cmp}
	if hasOwn && ownErr == nil && ownAlgo != algo {
		own = x.hash(ownAlgo)
		sinks = append(sinks, own)
	}
	// The block's digest as undo would write it, to know whether the
	// revisit must keep the header (see revisit.KeptFor).
	var block hash.Hash
	blockDigestValue, hasBlockDigest := rec.Header.Lookup(hBlockDigest)
	if hasBlockDigest {
		block = x.blockHash(revisit.BlockDigestAlgorithm(blockDigestValue))
		block.Write(x.head)
		sinks = append(sinks, block)
	}
	rawHeader := append(x.rawHeader[:0], rr.RawHeader()...)
	x.rawHeader = rawHeader
	if _, err := rr.WriteTo(io.MultiWriter(sinks...)); err != nil {
		if errors.Is(err, originals.ErrOriginal) {
			return nil, refuse(fmt.Errorf("%s offset %d: %w", p.Original.File, p.Original.Offset, err))
		}
		return nil, refuse(fmt.Errorf("%w: %v", manifest.ErrNotARecord, err))
	}
	if err := l.CheckEnd(rr, rec, false); err != nil {
		return nil, refuse(err)
	}
	trailer, whole := rr.Trailer()
	if !whole {
		return nil, refuse(fmt.Errorf("%w: more line ends follow its block than a revisit keeps for undo", manifest.ErrNotARecord))
	}
	if err := l.CheckDigest(sum.Sum(nil)); err != nil {
		return nil, refuse(err)
	}
	same, err := cmp.End()
	if err != nil {
		return nil, refuse(fmt.Errorf("%s offset %d: %w", p.Original.File, p.Original.Offset, err))
	}
	if !same {
		return nil, refuse(fmt.Errorf("%w (%s offset %d)", ErrPayloadDiffers, p.Original.File, p.Original.Offset))
	}

	payloadDigest := l.Digest
	if hasOwn && ownErr == nil {
		ownRight := false
		if own != nil {
			ownRight = bytes.Equal(own.Sum(nil), ownSum)
		} else {
			ownRight = bytes.Equal(sum.Sum(nil), ownSum)
		}
		if ownRight {
			// What an indexer saw on the original, so lookups match.
			payloadDigest = strings.TrimSpace(ownValue)
		}
	}
	// The original's URI and date as its record spells them (without a
	// wget <...> wrapper): what indexers record for it, byte for byte.
	v := revisit.Revisit{Record: rec, HTTPHead: x.head, RefURI: orig.URI, RefDate: orig.Date, PayloadDigest: payloadDigest}
	if x.r.Container != nil {
		v.Container = x.r.Container(l, p.Original)
	}
	b, err := v.Bytes()
	if err != nil {
		return nil, refuse(err)
	}
	var blockDigest string
	if hasBlockDigest {
		blockDigest = revisit.BlockDigestAlgorithm(blockDigestValue).Format(block.Sum(nil))
	}
	if v.Kept, err = revisit.KeptFor(b, rawHeader, trailer, rec.BlockLength, blockDigest); err != nil {
		return nil, refuse(err)
	}
	if v.Kept.Any() {
		if b, err = v.Bytes(); err != nil {
			return nil, refuse(err)
		}
	}
	return &found{revisit: b, length: rec.Length, digest: payloadDigest, refURI: manifest.EscapeField(orig.URI), refDate: manifest.EscapeField(orig.Date)}, nil
}
