//go:build cgo && !nozlib

package gzmember

import (
	"bytes"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestCompress: a member Compress writes inflates to its input, and is
// rebuilt bit for bit by the setting it was written with.
func TestCompress(t *testing.T) {
	payload := textPayload(3, 200_000)
	for _, s := range []Setting{{Level: 6, MemLevel: 8, WindowBits: 15}, {Level: 9, MemLevel: 8, WindowBits: 15, FlushBeforeFinish: true}} {
		var b bytes.Buffer
		if err := Compress(&b, headers[0].h.bytes(), bytes.NewReader(payload), s); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("%v: inflated to %d bytes (%v), want %d", s, len(got), err, len(payload))
		}
		d := describe(t, b.Bytes())
		r := &Rebuilder{Order: []Setting{s}}
		var out bytes.Buffer
		if _, err := r.Rebuild(&d, (&opener{p: payload}).open, &out); err != nil || !bytes.Equal(out.Bytes(), b.Bytes()) {
			t.Errorf("%v: not rebuilt by its setting: %v", s, err)
		}
		r.Close()
	}
}
