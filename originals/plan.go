package originals

import (
	"errors"
	"fmt"

	"warcdedup/manifest"
)

// The reasons a duplicate line has no original it may become a revisit of.
var (
	// ErrNoOriginal: no kept record (copy 1) of the line's class has the
	// URI and date the line names: the manifest names no original, names
	// one of another class, or lists the class without keeping any record.
	ErrNoOriginal = errors.New("no record kept (copy 1) of its class has the URI and date it names")
	// ErrIsOriginal: the record is itself kept (copy 1) by the originals
	// manifest; rewriting it would lose what others refer to.
	ErrIsOriginal = errors.New("the record is an original (copy 1) in the originals manifest")
	// ErrSelfReference: the original has the duplicate's own URI and date;
	// wabac.js drops such a revisit, and every index confuses the two.
	ErrSelfReference = errors.New("its original has its own URI and date")
)

// Plan is what the originals manifest says about a duplicate line, before
// its record is read: whether it stays a response (Protected: a revisit in
// the collection refers to it) or which kept record is its original.
type Plan struct {
	Protected bool
	Original  *manifest.Line
	// uses is how many duplicate lines name Original (digestInfo.uses),
	// for OpenPlanned.
	uses int
}

// Plan checks the duplicate line l against the originals manifest: it
// must not be kept itself, must name a kept record of its own class, not
// one with its own URI and date; a line whose record an existing revisit
// refers to stays.
//
// A record is kept if a kept line of its digest (any class) names its file
// and offset, or its URI and date: revisits, those of this run and those
// already in the collection, name their originals by URI and date, and
// one record has many names (another spelling of field 1, a symbolic
// link, a --locations entry), so a record could otherwise be rewritten
// under one name while a revisit refers to it under another.
func (o *Originals) Plan(l *manifest.Line) (Plan, error) {
	d, err := o.lookup(l.Digest)
	if err != nil {
		return Plan{}, err
	}
	if d.pins.Has(l.URI, l.Date) || o.global.Has(l.URI, l.Date) {
		return Plan{Protected: true}, nil
	}
	var orig, same *manifest.Line
	uses := 0
	for i := range d.kept {
		k := &d.kept[i]
		if k.File == l.File && k.Offset == l.Offset {
			return Plan{}, ErrIsOriginal
		}
		if same == nil && k.URI == l.URI && k.Date == l.Date {
			same = k
		}
		if orig == nil && k.Class == l.Class && k.URI == l.RefURI && k.Date == l.RefDate {
			orig, uses = k, d.uses[i]
		}
	}
	switch {
	case orig == nil:
		return Plan{}, fmt.Errorf("%w (%s %s, digest %s ext %d)", ErrNoOriginal, l.RefURI, l.RefDate, l.Digest, l.Class)
	case orig.URI == l.URI && orig.Date == l.Date:
		return Plan{}, ErrSelfReference
	case same != nil:
		return Plan{}, fmt.Errorf("%w: the kept line %s %d has its URI and date (the same record under another name?)", ErrIsOriginal, same.File, same.Offset)
	}
	return Plan{Original: orig, uses: uses}, nil
}
