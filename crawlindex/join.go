package crawlindex

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/manifest"
)

// JoinStats counts what Join read and wrote.
type JoinStats struct {
	IndexLines int64 // originals of the index read
	Digests    int64 // distinct digests of the crawl
	Matched    int64 // originals written: of a digest the crawl has
	// Crawls counts the originals written per crawl: the committed
	// crawls the crawl's revisits may need.
	Crawls map[string]int64
}

// Join writes to w the index's originals whose digest the crawl's manifest
// (sorted on digest, manifest.ByDigest) has, in digest order: what the
// resolution of the crawl must see besides the crawl itself. It reads the
// index and the manifest once each, side by side, whatever their size. A
// partition out of order, or with a line of another partition's digests,
// is refused (reading on would miss originals).
func (ix *Index) Join(ctx context.Context, crawl io.Reader, crawlName string, w io.Writer) (JoinStats, error) {
	st := JoinStats{Crawls: map[string]int64{}}
	parts, err := ix.Partitions()
	if err != nil {
		return st, err
	}
	cr := manifest.NewReader(crawl, crawlName)
	cr.RequireOrder(manifest.ByDigest)
	// want is the crawl's next digest, "" at its end.
	var want string
	nextDigest := func() error {
		for {
			l, err := cr.Next()
			if err == io.EOF {
				want = ""
				return nil
			}
			if err != nil {
				return err
			}
			if l.Digest != want && l.Digest != manifest.NoDigest {
				want = l.Digest
				st.Digests++
				return nil
			}
		}
	}
	if err := nextDigest(); err != nil {
		return st, err
	}
	out := manifest.NewWriter(w)
	for _, p := range parts {
		if want == "" {
			break
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if before(p, want) {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return st, err
		}
		in := manifest.NewReader(f, p)
		in.RequireFields(6)
		in.RequireOrder(manifest.ByDigest)
		key := strings.TrimSuffix(filepath.Base(p), partitionExt)
		for want != "" {
			l, err := in.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return st, fmt.Errorf("index: %w", err)
			}
			st.IndexLines++
			if k, err := partitionOf(l.Digest); err != nil || k != key {
				f.Close()
				return st, in.Errorf("index: digest %s does not belong in partition %s", l.Digest, key)
			}
			for want != "" && want < l.Digest {
				if err := nextDigest(); err != nil {
					f.Close()
					return st, err
				}
			}
			if l.Digest == want {
				if err := out.Write(&l); err != nil {
					f.Close()
					return st, err
				}
				st.Matched++
				st.Crawls[CrawlOf(l.File)]++
			}
		}
		f.Close()
	}
	return st, out.Flush()
}

// before reports whether the partition p holds only digests before
// digest: it is of the same algorithm, and of a lower first character.
func before(p, digest string) bool {
	key, err := partitionOf(digest)
	if err != nil {
		return false
	}
	name := strings.TrimSuffix(filepath.Base(p), partitionExt)
	label, _, _ := strings.Cut(key, "-")
	plabel, _, _ := strings.Cut(name, "-")
	return label == plabel && name < key
}
