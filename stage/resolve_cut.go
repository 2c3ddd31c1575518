package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
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
//
// So is a committed original of an imported crawl that is a record of
// another kind than a response which its index line listed as a 200
// capture (jwarc's cdx gives resource records status 200): whole, of the
// line's length, a resource, metadata, request or conversion record
// (crawlindex.NotResponse). A revisit or warcinfo record there stays a
// stale line: that is what a file changed since the import shows.

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
// short or no response, and then warns of it: the record at the line's
// place, read again, is a response with WARC-Truncated or
// WARC-Segment-Number, or a record that is never an HTTP response.
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

// why reads the record the stale line names again: what cuts it short,
// or what it is if no response, or "" if neither (or it cannot be read:
// the line stays stale).
func (c *cutShort) why(ctx context.Context, stale *collres.StaleError) string {
	var bodies []io.Closer
	defer func() {
		for _, b := range bodies {
			b.Close()
		}
	}()
	return crawlindex.NoOriginal(func() io.Reader {
		body, err := c.src.Open(ctx, stale.File, stale.Offset, stale.Length)
		if err != nil {
			return strings.NewReader("")
		}
		bodies = append(bodies, body)
		return body
	}, stale.File, stale.Length)
}
