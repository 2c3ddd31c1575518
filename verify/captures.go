package verify

import (
	"bytes"
	"fmt"
)

// joinCaptures reads both manifests' lines by capture (URI and date):
// each before-record takes an after-record of the same URI, date and
// digest (a before-revisit: the same Refers-To too) if one is left, and
// is then present as itself; each before-response left is paired with
// each after-revisit of its capture left, the candidates that may stand
// for it (judged by the passes after this one).
func (c *comparison) joinCaptures() error {
	in, err := c.sort.Sorted(c.ctx, c.captures, c.capturesBefore)
	if err != nil {
		return err
	}
	defer in.Close()
	g := &capture{c: c}
	for in.Next() {
		if err := g.add(in.Bytes()); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil {
		return err
	}
	if err := g.end(); err != nil {
		return err
	}
	return in.Close()
}

// capture is the lines of one URI and date, read in the order of
// joinCaptures: a group of the lines of one key (a response's digest, a
// revisit's digest and Refers-To) after another, each the after-lines
// first.
type capture struct {
	c         *comparison
	key       []byte // URI DATE
	uri, date string
	// The group of lines being read: its key (the line up to the side),
	// kind and fields; its after-lines, and how many before-lines took one.
	group                   []byte
	kind                    string
	digest, refURI, refDate string
	after, taken            int64
	// Of the whole capture: whether it has after-revisits, its
	// before-responses not present as themselves, and its after-revisits
	// that no before-revisit took.
	revisitAfter bool
	pending      []pendingResponse
	free         []freeRevisit
	// The after-line read last: the same line again is one record listed
	// twice.
	lastAfter []byte

	fs fields
	b  line
}

// pendingResponse is a before-response that is not present after as
// itself: it must be there as a revisit.
type pendingResponse struct {
	seq, ext, offset int64
	digest, file     string
}

// freeRevisit is the after-revisits of a capture of one digest and
// Refers-To that no before-revisit took: count of them.
type freeRevisit struct {
	digest, refURI, refDate string
	count                   int64
}

func (g *capture) add(l []byte) error {
	f := g.fs.split(l, 4)
	if f == nil {
		return g.fs.err
	}
	side := 4 // where a response line's side is
	if string(f[2]) == kindRevisit {
		side = 6
	}
	if f = g.fs.split(l, side+2); f == nil {
		return g.fs.err
	}
	if key := l[:len(f[0])+1+len(f[1])]; !bytes.Equal(key, g.key) {
		if err := g.end(); err != nil {
			return err
		}
		g.key = append(g.key[:0], key...)
		g.uri, g.date = string(f[0]), string(f[1])
	}
	if group := l[:prefixLen(f, side)]; !bytes.Equal(group, g.group) {
		if err := g.endGroup(); err != nil {
			return err
		}
		g.group = append(g.group[:0], group...)
		g.kind, g.digest, g.after, g.taken = string(f[2]), string(f[3]), 0, 0
		if g.kind == kindRevisit {
			g.refURI, g.refDate = string(f[4]), string(f[5])
		}
	}
	if string(f[side]) == sideAfter {
		if bytes.Equal(l, g.lastAfter) {
			if f = g.fs.split(l, side+3); f == nil {
				return g.fs.err
			}
			return fmt.Errorf("%s: %s offset %d is listed twice: one record cannot stand for two", g.c.afterName, f[side+1], g.fs.num(f[side+2]))
		}
		g.lastAfter = append(g.lastAfter[:0], l...)
		g.after++
		g.revisitAfter = g.revisitAfter || g.kind == kindRevisit
		return nil
	}
	n := side + 4 // the side, SEQ, [EXT,] FILE, OFFSET
	if g.kind == kindResponse {
		n++
	}
	if f = g.fs.split(l, n); f == nil {
		return g.fs.err
	}
	seq := g.fs.num(f[side+1])
	if g.kind == kindRevisit {
		return g.beforeRevisit(seq, string(f[side+2]), g.fs.num(f[side+3]))
	}
	return g.beforeResponse(pendingResponse{seq: seq, ext: g.fs.num(f[side+2]), digest: g.digest,
		file: string(f[side+3]), offset: g.fs.num(f[side+4])})
}

// prefixLen is the length of the line up to field i, the space before it
// left out.
func prefixLen(f [][]byte, i int) int {
	n := i - 1
	for _, p := range f[:i] {
		n += len(p)
	}
	return n
}

// beforeResponse takes an after-response for a before-response if one is
// left, and notes its payload class.
func (g *capture) beforeResponse(p pendingResponse) error {
	if g.fs.err != nil {
		return g.fs.err
	}
	kept := g.taken < g.after
	if kept {
		g.taken++
		g.c.st.Themselves++
		// The after-response is of the before-response's class.
		if err := g.b.start().str(g.uri).str(g.date).str(p.digest).str(targetKept).num(p.ext).to(g.c.refs); err != nil {
			return err
		}
	} else {
		g.pending = append(g.pending, p)
		if err := g.b.start().str(g.uri).str(g.date).str(p.digest).str(targetPending).to(g.c.pending); err != nil {
			return err
		}
	}
	return g.classFact(&p, kept)
}

// beforeRevisit takes an unchanged after-revisit for a before-revisit, or
// reports it missing.
func (g *capture) beforeRevisit(seq int64, file string, offset int64) error {
	if g.fs.err != nil {
		return g.fs.err
	}
	if g.taken == g.after {
		return g.c.violate(phaseRevisitMissing, seq, "%s %s (revisit %s, was %s offset %d): a revisit before (refers to %s %s) is missing after",
			g.uri, g.date, g.digest, file, offset, g.refURI, g.refDate)
	}
	g.taken++
	g.c.st.Themselves++
	// If it named a before-response, that must still be a response.
	g.c.chains = true
	g.c.star = g.c.star || g.refDate == "*"
	return g.b.start().str(g.refURI).str(g.refDate).str(g.digest).str(queryChain).
		num(seq).str(g.uri).str(g.date).str(file).num(offset).to(g.c.queries)
}

// endGroup notes the after-lines of the group that no before-line took.
func (g *capture) endGroup() error {
	left := g.after - g.taken
	g.after, g.taken = 0, 0
	if left == 0 {
		return nil
	}
	if g.kind == kindRevisit {
		g.free = append(g.free, freeRevisit{digest: g.digest, refURI: g.refURI, refDate: g.refDate, count: left})
		return nil
	}
	// Responses of no before-record: their class is unknown.
	if err := g.b.start().str(g.uri).str(g.date).str(g.digest).str(targetUnkept).to(g.c.refs); err != nil {
		return err
	}
	return g.b.start().str(g.digest).str(digestFact).str(factUnclaimed).to(g.c.digests)
}

// end finishes the capture: each pending before-response is paired with
// each revisit left.
func (g *capture) end() error {
	if err := g.endGroup(); err != nil {
		return err
	}
	g.group = g.group[:0]
	if g.revisitAfter {
		if err := g.b.start().str(g.uri).str(g.date).str(noDigest).str(targetRevisit).to(g.c.refs); err != nil {
			return err
		}
	}
	for i := range g.pending {
		if err := g.pair(&g.pending[i]); err != nil {
			return err
		}
	}
	g.pending, g.free, g.revisitAfter = g.pending[:0], g.free[:0], false
	return nil
}

// pair writes the candidates of a pending before-response: a revisit in
// the same algorithm with another digest is judged here, the others need
// their payload class's digest (joinClasses) and their Refers-To target
// (joinTargets).
func (g *capture) pair(p *pendingResponse) error {
	if len(g.free) == 0 {
		return g.c.violate(phaseResponse, p.seq, "%s %s (%s, was %s offset %d): missing after, neither as itself nor as a revisit",
			g.uri, g.date, p.digest, p.file, p.offset)
	}
	for _, t := range g.free {
		sweep := sweepExact
		if t.digest != p.digest {
			sweep = sweepOther
		}
		if sweep == sweepOther && sameAlgorithm(t.digest, p.digest) {
			ch := choice{uri: g.uri, date: g.date, seq: p.seq, sweep: sweep, revisit: t, response: *p,
				why: fmt.Sprintf("now a revisit with another digest, %s", t.digest)}
			if err := ch.write(&g.b, g.c.choices); err != nil {
				return err
			}
			continue
		}
		g.c.star = g.c.star || t.refDate == "*"
		err := g.b.start().str(p.digest).str(digestPair).num(p.ext).str(g.uri).str(g.date).num(p.seq).str(sweep).
			str(t.digest).str(t.refURI).str(t.refDate).num(t.count).str(p.file).num(p.offset).to(g.c.digests)
		if err != nil {
			return err
		}
	}
	return nil
}
