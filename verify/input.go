package verify

import (
	"fmt"
	"io"

	"warcdedup/internal/syssort"
	"warcdedup/manifest"
)

// The lines of the join by capture (URI and date), responses before
// revisits; after-lines ("a") before before-lines ("b") of the same key,
// which these take in the order of their line numbers (seq). An
// after-line's file and offset put an after-manifest that lists a record
// twice next to itself, to be refused (one line would stand for another
// copy of the capture, one that was lost):
//
//	URI DATE r DIGEST a FILE OFFSET
//	URI DATE r DIGEST b SEQ EXT FILE OFFSET
//	URI DATE v DIGEST REFURI REFDATE a FILE OFFSET
//	URI DATE v DIGEST REFURI REFDATE b SEQ FILE OFFSET
const (
	kindResponse = "r"
	kindRevisit  = "v"
	sideAfter    = "a"
	sideBefore   = "b"
)

// read writes the lines of the manifests to the files of the first join:
// the after-manifest's and the external records' on one core, the
// before-manifest's on another, each to files of its own (parsing them is
// most of the comparison's time). The after-manifest's errors are
// reported first (as when it was held in memory), then the external
// records', then the before-manifest's.
func (c *comparison) read(before, after, external *manifest.Reader) error {
	after.RequireFields(6, 7, 10)
	before.RequireFields(6, 7, 10)
	c.afterName = after.Name()
	beforeDone := make(chan error, 1)
	go func() { beforeDone <- c.readManifest(before, sideBefore, c.capturesBefore, &c.st.Before) }()
	err := c.readManifest(after, sideAfter, c.captures, &c.st.After)
	if err == nil && external != nil {
		err = c.readExternal(external)
	}
	if berr := <-beforeDone; err == nil {
		err = berr
	}
	return err
}

func (c *comparison) readManifest(r *manifest.Reader, side string, out *syssort.File, count *int64) error {
	var b line
	for {
		l, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		*count++
		b.start().str(l.URI).str(l.Date)
		if l.IsRevisit() {
			b.str(kindRevisit).str(l.Digest).str(l.RefURI).str(l.RefDate)
		} else {
			if l.Class < 0 {
				return r.Errorf("ext %d of a response", l.Class)
			}
			b.str(kindResponse).str(l.Digest)
		}
		b.str(side)
		if side == sideBefore {
			b.num(int64(r.LineNumber()))
			if !l.IsRevisit() {
				b.num(int64(l.Class))
			}
		}
		b.str(l.File).num(l.Offset)
		if err := b.to(out); err != nil {
			return err
		}
	}
}

// readExternal writes the responses outside the collection as targets
// and as digests a payload class may be kept under.
func (c *comparison) readExternal(r *manifest.Reader) error {
	var b line
	for {
		l, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if l.IsRevisit() {
			continue
		}
		if err := b.start().str(l.URI).str(l.Date).str(l.Digest).str(targetExternal).to(c.refs); err != nil {
			return err
		}
		if err := b.start().str(l.Digest).str(digestFact).str(factExternal).to(c.digests); err != nil {
			return err
		}
	}
}

// errorf is an error of the comparison itself (a temporary file that does
// not read back as written).
func errorf(format string, args ...any) error {
	return fmt.Errorf("verify: "+format, args...)
}
