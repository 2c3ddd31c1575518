package wacz

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCRCJoin: the CRC-32 of two pieces joined, from theirs and the
// second's length, is hash/crc32's of the two one after the other:
// empty pieces, one byte, lengths about the powers of two the shift is
// squared through, and random splits of random data.
func TestCRCJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	data := make([]byte, 1<<17+3)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	type split struct {
		name     string
		size, at int
	}
	cases := []split{
		{"both empty", 0, 0},
		{"first empty", 100, 0},
		{"second empty", 100, 100},
		{"one byte then one", 2, 1},
		{"one byte after many", 4097, 4096},
		{"many after one byte", 4097, 1},
		{"second of 255 bytes", 1000, 745},
		{"second of 256 bytes", 1000, 744},
		{"second of 257 bytes", 1000, 743},
		{"second of 65536 bytes", 65536 + 10, 10},
		{"second of 1<<17+3 bytes", len(data), 0},
	}
	for i := range 40 {
		size := rng.IntN(len(data) + 1)
		cases = append(cases, split{name: "random split " + string(rune('a'+i%26)) + string(rune('0'+i/26)), size: size, at: rng.IntN(size + 1)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			whole := data[:c.size]
			a, b := whole[:c.at], whole[c.at:]
			got := crcJoin(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
			if want := crc32.ChecksumIEEE(whole); got != want {
				t.Errorf("%d + %d bytes: %08x, want %08x", len(a), len(b), got, want)
			}
		})
	}
}

// TestCRCChain: a chain written to in pieces, some only added by their
// CRC-32 and length, has the CRC-32 of the whole.
func TestCRCChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 2))
	for _, tc := range []struct {
		name   string
		pieces []int
		added  []bool // the piece is added, not written
	}{
		{"written only", []int{10, 20, 30}, []bool{false, false, false}},
		{"added only", []int{10, 20, 30}, []bool{true, true, true}},
		{"header, data added, descriptor", []int{30, 70000, 16}, []bool{false, true, false}},
		{"an empty piece added", []int{30, 0, 16}, []bool{false, true, false}},
		{"added first", []int{5000, 46}, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var whole []byte
			c := &crcChain{}
			for i, n := range tc.pieces {
				p := make([]byte, n)
				for j := range p {
					p[j] = byte(rng.Uint32())
				}
				whole = append(whole, p...)
				if tc.added[i] {
					c.add(crc32.ChecksumIEEE(p), int64(n))
				} else {
					c.Write(p)
				}
			}
			if got, want := c.Sum32(), crc32.ChecksumIEEE(whole); got != want {
				t.Errorf("%08x, want %08x", got, want)
			}
		})
	}
}
