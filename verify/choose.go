package verify

import (
	"bytes"

	"warcdedup/internal/syssort"
)

// The lines of the choice: each candidate revisit of each pending
// before-response, judged, by capture and before-line, the revisits of
// the very digest first (sweep 0), then by the revisits' fields:
//
//	URI DATE SEQ SWEEP REVISIT-DIGEST REFURI REFDATE COUNT DIGEST FILE OFFSET 0|1 WHY
//
// 0: it resolves; 1: it does not, and WHY says why.
const (
	sweepExact = "0"
	sweepOther = "1"
)

// choice is a candidate revisit of a pending before-response, judged.
type choice struct {
	uri, date string
	seq       int64
	sweep     string
	revisit   freeRevisit
	response  pendingResponse
	why       string // "" if it resolves
}

func (ch *choice) write(b *line, f *syssort.File) error {
	status, why := "0", "-"
	if ch.why != "" {
		status, why = "1", ch.why
	}
	r, p := &ch.revisit, &ch.response
	return b.start().str(ch.uri).str(ch.date).num(ch.seq).str(ch.sweep).str(r.digest).str(r.refURI).str(r.refDate).num(r.count).
		str(p.digest).str(p.file).num(p.offset).str(status).str(why).to(f)
}

// choose serves the pending before-responses of each capture in the order
// of their lines: each takes the first candidate that resolves, of those
// the ones before it left, or is reported with why the first candidate
// does not resolve.
func (c *comparison) choose() error {
	in, err := c.sort.Sorted(c.ctx, c.choices)
	if err != nil {
		return err
	}
	defer in.Close()
	ch := &chooser{c: c, used: map[string]int64{}}
	for in.Next() {
		if err := ch.add(in.Bytes()); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil {
		return err
	}
	if err := ch.end(); err != nil {
		return err
	}
	return in.Close()
}

// chooser goes through the candidates of one capture's pending
// before-responses.
type chooser struct {
	c       *comparison
	capture []byte           // URI DATE
	used    map[string]int64 // revisits taken, by digest and Refers-To, of the capture
	// The pending before-response: its line, whether it took a revisit,
	// why not, and what its report names.
	seq                          int64
	open, chosen                 bool
	why                          string
	uri, date, digest, file, off string
	fs                           fields
}

func (ch *chooser) add(l []byte) error {
	f := ch.fs.split(l, 13)
	if f == nil {
		return ch.fs.err
	}
	if key := l[:len(f[0])+1+len(f[1])]; !bytes.Equal(key, ch.capture) {
		if err := ch.end(); err != nil {
			return err
		}
		ch.capture = append(ch.capture[:0], key...)
		clear(ch.used)
	}
	if seq := ch.fs.num(f[2]); !ch.open || seq != ch.seq {
		if err := ch.end(); err != nil {
			return err
		}
		ch.seq, ch.open, ch.chosen, ch.why = seq, true, false, ""
		ch.uri, ch.date, ch.digest, ch.file = string(f[0]), string(f[1]), string(f[8]), string(f[9])
		ch.off = string(f[10])
	}
	if ch.chosen {
		return ch.fs.err
	}
	revisit := string(l[prefixLen(f, 4)+1 : prefixLen(f, 7)])
	if ch.used[revisit] >= ch.fs.num(f[7]) {
		return ch.fs.err
	}
	if string(f[11]) == "0" {
		ch.chosen = true
		ch.used[revisit]++
	} else if ch.why == "" {
		ch.why = string(f[12])
	}
	return ch.fs.err
}

// end reports the pending before-response if it took no revisit.
func (ch *chooser) end() error {
	if !ch.open {
		return nil
	}
	ch.open = false
	if ch.chosen {
		ch.c.st.Revisits++
		return nil
	}
	why := ch.why
	if why == "" {
		why = "missing after, neither as itself nor as a revisit"
	}
	off, err := syssort.ParseNum([]byte(ch.off))
	if err != nil {
		return err
	}
	return ch.c.violate(phaseResponse, ch.seq, "%s %s (%s, was %s offset %d): %s", ch.uri, ch.date, ch.digest, ch.file, off, why)
}
