package stage

import (
	"bufio"
	"context"
	"io"
	"os"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/manifest"
)

// Join writes a crawl index's originals of the digests of a manifest
// sorted on digest (crawlindex.Index.Join): what the resolution of a
// crawl compares it with besides itself, and what a crawl's undo finds its
// revisits' originals in. It reads the index and the manifest once each,
// side by side, and stops reading the manifest at the index's end.
type Join struct {
	Index *crawlindex.Index
	In    io.Reader // the crawl's lines, sorted on digest
	Name  string    // In's name, for messages
	Out   string    // the originals, on digest, whole or not at all
}

// Run joins.
func (j *Join) Run(ctx context.Context) (crawlindex.JoinStats, error) {
	out, err := atomicfile.Create(j.Out, 0o644)
	if err != nil {
		return crawlindex.JoinStats{}, err
	}
	defer out.Abort()
	bw := bufio.NewWriterSize(out, 256<<10)
	st, err := j.Index.Join(ctx, j.In, j.Name, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = out.CommitRenamed()
	}
	return st, err
}

// MergeByDigest merges two manifests sorted on digest into a new one,
// which appears whole or not at all: a crawl's lines and the originals
// Join wrote for them.
func MergeByDigest(a, b, to string) error {
	fa, err := os.Open(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	out, err := atomicfile.Create(to, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	w := manifest.NewWriter(out)
	ra, rb := manifest.NewReader(fa, a), manifest.NewReader(fb, b)
	ra.RequireOrder(manifest.ByDigest)
	rb.RequireOrder(manifest.ByDigest)
	la, erra := ra.Next()
	lb, errb := rb.Next()
	for {
		for _, err := range []error{erra, errb} {
			if err != nil && err != io.EOF {
				return err
			}
		}
		if erra == io.EOF && errb == io.EOF {
			break
		}
		if errb == io.EOF || erra == nil && manifest.ByDigest.Compare(&la, &lb) <= 0 {
			if err := w.Write(&la); err != nil {
				return err
			}
			la, erra = ra.Next()
			continue
		}
		if err := w.Write(&lb); err != nil {
			return err
		}
		lb, errb = rb.Next()
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.CommitRenamed()
}
