//go:build isal && cgo

package gzmulti

import (
	"bufio"
	"bytes"
	stdflate "compress/flate"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"warcdedup/internal/xinuse"
)

// TestISALLeavesUpperHalvesClean: each call into ISA-L returns with the
// vector registers' upper halves clean (gzm_clean_upper), which its
// AVX2 and AVX-512 code leaves dirty, and which then slowed every SSE
// instruction Go ran next on the thread (SHA-1 above all) about tenfold.
// The check comes right after each Read, before Go code that could
// clean them itself (its AVX memmove does).
func TestISALLeavesUpperHalvesClean(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, ok := xinuse.UpperDirty(); !ok {
		t.Skip("the processor does not tell whether the upper halves are in use")
	}
	// Text of many words, then noise: Huffman blocks of both kinds.
	rng := rand.New(rand.NewPCG(1, 2))
	var payload bytes.Buffer
	for payload.Len() < 4<<20 {
		fmt.Fprintf(&payload, "<a href=\"http://example.com/%d/page\">word %d</a>\n", rng.IntN(5000), rng.IntN(100))
	}
	for range 1 << 18 {
		payload.WriteByte(byte(rng.Uint32()))
	}
	var raw bytes.Buffer
	fw, err := stdflate.NewWriter(&raw, 6)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(payload.Bytes())
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	z, err := newInflater()
	if err != nil {
		t.Fatal(err)
	}
	if dirty, _ := xinuse.UpperDirty(); dirty {
		t.Errorf("upper halves in use after isal_inflate_init")
	}
	z.Reset(bufio.NewReaderSize(bytes.NewReader(raw.Bytes()), 1<<20))
	out := make([]byte, payload.Len())
	got, calls, dirtyAfter := 0, 0, 0
	for {
		n, err := z.Read(out[got:min(got+256<<10, len(out))])
		dirty, _ := xinuse.UpperDirty()
		calls++
		if dirty {
			dirtyAfter++
		}
		got += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[:got], payload.Bytes()) {
		t.Fatalf("inflated %d bytes, not the %d written", got, payload.Len())
	}
	if dirtyAfter > 0 {
		t.Errorf("upper halves in use after %d of %d calls into ISA-L", dirtyAfter, calls)
	}
}
