package show

import (
	"bufio"
	"errors"
	"io"
	"os"

	"warcdedup/digest"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
)

// logRevisit is a revisit the rewrite log says it wrote of a response,
// followed through the entries after its own to where it is now.
type logRevisit struct {
	File        string // relative, unescaped
	Offset      int64  // now
	Length      int64
	Line        int64 // of the entry that wrote it
	undone      bool  // a later entry rewrote it (restored it)
	err         error // it cannot be followed
	writtenSpan int   // the span of the log it was written in
}

// revisitScan finds, in one pass over a rewrite log, the revisits its
// entries wrote of one response (by its payload digest, URI and date, as
// a revisit entry names its original), and follows each through the
// replacements of its file after the one that wrote it: a later entry at
// its offset rewrote it again (an undo restored it), the others move it.
// Memory holds the matches and, while a replacement of a file holding
// one is read, that replacement's entries (one file's of one run), never
// the log's.
type revisitScan struct {
	uri, date string // as the log writes them (manifest.EscapeField)
	algo      digest.Algorithm
	sum       []byte

	found  []*logRevisit
	byFile map[string][]*logRevisit
	legacy bool

	// The span being read: a file's entries of one run (one replacement,
	// as the Reader checks them), the Block of those entries when the
	// file has matches from before it.
	span       int
	file       string
	run        int
	follow     bool
	block      rewritelog.Block
	spanOpened bool
}

func newRevisitScan(uri, date, payloadDigest string) (*revisitScan, error) {
	algo, sum, err := digest.ParseHeader(payloadDigest)
	if err != nil {
		return nil, err
	}
	return &revisitScan{uri: manifest.EscapeField(uri), date: manifest.EscapeField(date), algo: algo, sum: sum,
		byFile: map[string][]*logRevisit{}}, nil
}

// matches says whether the revisit entry e refers to the response.
func (s *revisitScan) matches(e *rewritelog.Entry) bool {
	if e.Kind != rewritelog.Revisit || e.RefersToURI != s.uri || e.RefersTo != s.date || e.PayloadDigest == "" {
		return false
	}
	algo, sum, err := digest.ParseHeader(e.PayloadDigest)
	return err == nil && algo == s.algo && string(sum) == string(s.sum)
}

// read reads the log r to its end.
func (s *revisitScan) read(r *rewritelog.Reader) error {
	r.Incomplete = func(e *rewritelog.IncompleteError) error {
		// Only the revisits written before the replacement whose
		// entries are missing cannot be followed through it: a later
		// run's offsets are in the file as that run left it.
		for _, v := range s.byFile[e.Fixity.File] {
			if v.err == nil {
				v.err = e
			}
		}
		return nil
	}
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		s.entry(e)
	}
	s.closeSpan()
	s.legacy = r.Legacy()
	return nil
}

func (s *revisitScan) entry(e *rewritelog.Entry) {
	if !s.spanOpened || e.File != s.file || e.Run != s.run {
		s.closeSpan()
		s.span++
		s.spanOpened, s.file, s.run = true, e.File, e.Run
		s.follow = len(s.byFile[e.File]) > 0
		s.block = rewritelog.Block{}
	}
	if s.follow {
		s.block.Add(e)
	}
	if s.matches(e) {
		v := &logRevisit{File: e.File, Offset: e.NewOffset, Length: e.NewLength, Line: e.Line, writtenSpan: s.span}
		s.found = append(s.found, v)
		s.byFile[e.File] = append(s.byFile[e.File], v)
	}
}

// closeSpan follows the file's matches written before the span through
// it.
func (s *revisitScan) closeSpan() {
	if !s.spanOpened || !s.follow {
		return
	}
	live := s.byFile[s.file][:0]
	for _, v := range s.byFile[s.file] {
		if v.writtenSpan == s.span {
			live = append(live, v)
			continue
		}
		off, err := s.block.Follow(v.Offset)
		switch {
		case errors.Is(err, rewritelog.ErrRewritten):
			v.undone = true
			continue // followed no further
		case err != nil:
			v.err = err
			continue
		}
		v.Offset = off
		live = append(live, v)
	}
	s.byFile[s.file] = live
	s.block = rewritelog.Block{}
}

// revisitsInLog returns the revisits the rewrite log name wrote of the
// response of that URI, date and payload digest that are revisits still
// (no later run restored them), where they are now, in log order; a
// revisit that cannot be followed has its error. legacy says the log has
// entries of before digests and references were logged, which cannot be
// matched.
func revisitsInLog(name, uri, date, payloadDigest string) (out []*logRevisit, legacy bool, err error) {
	s, err := newRevisitScan(uri, date, payloadDigest)
	if err != nil {
		return nil, false, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if err := rewritelog.CheckEnd(name, fi.Size()); err != nil {
		return nil, false, err
	}
	if err := s.read(rewritelog.NewReader(bufio.NewReaderSize(f, 256<<10), name)); err != nil {
		return nil, false, err
	}
	for _, v := range s.found {
		if !v.undone {
			out = append(out, v)
		}
	}
	return out, s.legacy, nil
}
