//go:build cgo && !nozlib

package gzmember

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"warcdedup/internal/xinuse"
)

// TestZlibLeavesUpperHalvesClean: each call into zlib returns with the
// vector registers' upper halves clean, as gzmulti's calls into ISA-L
// must (a zlib built with hand-written AVX code, as ISA-L's is, would
// leave them dirty and slow the SSE code Go runs next on the thread).
func TestZlibLeavesUpperHalvesClean(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, ok := xinuse.UpperDirty(); !ok {
		t.Skip("the processor does not tell whether the upper halves are in use")
	}
	var payload bytes.Buffer
	for i := 0; payload.Len() < 2<<20; i++ {
		fmt.Fprintf(&payload, "<a href=\"http://example.com/%d/page\">word %d</a>\n", i*7919%5003, i%97)
	}
	for _, level := range []int{1, 6, 9} {
		var z deflater
		if err := z.reset(Setting{Level: level, MemLevel: 8, WindowBits: 15}); err != nil {
			t.Fatal(err)
		}
		if dirty, _ := xinuse.UpperDirty(); dirty {
			t.Errorf("level %d: upper halves in use after deflateInit2", level)
		}
		in, out := payload.Bytes(), make([]byte, 64<<10)
		for mode := flushNone; ; {
			if len(in) == 0 {
				mode = flushFinish
			}
			consumed, _, end, err := z.step(in[:min(len(in), 128<<10)], out, mode)
			if dirty, _ := xinuse.UpperDirty(); dirty {
				t.Fatalf("level %d: upper halves in use after deflate", level)
			}
			if err != nil {
				t.Fatal(err)
			}
			in = in[consumed:]
			if end {
				break
			}
		}
		z.close()
	}
}
