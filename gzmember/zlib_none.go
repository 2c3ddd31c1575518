//go:build !cgo || nozlib

package gzmember

// This build has no zlib: every rebuild returns ErrUnavailable before it
// reaches the deflater.
const zlibAvailable = false

func zlibVersion() string { return "" }

type deflater struct{}

func (*deflater) reset(Setting) error { return ErrUnavailable }

// The flush modes the rebuild uses (zlib's values).
const (
	flushNone   = 0
	flushSync   = 2
	flushFinish = 4
)

func (*deflater) step(in, out []byte, flush int) (consumed, produced int, end bool, err error) {
	return 0, 0, false, ErrUnavailable
}

func (*deflater) close() {}
