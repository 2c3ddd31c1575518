package warcsum

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// RecordCount is what one record read whole added to its file's Stats:
// where it is, whether it was listed (and as what), or why it was skipped.
// A cache entry keeps one per record, so that the counts of a file whose
// records were moved or replaced can be made from its old version's (see
// Cache.Derive).
type RecordCount struct {
	Offset, Length int64
	Listed         bool
	Revisit        bool // listed as a revisit
	WithoutDigest  bool // a revisit line naming no digest in the run's algorithm
	Checked        bool // its WARC-Payload-Digest was compared with the payload
	Disagrees      bool // and did not match it, or could not be read
	PayloadBytes   int64
	Skipped        Skip // why it is not listed; meaningful when !Listed
}

// countOf is the RecordCount of the record at offset, length bytes long,
// whose reading took the file's counts from before to after.
func countOf(offset, length int64, before, after *Stats) RecordCount {
	c := RecordCount{Offset: offset, Length: length,
		Listed:        after.Listed > before.Listed,
		Revisit:       after.Revisits > before.Revisits,
		WithoutDigest: after.RevisitsWithoutDigest > before.RevisitsWithoutDigest,
		Checked:       after.Checked > before.Checked,
		Disagrees:     after.Disagreements > before.Disagreements,
		PayloadBytes:  after.PayloadBytes - before.PayloadBytes}
	for i := range after.Skipped {
		if after.Skipped[i] > before.Skipped[i] {
			c.Skipped = Skip(i)
		}
	}
	return c
}

// addTo adds the record's counts to st.
func (c *RecordCount) addTo(st *Stats) {
	st.Records++
	if c.Listed {
		st.Listed++
	} else {
		st.Skipped[c.Skipped]++
	}
	st.Revisits += b2i(c.Revisit)
	st.RevisitsWithoutDigest += b2i(c.WithoutDigest)
	st.Checked += b2i(c.Checked)
	st.Disagreements += b2i(c.Disagrees)
	st.PayloadBytes += c.PayloadBytes
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// The letters of a count line's flags field.
const countFlags = "LRNCD"

// appendCount appends the line of c: "offset length flags payload-bytes
// skip", flags one letter of countFlags per property it has ("-" for none).
func appendCount(dst []byte, c *RecordCount) []byte {
	dst = strconv.AppendInt(dst, c.Offset, 10)
	dst = strconv.AppendInt(append(dst, ' '), c.Length, 10)
	dst = append(dst, ' ')
	n := len(dst)
	for i, on := range []bool{c.Listed, c.Revisit, c.WithoutDigest, c.Checked, c.Disagrees} {
		if on {
			dst = append(dst, countFlags[i])
		}
	}
	if len(dst) == n {
		dst = append(dst, '-')
	}
	dst = strconv.AppendInt(append(dst, ' '), c.PayloadBytes, 10)
	dst = strconv.AppendInt(append(dst, ' '), int64(c.Skipped), 10)
	return append(dst, '\n')
}

var errBadCount = errors.New("bad record count line")

// countReader reads the lines appendCount wrote.
type countReader struct {
	sc   *bufio.Scanner
	line int
}

func newCountReader(r io.Reader) *countReader { return &countReader{sc: bufio.NewScanner(r)} }

// next returns the next count; io.EOF after the last.
func (r *countReader) next() (RecordCount, error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return RecordCount{}, err
		}
		return RecordCount{}, io.EOF
	}
	r.line++
	bad := func() error { return fmt.Errorf("line %d: %w", r.line, errBadCount) }
	f := bytes.Fields(r.sc.Bytes())
	if len(f) != 5 {
		return RecordCount{}, bad()
	}
	var n [4]int64
	for i, j := range []int{0, 1, 3, 4} {
		v, err := strconv.ParseInt(string(f[j]), 10, 64)
		if err != nil {
			return RecordCount{}, bad()
		}
		n[i] = v
	}
	c := RecordCount{Offset: n[0], Length: n[1], PayloadBytes: n[2]}
	flags, skip := string(f[2]), n[3]
	if skip < 0 || skip >= int64(numSkips) || c.Offset < 0 || c.Length <= 0 || c.PayloadBytes < 0 {
		return RecordCount{}, bad()
	}
	c.Skipped = Skip(skip)
	if flags != "-" {
		for _, f := range []byte(flags) {
			switch f {
			case 'L':
				c.Listed = true
			case 'R':
				c.Revisit = true
			case 'N':
				c.WithoutDigest = true
			case 'C':
				c.Checked = true
			case 'D':
				c.Disagrees = true
			default:
				return RecordCount{}, bad()
			}
		}
	}
	return c, nil
}
