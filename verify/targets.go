package verify

import (
	"bytes"
	"fmt"
	"slices"

	"warcdedup/internal/syssort"
)

// The lines of the join by Refers-To target (URI and date, or "*" for
// any date of the URI): what is there, then what is asked of it, by
// digest:
//
//	URI DATE DIGEST e            a response outside the collection
//	URI DATE DIGEST k EXT        an after-response present as a before-response of class EXT
//	URI DATE ! m                 an after-revisit
//	URI DATE DIGEST n            an after-response that stands for no before-record
//	URI DATE DIGEST p            a before-response not present as itself
//	REFURI REFDATE DIGEST y EXT CLASSES URI DATE SEQ SWEEP REVISIT-DIGEST COUNT FILE OFFSET
//	REFURI REFDATE DIGEST z SEQ URI DATE FILE OFFSET
//
// y asks whether a candidate revisit of a pending before-response
// (DIGEST, EXT, of a digest of CLASSES payload classes) resolves to an
// original of its class; z whether the target of a before-revisit found
// unchanged (of DIGEST) was a response before and is no longer one.
const (
	targetExternal = "e"
	targetKept     = "k"
	targetRevisit  = "m"
	targetUnkept   = "n"
	targetPending  = "p"
	queryResolve   = "y"
	queryChain     = "z"
	// noDigest is the digest field of an after-revisit's line: before
	// every digest.
	noDigest = "!"
)

// joinTargets answers what the passes before asked of Refers-To targets.
func (c *comparison) joinTargets() error {
	if c.queries.Lines == 0 {
		return nil
	}
	targets := []*syssort.File{c.refs}
	if c.chains {
		targets = append(targets, c.pending)
	}
	inputs := append([]*syssort.File{c.queries}, targets...)
	if c.star {
		for _, f := range targets {
			s, err := c.anyDate(f)
			if err != nil {
				return err
			}
			defer s.Remove()
			inputs = append(inputs, s)
		}
	}
	sorted, err := c.sort.SortLines(c.ctx, "verify-targets", inputs...)
	if err != nil {
		return err
	}
	defer sorted.Remove()
	in, err := sorted.Open()
	if err != nil {
		return err
	}
	defer in.Close()
	ahead, err := sorted.Open()
	if err != nil {
		return err
	}
	defer ahead.Close()
	t := &targetJoin{c: c, ahead: targetAhead{in: ahead}}
	for in.Next() {
		if err := t.add(in.Bytes()); err != nil {
			return err
		}
	}
	return in.Err()
}

// anyDate writes the lines of f again under the date "*", where a
// Refers-To without a date finds them.
func (c *comparison) anyDate(f *syssort.File) (*syssort.File, error) {
	in, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	out, err := c.sort.Create("verify-star")
	if err != nil {
		return nil, err
	}
	var fs fields
	var b line
	for in.Next() {
		p := fs.split(in.Bytes(), 3)
		if p == nil {
			out.Remove()
			return nil, fs.err
		}
		if err := b.start().raw(p[0]).str("*").raw(p[2]).to(out); err != nil {
			out.Remove()
			return nil, err
		}
	}
	if err := in.Err(); err != nil {
		out.Remove()
		return nil, err
	}
	return out, nil
}

// targetSummary is what one target holds, whatever the digest: read
// ahead of the digests and questions (targetAhead).
type targetSummary struct {
	responses              bool
	minDigest, maxDigest   []byte   // of the after-responses
	responseAlgs, pendAlgs []string // algorithms of the after-responses, of the pending before-responses
	revisit                bool     // an after-revisit is there
}

// otherDigest returns a digest of an after-response of the target other
// than d, or "".
func (s *targetSummary) otherDigest(d []byte) string {
	switch {
	case !s.responses:
		return ""
	case !bytes.Equal(s.minDigest, d):
		return string(s.minDigest)
	case !bytes.Equal(s.maxDigest, d):
		return string(s.maxDigest)
	}
	return ""
}

// otherAlgorithm reports whether algs holds an algorithm other than d's.
func otherAlgorithm(algs []string, d string) bool {
	a := algorithm(d)
	for _, b := range algs {
		if b != a {
			return true
		}
	}
	return false
}

func addAlgorithm(algs []string, d []byte) []string {
	a := algorithm(string(d))
	if slices.Contains(algs, a) {
		return algs
	}
	return append(algs, a)
}

// targetAhead reads the sorted file a target ahead of the join, for its
// summary.
type targetAhead struct {
	in   *syssort.Lines
	held bool // in's line is the first of the next target
	fs   fields
}

// summarize reads the lines of the target key into s.
func (a *targetAhead) summarize(key []byte, s *targetSummary) error {
	*s = targetSummary{minDigest: s.minDigest[:0], maxDigest: s.maxDigest[:0], responseAlgs: s.responseAlgs[:0], pendAlgs: s.pendAlgs[:0]}
	for {
		if !a.held {
			if !a.in.Next() {
				return a.in.Err()
			}
			a.held = true
		}
		l := a.in.Bytes()
		f := a.fs.split(l, 4)
		if f == nil {
			return a.fs.err
		}
		if !bytes.Equal(l[:len(f[0])+1+len(f[1])], key) {
			return nil
		}
		a.held = false
		switch string(f[3][:1]) {
		case targetKept, targetUnkept:
			if !s.responses || bytes.Compare(f[2], s.minDigest) < 0 {
				s.minDigest = append(s.minDigest[:0], f[2]...)
			}
			if !s.responses || bytes.Compare(f[2], s.maxDigest) > 0 {
				s.maxDigest = append(s.maxDigest[:0], f[2]...)
			}
			s.responses = true
			s.responseAlgs = addAlgorithm(s.responseAlgs, f[2])
		case targetPending:
			s.pendAlgs = addAlgorithm(s.pendAlgs, f[2])
		case targetRevisit:
			s.revisit = true
		}
	}
}

// targetJoin reads the sorted file: each target's lines of each digest,
// then the questions of that digest.
type targetJoin struct {
	c     *comparison
	ahead targetAhead
	sum   targetSummary
	key   []byte // the target: URI DATE
	group []byte // the target and digest
	of    targetDigest

	fs, rest fields
	b        line
}

// targetDigest is what a target holds of one digest.
type targetDigest struct {
	keptExts                             []int64 // classes of the after-responses present as before-responses
	unkept, external, pending, responses bool
}

func (t *targetJoin) add(l []byte) error {
	f := t.fs.split(l, 4)
	if f == nil {
		return t.fs.err
	}
	if key := l[:len(f[0])+1+len(f[1])]; !bytes.Equal(key, t.key) {
		t.key = append(t.key[:0], key...)
		if err := t.ahead.summarize(t.key, &t.sum); err != nil {
			return err
		}
	}
	if group := l[:prefixLen(f, 3)]; !bytes.Equal(group, t.group) {
		t.group = append(t.group[:0], group...)
		t.of = targetDigest{keptExts: t.of.keptExts[:0]}
	}
	tag, rest := string(f[3][:1]), f[3][1:]
	switch tag {
	case targetExternal:
		t.of.external = true
	case targetKept:
		if ext := t.fs.num(bytes.TrimPrefix(rest, []byte(" "))); !slices.Contains(t.of.keptExts, ext) {
			t.of.keptExts = append(t.of.keptExts, ext)
		}
		t.of.responses = true
	case targetUnkept:
		t.of.unkept, t.of.responses = true, true
	case targetPending:
		t.of.pending = true
	case queryResolve:
		return t.resolve(f, bytes.TrimPrefix(rest, []byte(" ")))
	case queryChain:
		return t.chain(f, bytes.TrimPrefix(rest, []byte(" ")))
	}
	return t.fs.err
}

// resolve judges a candidate revisit of a pending before-response by its
// target.
func (t *targetJoin) resolve(f [][]byte, rest []byte) error {
	q := t.rest.split(rest, 10)
	if q == nil {
		return t.rest.err
	}
	ext, classes := t.rest.num(q[0]), t.rest.num(q[1])
	ch := choice{uri: string(q[2]), date: string(q[3]), seq: t.rest.num(q[4]), sweep: string(q[5]),
		revisit:  freeRevisit{digest: string(q[6]), refURI: string(f[0]), refDate: string(f[1]), count: t.rest.num(q[7])},
		response: pendingResponse{digest: string(f[2]), ext: ext, file: string(q[8]), offset: t.rest.num(q[9])}}
	if t.rest.err != nil {
		return t.rest.err
	}
	ch.why = t.why(&ch.revisit, &ch.response, classes)
	return ch.write(&t.b, t.c.choices)
}

// why tells why the target of revisit r is no original of before-response
// p (of a digest of classes payload classes), or "" if it is one.
func (t *targetJoin) why(r *freeRevisit, p *pendingResponse, classes int64) string {
	of := &t.of
	if slices.Contains(of.keptExts, p.ext) || of.unkept && classes == 1 || of.external {
		return ""
	}
	ref := r.refURI + " " + r.refDate
	switch {
	case len(of.keptExts) > 0:
		return fmt.Sprintf("its revisit refers to %s, a response of another payload class of the digest (ext %d, not %d)", ref, slices.Min(of.keptExts), p.ext)
	case of.unkept:
		return fmt.Sprintf("its revisit refers to %s, a response of no known payload class (not in the before-manifest)", ref)
	}
	if other := t.sum.otherDigest([]byte(p.digest)); other != "" {
		return fmt.Sprintf("its revisit refers to %s, a response with another digest, %s", ref, other)
	}
	if t.sum.revisit {
		return fmt.Sprintf("its revisit refers to %s, a revisit, not a response", ref)
	}
	return fmt.Sprintf("its revisit refers to %s, which names no record after", ref)
}

// chain reports a before-revisit found unchanged whose target was a
// response before (a before-response now pending, of a digest that may
// be its own) and is none after: the rewrite made its original a revisit
// (a chain replay does not follow) or removed it.
func (t *targetJoin) chain(f [][]byte, rest []byte) error {
	q := t.rest.split(rest, 5)
	if q == nil {
		return t.rest.err
	}
	seq, offset := t.rest.num(q[0]), t.rest.num(q[4])
	if t.rest.err != nil {
		return t.rest.err
	}
	digest := string(f[2])
	isResponse := t.of.responses || otherAlgorithm(t.sum.responseAlgs, digest)
	wasResponse := t.of.pending || otherAlgorithm(t.sum.pendAlgs, digest)
	if !wasResponse || isResponse {
		return nil
	}
	return t.c.violate(phaseChain, seq, "%s %s (revisit %s, was %s offset %d): refers to %s %s, a response before that is no longer one after",
		q[1], q[2], digest, q[3], offset, f[0], f[1])
}
