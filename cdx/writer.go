package cdx

import (
	"bufio"
	"io"
)

// Writer writes index lines, each in the format it was read in.
type Writer struct {
	w   *bufio.Writer
	buf []byte
}

// NewWriter returns a Writer to w; call Flush at the end.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 256<<10)}
}

// Write writes l and a "\n": byte for byte as read unless a setter edited
// it (see Line.AppendTo).
func (w *Writer) Write(l *Line) error {
	if !l.IsEdited() {
		if _, err := w.w.Write(l.Raw); err != nil {
			return err
		}
		return w.w.WriteByte('\n')
	}
	w.buf = append(l.AppendTo(w.buf[:0]), '\n')
	_, err := w.w.Write(w.buf)
	return err
}

// WriteCDX11 writes l as an 11-field CDX line (Line.AppendCDX11).
func (w *Writer) WriteCDX11(l *Line) error {
	w.buf = append(l.AppendCDX11(w.buf[:0]), '\n')
	_, err := w.w.Write(w.buf)
	return err
}

// WriteRaw writes b as a line of its own.
func (w *Writer) WriteRaw(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	return w.w.WriteByte('\n')
}

// Flush writes what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }
