package crawlindex

import (
	"bytes"
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
// merged as they are read (as bytes: only the lines it writes are parsed,
// and checked, whole), until the crawl's last digest. A run out of order,
// or with a line of another partition's digests, is refused (reading on
// would miss originals).
func (ix *Index) Join(ctx context.Context, crawl io.Reader, crawlName string, w io.Writer) (JoinStats, error) {
	st := JoinStats{Crawls: map[string]int64{}}
	parts, err := ix.partitions()
	if err != nil {
		return st, err
	}
	j := &join{ix: ix, st: &st, cr: manifest.NewReader(crawl, crawlName), out: manifest.NewWriter(w)}
	j.cr.RequireOrder(manifest.ByDigest)
	if err := j.nextDigest(); err != nil {
		return st, err
	}
	for _, p := range parts {
		if j.want == nil {
			break
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if before(p.key, string(j.want)) {
			continue
		}
		if err := j.partition(p); err != nil {
			return st, err
		}
	}
	return st, j.out.Flush()
}

// join is the reading of the index against a crawl's digests.
type join struct {
	ix   *Index
	st   *JoinStats
	cr   *manifest.Reader
	want []byte // the crawl's next digest; nil at its end
	out  *manifest.Writer
}

// nextDigest moves to the crawl's next digest.
func (j *join) nextDigest() error {
	for {
		l, err := j.cr.Next()
		if err == io.EOF {
			j.want = nil
			return nil
		}
		if err != nil {
			return err
		}
		if l.Digest != string(j.want) && l.Digest != manifest.NoDigest {
			j.want = append(j.want[:0], l.Digest...)
			j.st.Digests++
			return nil
		}
	}
}

// partition reads a partition's runs merged, while the crawl has digests,
// writing the lines of the crawl's digests.
func (j *join) partition(p *partition) error {
	m, err := j.ix.openRawMerger(p.runs, false)
	if err != nil {
		return err
	}
	defer m.close()
	for j.want != nil {
		text, ok, err := m.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		j.st.IndexLines++
		d := m.key().digest
		for j.want != nil && bytes.Compare(j.want, d) < 0 {
			if err := j.nextDigest(); err != nil {
				return err
			}
		}
		if bytes.Equal(d, j.want) {
			l, err := manifest.Parse(text)
			if err != nil {
				return m.errorf("%v", err)
			}
			if err := j.out.Write(&l); err != nil {
				return err
			}
			j.st.Matched++
			j.st.Crawls[CrawlOf(l.File)]++
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
