package verify

import (
	"bytes"
	"fmt"
)

// The lines of the join by digest: what the after-manifest and the
// external records say of it, then its before-responses by payload class
// (ext), the earliest capture first, then the pairs of its pending
// before-responses with candidate revisits:
//
//	DIGEST 0 u|x
//	DIGEST 1 EXT DATE FILE OFFSET SEQ KEPT URI
//	DIGEST 2 EXT URI DATE SEQ SWEEP REVISIT-DIGEST REFURI REFDATE COUNT FILE OFFSET
const (
	digestFact    = "0"
	digestClass   = "1"
	digestPair    = "2"
	factUnclaimed = "u" // an after-response of the digest stands for no before-record
	factExternal  = "x" // a response outside the collection has the digest
)

// classFact writes a before-response's payload class and whether it is
// present after as itself.
func (g *capture) classFact(p *pendingResponse, kept bool) error {
	k := "0"
	if kept {
		k = "1"
	}
	return g.b.start().str(p.digest).str(digestClass).num(p.ext).str(g.date).str(p.file).num(p.offset).num(p.seq).str(k).str(g.uri).to(g.c.digests)
}

// joinClasses reads the before-responses by digest: it reports each
// payload class none of whose records is a response after (unless a
// response of the digest stands for no before-record and the digest has
// one class, or the external records have the digest), and gives each
// pair the number of payload classes of its before-response's digest,
// which decides whether a response of no known class may be its original.
func (c *comparison) joinClasses() error {
	in, err := c.sort.Sorted(c.ctx, c.digests)
	if err != nil {
		return err
	}
	defer in.Close()
	d := &digestGroup{c: c}
	for in.Next() {
		if err := d.add(in.Bytes()); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil {
		return err
	}
	if err := d.end(); err != nil {
		return err
	}
	return in.Close()
}

// digestGroup is the lines of one digest.
type digestGroup struct {
	c                   *comparison
	digest              []byte
	unclaimed, external bool
	classes             []payloadClass

	fs fields
	b  line
}

// payloadClass is the before-responses of one digest and ext.
type payloadClass struct {
	ext, records int64
	kept         bool // one of them is present after as itself
	// The earliest capture (date, file, offset; the first line of those
	// equal): the original.
	uri, date, file string
	offset          int64
}

func (d *digestGroup) add(l []byte) error {
	f := d.fs.split(l, 3)
	if f == nil {
		return d.fs.err
	}
	if !bytes.Equal(f[0], d.digest) {
		if err := d.end(); err != nil {
			return err
		}
		d.digest = append(d.digest[:0], f[0]...)
	}
	switch string(f[1]) {
	case digestFact:
		d.unclaimed = d.unclaimed || string(f[2]) == factUnclaimed
		d.external = d.external || string(f[2]) == factExternal
		return nil
	case digestClass:
		return d.class(l)
	case digestPair:
		return d.pair(l)
	}
	return errorf("a digest line of kind %q", f[1])
}

// class adds a before-response to its payload class.
func (d *digestGroup) class(l []byte) error {
	f := d.fs.split(l, 9)
	if f == nil {
		return d.fs.err
	}
	ext := d.fs.num(f[2])
	if n := len(d.classes); n == 0 || d.classes[n-1].ext != ext {
		d.classes = append(d.classes, payloadClass{ext: ext, date: string(f[3]), file: string(f[4]), offset: d.fs.num(f[5]), uri: string(f[8])})
	}
	pc := &d.classes[len(d.classes)-1]
	pc.records++
	pc.kept = pc.kept || string(f[7]) == "1"
	return d.fs.err
}

// pair asks the Refers-To target of a candidate revisit whether it is
// an original of the pending before-response's class.
func (d *digestGroup) pair(l []byte) error {
	f := d.fs.split(l, 13)
	if f == nil {
		return d.fs.err
	}
	return d.b.start().raw(f[8]).raw(f[9]).raw(f[0]).str(queryResolve).raw(f[2]).num(int64(len(d.classes))).
		raw(f[3]).raw(f[4]).raw(f[5]).raw(f[6]).raw(f[7]).raw(f[10]).raw(f[11]).raw(f[12]).to(d.c.queries)
}

// end reports the payload classes of the digest left without a response.
func (d *digestGroup) end() error {
	n := len(d.classes)
	for _, pc := range d.classes {
		if pc.kept || (n == 1 && d.unclaimed) || d.external {
			continue
		}
		name := "digest " + string(d.digest)
		if n > 1 {
			name += fmt.Sprintf(" ext %d (one of %d payload classes of the digest)", pc.ext, n)
		}
		d.c.lost++
		if err := d.c.violate(phaseLost, d.c.lost, "%s %s (%s, was %s offset %d): %s: none of its %d records before is a response after: the payload is lost",
			pc.uri, pc.date, d.digest, pc.file, pc.offset, name, pc.records); err != nil {
			return err
		}
	}
	d.classes, d.unclaimed, d.external = d.classes[:0], false, false
	return nil
}
