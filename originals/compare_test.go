package originals

import (
	"bytes"
	"testing"
)

// TestComparer proves that a duplicate's payload is found equal to its
// original's only if it is, byte for byte, whole, whether the original's
// payload streams or lies in memory, and however the duplicate's bytes
// are cut into writes.
func TestComparer(t *testing.T) {
	orig := bytes.Repeat([]byte("0123456789"), 10000)
	tests := []struct {
		name string
		dup  []byte
		same bool
	}{
		{"equal", orig, true},
		{"one byte differs in the middle", append(append(bytes.Clone(orig[:50000]), 'x'), orig[50001:]...), false},
		{"last byte differs", append(bytes.Clone(orig[:len(orig)-1]), 'x'), false},
		{"shorter", orig[:len(orig)-1], false},
		{"longer", append(bytes.Clone(orig), '0'), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			for _, write := range []int{1, 7, 4096, 64 << 10, 1 << 20} {
				o := &Original{Payload: orig}
				var c *Comparer
				if stream {
					c = NewComparer(&Original{}, bytes.NewReader(orig), make([]byte, 0, 1000))
				} else {
					c = NewComparer(o, nil, nil)
				}
				for p := tt.dup; len(p) > 0; {
					n := min(write, len(p))
					if m, err := c.Write(p[:n]); m != n || err != nil {
						t.Fatalf("%s, stream %v: Write: %d, %v", tt.name, stream, m, err)
					}
					p = p[n:]
				}
				same, err := c.End()
				if err != nil || same != tt.same {
					t.Errorf("%s, stream %v, writes of %d: End: %v, %v; want %v", tt.name, stream, write, same, err, tt.same)
				}
			}
		}
	}
}
