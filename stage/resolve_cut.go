package stage

import (
	"context"
	"errors"
	"fmt"
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

// cutShort finds, among the stale lines of a resolution, the committed
// originals that are records cut short, and counts them.
type cutShort struct {
	src   collres.Opener
	kept  func(*manifest.Line) bool
	found atomic.Int64
}

func newCutShort(src collres.Opener, kept func(*manifest.Line) bool) *cutShort {
	return &cutShort{src: src, kept: kept}
}

// take reports whether err, a stale line's, is a committed original cut
// short, and then warns of it: the record at the line's place, read
// again, is a response with WARC-Truncated or WARC-Segment-Number.
func (c *cutShort) take(ctx context.Context, err error, warn func(error)) bool {
	var stale *collres.StaleError
	if !errors.As(err, &stale) || !errors.Is(err, manifest.ErrNotResponse) || !c.isKept(stale.File) {
		return false
	}
	why := c.why(ctx, stale)
	if why == "" {
		return false
	}
	c.found.Add(1)
	warn(fmt.Errorf("%s: offset %d: the crawl index's original there is %s, never a copy of another (an index line cannot show it): left out, the crawl's own copies of its digest resolved among themselves", stale.File, stale.Offset, why))
	return true
}

// isKept reports whether file is a committed crawl's: Kept answers for
// the lines of a file alike (a crawl index's originals are those of its
// committed crawls' files).
func (c *cutShort) isKept(file string) bool {
	return c.kept != nil && c.kept(&manifest.Line{File: file})
}

// why reads the header of the record the stale line names again: what
// cuts it short, or "" if nothing does (or it cannot be read: the line
// stays stale).
func (c *cutShort) why(ctx context.Context, stale *collres.StaleError) string {
	body, err := c.src.Open(ctx, stale.File, stale.Offset, stale.Length)
	if err != nil {
		return ""
	}
	defer body.Close()
	return crawlindex.CutShort(body, stale.File)
}
