package wacz

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

// TestAsyncHash proves that the SHA-256 taken on another core is the
// bytes' SHA-256 whatever the sizes of the writes and of the stream:
// within the first buffer (made no larger than the first write needs),
// across it and the larger ones made after it, past all four reused.
func TestAsyncHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name         string
		size, writes int
	}{
		{"nothing", 0, 1},
		{"one byte", 1, 1},
		{"a small member in one write", 4 << 10, 1},
		{"a small first write, then large ones", 9 << 20, 7},
		{"the first buffer exactly", smallChunk, 1},
		{"one byte past the first buffer", smallChunk + 1, 2},
		{"many small writes past every buffer", 5<<20 + 3, 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			h := newAsyncHash()
			rest := data
			for i := tc.writes; i > 0; i-- {
				n := len(rest) / i
				if i == tc.writes && tc.writes > 1 {
					n = min(len(rest), 100) // a small first write
				}
				h.Write(rest[:n])
				rest = rest[n:]
			}
			if len(rest) != 0 {
				t.Fatalf("%d bytes left unwritten by the test", len(rest))
			}
			want := sha256.Sum256(data)
			if got := h.Sum(); !bytes.Equal(got, want[:]) {
				t.Fatalf("SHA-256 %x, want %x", got, want)
			}
		})
	}
}
