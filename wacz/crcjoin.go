package wacz

import "hash/crc32"

// The CRC-32 of two pieces of data one after the other, from the CRC-32
// of each and the length of the second (what zlib's crc32_combine
// computes): a member's bytes copied into a package by the kernel
// (copy_file_range) are never in this process's memory, and the whole
// file's CRC-32 is taken from the CRC-32 they were read with instead.
//
// The CRC-32 of IEEE 802.3 (hash/crc32's IEEE) is the remainder of a
// polynomial over GF(2) modulo its generator, with the bits of each
// byte taken lowest first (a "reflected" CRC: bit 31 of a uint32 is
// the coefficient of x^0, bit 0 that of x^31). Appending n bytes after
// data A multiplies A's remainder by x^(8n); the pre- and
// post-conditioning (the CRC starts at all ones and is inverted at
// the end) cancel out of the sum, so that
//
//	crc(A then B) = crc(A)·x^(8·len(B)) mod P  xor  crc(B).

// crcOne is the polynomial 1 (x^0) as a reflected CRC-32 holds it.
const crcOne = 1 << 31

// crcMul is a·b mod P, both reflected remainders.
func crcMul(a, b uint32) uint32 {
	var p uint32
	// Through a's coefficients from x^0 (bit 31) up, b multiplied by x
	// (a shift towards bit 0, reduced by P when x^31's coefficient
	// overflows) at each step.
	for bit := uint32(crcOne); bit != 0; bit >>= 1 {
		if a&bit != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// crcShift is x^(8n) mod P: what the remainder of data is multiplied by
// when n bytes follow it. By squaring, from x^8.
func crcShift(n int64) uint32 {
	p := uint32(crcOne)
	sq := uint32(crcOne >> 8) // x^8
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			p = crcMul(p, sq)
		}
		sq = crcMul(sq, sq)
	}
	return p
}

// crcJoin is the CRC-32 (IEEE) of data A followed by data B, from A's
// CRC-32 a, B's b and B's length n.
func crcJoin(a, b uint32, n int64) uint32 {
	if n <= 0 {
		return a
	}
	return crcMul(a, crcShift(n)) ^ b
}

// crcChain is the CRC-32 (IEEE) of what is written to it, and of the
// pieces it is told of (add) without their bytes, in order.
type crcChain struct {
	sum uint32
}

func (c *crcChain) Write(p []byte) (int, error) {
	c.sum = crc32.Update(c.sum, crc32.IEEETable, p)
	return len(p), nil
}

// add counts n bytes whose CRC-32 is crc as written after what was.
func (c *crcChain) add(crc uint32, n int64) { c.sum = crcJoin(c.sum, crc, n) }

// Sum32 is the CRC-32 of everything written and added so far.
func (c *crcChain) Sum32() uint32 { return c.sum }
