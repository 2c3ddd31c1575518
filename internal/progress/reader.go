package progress

import (
	"io"
	"sync/atomic"
)

// CountingReader returns a reader of r that adds what it reads to n (a
// Counter a Follow shows), or r itself when n is nil.
func CountingReader(r io.Reader, n *atomic.Int64) io.Reader {
	if n == nil {
		return r
	}
	return &countingReader{r, n}
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}
