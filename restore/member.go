package restore

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"

	"warcdedup/gzmember"
	"warcdedup/rewritelog"
)

// In a .gz file a restored record is a gzip member of its own. When the
// rewrite log describes the member the record had (field 10, a
// gzmember.Description taken when it became a revisit), the restore
// rebuilds that member bit for bit with the zlib setting that makes it
// (gzmember.Rebuilder), and the file gets its old bytes back wherever
// every member can be rebuilt; otherwise it compresses the record afresh,
// as it did before descriptions were logged, and says why.

// MemberStats counts how the gzip members of the records restored in .gz
// files were written.
type MemberStats struct {
	// Rebuilt: the member the record had, bit for bit, from the log's
	// description of it.
	Rebuilt int64
	// Compressed afresh, by why: the log has no description of the member
	// (a log of an older version, a member that could not be described,
	// another tool's revisit); no zlib setting makes it (its writer did
	// not use zlib; once gzmember.DefaultPatience members in a row of a
	// file were so, its other members are not tried); this build has no
	// zlib (built without cgo).
	NoDescription, NoSetting, NoZlib int64
}

// Recompressed is the members compressed afresh.
func (s MemberStats) Recompressed() int64 { return s.NoDescription + s.NoSetting + s.NoZlib }

func (s *MemberStats) add(o *MemberStats) {
	s.Rebuilt += o.Rebuilt
	s.NoDescription += o.NoDescription
	s.NoSetting += o.NoSetting
	s.NoZlib += o.NoZlib
}

// Reasons says why members were compressed afresh, "" if none were: "no
// description: N" (the log has none), "no setting matched: N", "no zlib:
// N" (a build without zlib).
func (s MemberStats) Reasons() string {
	var b []byte
	for _, r := range []struct {
		n    int64
		what string
	}{{s.NoDescription, "no description"}, {s.NoSetting, "no setting matched"}, {s.NoZlib, "no zlib"}} {
		if r.n == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "%s: %d", r.what, r.n)
	}
	return string(b)
}

// RestoredFile is a file a restore replaced, as Restorer.Restored gets it.
type RestoredFile struct {
	File    string            // escaped as manifest field 1
	Fixity  rewritelog.Fixity // its size and SHA-256 before and after
	Members MemberStats       // how its restored records' members were written
	Foreign int64             // other tools' revisits made whole in it
}

// memberHow is how a restored record's member was written.
type memberHow uint8

const (
	memberNone          memberHow = iota // an uncompressed file: no member
	memberRebuilt                        // rebuilt bit for bit
	memberNoDescription                  // compressed afresh: no description
	memberNoSetting                      // compressed afresh: no zlib setting makes it
	memberNoZlib                         // compressed afresh: no zlib in this build
)

func (s *MemberStats) count(how memberHow) {
	switch how {
	case memberRebuilt:
		s.Rebuilt++
	case memberNoDescription:
		s.NoDescription++
	case memberNoSetting:
		s.NoSetting++
	case memberNoZlib:
		s.NoZlib++
	}
}

// payloadSource gives a restored record's payload: inline, or streamed
// from its original, and then again from the original opened anew, as
// often as a rebuild reads it. A stream is closed before the next is
// opened: each holds a read lock of the original's file, which must not
// be taken twice by one reader while a replacement of that file waits
// for it.
type payloadSource struct {
	inline   []byte
	streamed bool
	cur      io.ReadCloser // the stream, if any
	fresh    bool          // cur has not been read from yet
	// reopen opens the original again: its payload streaming, or inline.
	reopen func() (io.ReadCloser, []byte, error)
}

func inlinePayload(p []byte) *payloadSource { return &payloadSource{inline: p} }

func streamedPayload(stream io.ReadCloser, reopen func() (io.ReadCloser, []byte, error)) *payloadSource {
	return &payloadSource{streamed: true, cur: stream, fresh: true, reopen: reopen}
}

// next returns a reader of the payload from its start.
func (p *payloadSource) next() (io.Reader, error) {
	if !p.streamed {
		return bytes.NewReader(p.inline), nil
	}
	if p.fresh {
		p.fresh = false
		return p.cur, nil
	}
	p.close()
	rc, inline, err := p.reopen()
	if err != nil {
		return nil, err
	}
	if rc == nil {
		return bytes.NewReader(inline), nil
	}
	p.cur = rc
	return rc, nil
}

func (p *payloadSource) close() {
	if p.cur != nil {
		p.cur.Close()
		p.cur = nil
	}
}

// errPayload marks an error reading the payload, which refuses the file
// (the original could not be read), from one writing the new version.
type errPayload struct{ err error }

func (e *errPayload) Error() string { return e.err.Error() }
func (e *errPayload) Unwrap() error { return e.err }

// rebuildMember writes the member desc describes of the record (header,
// HTTP head, payload, trailer) to w if a zlib setting makes it, hashing
// the payload into ph as it is read. It returns memberRebuilt, or why not
// (nothing was written then); an error is a failure to read the payload
// (an *errPayload), to write (a *gzmember.WriteError), or bytes written
// that are not the member (gzmember.ErrChanged).
func (f *fileRestore) rebuildMember(desc *gzmember.Description, header, head []byte, payload *payloadSource, trailer []byte, ph hash.Hash, w io.Writer) (memberHow, error) {
	if f.w.rebuilder == nil {
		f.w.rebuilder = gzmember.NewRebuilder()
	}
	if f.w.rebuilder.Narrowed() {
		// Members in a row of this file that no setting makes: its writer
		// does not use zlib, and trying its likeliest setting on every
		// other member would double what they cost (a zlib compression
		// beside the fresh one) for nothing: the corpus has no file with
		// only some members zlib's.
		return memberNoSetting, nil
	}
	open := func() (io.Reader, error) {
		p, err := payload.next()
		if err != nil {
			return nil, &errPayload{err}
		}
		var body io.Reader = &payloadReader{r: p}
		if ph != nil {
			ph.Reset()
			body = io.TeeReader(body, ph)
		}
		return io.MultiReader(bytes.NewReader(header), bytes.NewReader(head), body, bytes.NewReader(trailer)), nil
	}
	_, err := f.w.rebuilder.Rebuild(desc, open, w)
	switch {
	case err == nil:
		return memberRebuilt, nil
	case errors.Is(err, gzmember.ErrUnavailable):
		return memberNoZlib, nil
	case errors.Is(err, gzmember.ErrNotRebuildable):
		return memberNoSetting, nil
	}
	return memberNone, err
}

// payloadReader marks the errors of reading a payload as such.
type payloadReader struct{ r io.Reader }

func (p *payloadReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		err = &errPayload{err}
	}
	return n, err
}
