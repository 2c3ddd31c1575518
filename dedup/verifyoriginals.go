package dedup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"warcdedup/crawlindex"
	"warcdedup/digest"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/warcsum"
)

// VerifyOriginals is index verify --deep's check that every original of
// the index is at its place (crawlindex.Index.VerifyOriginals): sorted
// with the system sort in a temporary directory of the index's (the
// system's if the index's cannot be written: verify may read an index it
// may not change), each record's payload digest taken as the hash stage
// takes it (warcsum), so that an original and a duplicate found by a
// later crawl have it alike.
func VerifyOriginals(ctx context.Context, ix *crawlindex.Index, sortMemory string, report, note func(string)) (crawlindex.OriginalsStats, error) {
	var tmp string
	if td, err := crawlindex.NewTempDir(ix.Dir, "verify"); err == nil {
		defer td.Remove()
		tmp = td.Path
	} else {
		if tmp, err = os.MkdirTemp("", "warcdedup-verify-"); err != nil {
			return crawlindex.OriginalsStats{}, err
		}
		defer os.RemoveAll(tmp)
	}
	d := &recordDigests{summers: map[digest.Algorithm]*warcsum.Summer{}}
	return ix.VerifyOriginals(ctx, crawlindex.OriginalsCheck{
		TempDir: tmp,
		Sort: func(ctx context.Context, command, in, out string) error {
			return syssort.Sorter{TempDir: tmp, Memory: sortMemory, Compress: syssort.Compressor()}.Sort(ctx, command, []string{in}, out)
		},
		Digest: d.digest,
		Note:   note,
	}, report)
}

// recordDigests takes the payload digest of one record as the hash stage
// lists it, a Summer per algorithm.
type recordDigests struct {
	summers map[digest.Algorithm]*warcsum.Summer
	damage  error // the current record's, if damaged
}

// digest is the payload digest, in the algorithm of want, of the one
// record r holds (crawlindex.OriginalsCheck.Digest).
func (d *recordDigests) digest(r io.Reader, name, want string) (string, error) {
	alg, _, err := digest.Parse(want)
	if err != nil {
		return "", err
	}
	s := d.summers[alg]
	if s == nil {
		// Every status and the empty payload: an original's listing
		// options are its crawl's, not known here; a record listed
		// with any has the same digest.
		s = warcsum.NewSummer(warcsum.Options{Algorithm: alg, AllStatuses: true, ResponsesOnly: true, Damage: func(err error) {
			if d.damage == nil {
				d.damage = err
			}
		}})
		d.summers[alg] = s
	}
	d.damage = nil
	var got []string
	_, err = s.SumFile(r, name, func(l *manifest.Line) error {
		got = append(got, l.Digest)
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case d.damage != nil:
		return "", d.damage
	case len(got) == 0:
		return "", errors.New("no response with an HTTP payload is there (a revisit, a request, metadata, or no record)")
	case len(got) > 1:
		return "", fmt.Errorf("%d records are there, not one", len(got))
	}
	return got[0], nil
}
