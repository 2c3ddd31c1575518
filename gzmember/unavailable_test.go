//go:build !cgo || nozlib

package gzmember

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestUnavailable: without zlib, a rebuild says it cannot, as for a member
// no setting makes, before reading anything or writing anything.
func TestUnavailable(t *testing.T) {
	if Available() || ZlibVersion() != "" {
		t.Fatalf("Available %v, version %q in a build without zlib", Available(), ZlibVersion())
	}
	m := someMember(t, headers[0].h.bytes(), textPayload(1, 1000))
	d := describe(t, m)
	r := NewRebuilder()
	defer r.Close()
	var out bytes.Buffer
	opened := false
	_, err := r.Rebuild(&d, func() (io.Reader, error) { opened = true; return bytes.NewReader(nil), nil }, &out)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrNotRebuildable) || opened || out.Len() != 0 {
		t.Fatalf("%v, opened %v, %d bytes written", err, opened, out.Len())
	}
}
