// Package gzfile opens the work files kept compressed (the manifests kept
// for undo and audit, warcsum's cache) in either of their forms: gzip, as
// they are written now, or plain, as an older warcdedup wrote them. The
// form is told by the file's first bytes (gzip's magic number, which no
// manifest, facts or counts line begins with), not by its name, so that
// the names stay those every reader knows.
package gzfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"warcdedup/gzmulti"

	"github.com/klauspost/compress/gzip"
)

// Open opens the named file for reading, decompressed if it is gzip.
func Open(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, name)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &file{Reader: r, f: f}, nil
}

// NewReader reads r, decompressed if it is gzip, every member one after
// another; name is for errors. It inflates with gzmulti, the WARC files'
// reader (ISA-L in a build with it: 1.6 times klauspost's speed on
// manifest lines, BenchmarkOpenRead), and stops at the first damage,
// which it returns.
func NewReader(r io.Reader, name string) (io.Reader, error) {
	z, err := gzmulti.NewReader(r, name)
	if err != nil {
		return nil, err
	}
	return &named{r: gzmulti.NewStream(z), name: name}, nil
}

// named names the file in an error that does not (gzmulti's damage does).
type named struct {
	r    io.Reader
	name string
}

func (n *named) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	var ze *gzmulti.Error
	if err != nil && err != io.EOF && !errors.As(err, &ze) {
		err = fmt.Errorf("%s: %w", n.name, err)
	}
	return k, err
}

type file struct {
	io.Reader
	f *os.File
}

func (f *file) Close() error { return f.f.Close() }

// Writer compresses what is written to w at gzip's fastest level (a
// manifest's lines compress to about a fifth at it, as fast as they are
// made); Close ends the gzip stream but does not close w.
type Writer struct {
	z *gzip.Writer // nil once closed
}

// compressors keeps the compressors of closed Writers for the next: one
// at this level is some 750 kB of tables and window, which a run's cache
// entries (three a file, in the hash stage and again in each derivation)
// allocated and cleared anew each time.
var compressors sync.Pool

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer {
	if z, ok := compressors.Get().(*gzip.Writer); ok {
		z.Reset(w) // as new: header, level and state
		return &Writer{z: z}
	}
	z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // the level is valid
	return &Writer{z: z}
}

// errClosed is a write to a closed Writer.
var errClosed = errors.New("gzfile: write to a closed Writer")

func (w *Writer) Write(p []byte) (int, error) {
	if w.z == nil {
		return 0, errClosed
	}
	return w.z.Write(p)
}

// Close ends the gzip stream; a second Close does nothing.
func (w *Writer) Close() error {
	if w.z == nil {
		return nil
	}
	z := w.z
	w.z = nil
	err := z.Close()
	if err == nil {
		compressors.Put(z)
	}
	return err
}

// IsGzip reports whether the named file is gzip (by its first bytes).
func IsGzip(name string) (bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	gz, err := gzmulti.IsGzip(f)
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return gz, nil
}
