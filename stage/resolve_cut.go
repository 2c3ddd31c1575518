package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"warcdedup/collres"
	"warcdedup/crawlindex"
	"warcdedup/manifest"
)

// A crawl index's original may be a response its crawler cut short
// (WARC-Truncated: a length or time limit; Browsertrix writes such
// records) or one segment of a record (WARC-Segment-Number) when its
// crawl was committed from CDX or CDXJ lines alone (index import): an
// index line cannot show either, and the import reads no WARC byte. Such
// a record is never a copy of another (its payload is incomplete), so the
// resolution that reads it finds it is not the response the line names
// (manifest.ErrNotResponse). That is no stale line: nothing changed, and
// the operator has nothing to mend. The original is left out, as a stale
// line is, with a warning naming its file and offset, and the crawl's
// copies of its digest are resolved among themselves: the first stays a
// response, the original a revisit of them can point at and later crawls
// find once the crawl is committed.

// cutShort finds the committed originals the resolution left out as
// records cut short. A stale line's error names its file and offset,
// not its length: cutShort remembers the length of each original the
// resolution closed last, reads the header of the one a stale line names
// again, and counts those found cut short. The resolution closes a
// record found wanting before it reports its stale line, with no reading
// between, in the same goroutine: the last closes kept (recentCloses)
// hold it whatever the other workers close meanwhile. (Should one be
// forgotten, its line is reported stale, as before: no byte is lost.)
type cutShort struct {
	src  collres.Opener
	kept func(*manifest.Line) bool
	mu   sync.Mutex
	// closed are the lengths of the originals closed last, by place,
	// with the order they were closed in: memory bounded whatever the
	// number of originals read.
	closed map[recordPlace]closedRecord
	ring   []recordPlace
	next   int
	seq    uint64
	found  atomic.Int64
}

// recentCloses is how many closed originals cutShort remembers: far more
// than the workers of a resolution close between one's close and its
// stale line.
const recentCloses = 4096

type recordPlace struct {
	file   string
	offset int64
}

type closedRecord struct {
	length int64
	seq    uint64 // which close: a place closed again is remembered anew
}

func newCutShort(src collres.Opener, kept func(*manifest.Line) bool) *cutShort {
	return &cutShort{src: src, kept: kept, closed: map[recordPlace]closedRecord{}}
}

// isKept reports whether file is a committed crawl's: Kept answers for
// the lines of a file alike (a crawl index's originals are those of its
// committed crawls' files).
func (c *cutShort) isKept(file string) bool {
	return c.kept != nil && c.kept(&manifest.Line{File: file})
}

// Open opens a record for the resolution; an original's reader is
// remembered when it is closed.
func (c *cutShort) Open(ctx context.Context, file string, offset, length int64) (io.ReadCloser, error) {
	rc, err := c.src.Open(ctx, file, offset, length)
	if err != nil || !c.isKept(file) {
		return rc, err
	}
	return &originalReader{ReadCloser: rc, c: c, at: recordPlace{file, offset}, length: length}, nil
}

// originalReader is an original as the resolution reads it.
type originalReader struct {
	io.ReadCloser
	c      *cutShort
	at     recordPlace
	length int64
}

func (r *originalReader) Close() error {
	r.c.remember(r.at, r.length)
	return r.ReadCloser.Close()
}

// remember keeps the length of the original closed at at, forgetting
// the one closed recentCloses closes ago.
func (c *cutShort) remember(at recordPlace, length int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if len(c.ring) < recentCloses {
		c.ring = append(c.ring, at)
	} else {
		old := c.ring[c.next]
		if r, ok := c.closed[old]; ok && r.seq == c.seq-recentCloses {
			delete(c.closed, old)
		}
		c.ring[c.next] = at
		c.next = (c.next + 1) % recentCloses
	}
	c.closed[at] = closedRecord{length: length, seq: c.seq}
}

// take reports whether err, a stale line's, is an original cut short,
// and then warns of it: the record at its place, read again, is a
// response with WARC-Truncated or WARC-Segment-Number.
func (c *cutShort) take(ctx context.Context, err error, warn func(error)) bool {
	var stale *collres.StaleError
	if !errors.As(err, &stale) || !c.isKept(stale.File) {
		return false
	}
	at := recordPlace{stale.File, stale.Offset}
	c.mu.Lock()
	r, ok := c.closed[at]
	delete(c.closed, at)
	c.mu.Unlock()
	if !ok || !errors.Is(err, manifest.ErrNotResponse) {
		return false
	}
	why, rerr := c.why(ctx, at, r.length)
	if rerr != nil || why == "" {
		return false
	}
	c.found.Add(1)
	warn(fmt.Errorf("%s: offset %d: the crawl index's original there is %s, never a copy of another (an index line cannot show it): left out, the crawl's own copies of its digest resolved among themselves", stale.File, stale.Offset, why))
	return true
}

// why reads the header of the record at at again: what cuts it short, or
// "" if nothing does.
func (c *cutShort) why(ctx context.Context, at recordPlace, length int64) (string, error) {
	body, err := c.src.Open(ctx, at.file, at.offset, length)
	if err != nil {
		return "", err
	}
	defer body.Close()
	return crawlindex.CutShort(body, at.file), nil
}
