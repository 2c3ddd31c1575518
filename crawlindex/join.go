package crawlindex

import (
	"context"
	"io"
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
// index and the manifest once each, side by side, whatever their size:
// each partition from the one of the crawl's first digest on, its runs
// merged as they are read, until the crawl's last digest. A run out of
// order, or with a line of another partition's digests, is refused
// (reading on would miss originals).
func (ix *Index) Join(ctx context.Context, crawl io.Reader, crawlName string, w io.Writer) (JoinStats, error) {
	st := JoinStats{Crawls: map[string]int64{}}
	parts, err := ix.partitions()
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
		if before(p.key, want) {
			continue
		}
		if err := joinPartition(p, &want, nextDigest, out, &st); err != nil {
			return st, err
		}
	}
	return st, out.Flush()
}

// joinPartition reads a partition's runs merged, while the crawl has
// digests, writing the lines of the crawl's digests.
func joinPartition(p *partition, want *string, nextDigest func() error, out *manifest.Writer, st *JoinStats) error {
	m, err := openMerger(p.runs)
	if err != nil {
		return err
	}
	defer m.close()
	for *want != "" {
		l, ok, err := m.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		st.IndexLines++
		for *want != "" && *want < l.Digest {
			if err := nextDigest(); err != nil {
				return err
			}
		}
		if l.Digest == *want {
			if err := out.Write(l); err != nil {
				return err
			}
			st.Matched++
			st.Crawls[CrawlOf(l.File)]++
		}
	}
	return nil
}

// before reports whether the partition of key name holds only digests
// before digest: it is of the same algorithm, and of a lower first
// character.
func before(name, digest string) bool {
	key, err := partitionOf(digest)
	if err != nil {
		return false
	}
	label, _, _ := strings.Cut(key, "-")
	plabel, _, _ := strings.Cut(name, "-")
	return label == plabel && name < key
}
