package gzmulti

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// fourMembers is a file of members A B C D whose bytes hold no gzip magic
// but at their start, so that what follows damage is known exactly. C has
// every optional header field, so that its header can be cut anywhere.
func fourMembers(t testing.TB) *builder {
	t.Helper()
	var b builder
	a := textPayload(21, 6000)
	m, h := handMember(t, a, hdrOpts{})
	b.member(m, a, h)
	bp := textPayload(22, 9000)
	m, h = handMember(t, bp, hdrOpts{level: 9})
	b.member(m, bp, h)
	c := textPayload(23, 7000)
	m, h = handMember(t, c, hdrOpts{extra: []byte("XY\x02\x00ab"), name: "c.warc", comment: "third", hcrc: true})
	b.member(m, c, h)
	d := textPayload(24, 3000)
	m, h = handMember(t, d, hdrOpts{})
	b.member(m, d, h)
	data := b.buf.Bytes()
	for _, p := range b.parts {
		if i := bytes.Index(data[p.off+1:p.off+p.length], gzipMagic); i >= 0 {
			t.Fatalf("test data: member at %d holds a gzip magic at %d", p.off, p.off+1+int64(i))
		}
	}
	return &b
}

func TestDamage(t *testing.T) {
	b := fourMembers(t)
	base := b.bytes()
	A, B, C, D := b.parts[0], b.parts[1], b.parts[2], b.parts[3]
	end := func(p part) int64 { return p.off + p.length }
	trailer := func(p part) int64 { return end(p) - 8 }
	deflate := func(p part) int64 { return p.off + int64(p.hdrLen) }
	cut := func(n int64) []byte { return base[:n] }
	patch := func(at int64, with ...byte) []byte {
		d := bytes.Clone(base)
		copy(d[at:], with)
		return d
	}
	flip := func(at int64) []byte {
		d := bytes.Clone(base)
		d[at] ^= 0x40
		return d
	}
	insert := func(at int64, junk []byte) []byte {
		return append(append(append([]byte{}, base[:at]...), junk...), base[at:]...)
	}
	shift := func(p part, by int) part { p.off += int64(by); return p }
	storedHeader := func(final bool, n int) []byte {
		h := []byte{0}
		if final {
			h[0] = 1
		}
		h = binary.LittleEndian.AppendUint16(h, uint16(n))
		return binary.LittleEndian.AppendUint16(h, ^uint16(n))
	}
	// A B C, with C cut.
	truncatedC := func(n int64) (string, []byte, []want) {
		return fmt.Sprintf("cut %d bytes into C", n-C.off), cut(n), []want{ok(A), ok(B)}
	}

	type tc struct {
		name  string
		data  []byte
		wants []want
	}
	var cases []tc
	add := func(name string, data []byte, wants ...want) { cases = append(cases, tc{name, data, wants}) }

	// Truncated last member: in the header, in the deflate data, in the trailer.
	for _, n := range []int64{1, 2, 3, 4, 9, 10, 11, 14, 17, 20, int64(C.hdrLen) - 2, int64(C.hdrLen) - 1} {
		name, data, w := truncatedC(C.off + n)
		add("header "+name+" is ErrTruncated", data, append(w, want{off: C.off, nextErr: ErrTruncated})...)
	}
	for _, at := range []int64{deflate(C), deflate(C) + 1, deflate(C) + 500, trailer(C) - 1} {
		name, data, w := truncatedC(at)
		add("deflate "+name+" is ErrTruncated", data, append(w, want{off: C.off, payload: C.payload, readErr: ErrTruncated})...)
	}
	for _, n := range []int64{0, 1, 4, 7} {
		name, data, w := truncatedC(trailer(C) + n)
		add("trailer "+name+" is ErrTruncated", data, append(w, want{off: C.off, payload: C.payload, readErr: ErrTruncated})...)
	}

	// Checksums.
	add("flipped CRC byte in B's trailer is ErrChecksum, C and D follow", flip(trailer(B)+2),
		ok(A), want{off: B.off, payload: B.payload, readErr: ErrChecksum}, ok(C), ok(D))
	add("flipped size byte in B's trailer is ErrChecksum, C and D follow", flip(trailer(B)+4),
		ok(A), want{off: B.off, payload: B.payload, readErr: ErrChecksum}, ok(C), ok(D))
	add("flipped CRC byte of the last member is ErrChecksum, then the end", flip(trailer(D)),
		ok(A), ok(B), ok(C), want{off: D.off, payload: D.payload, readErr: ErrChecksum})
	// Checksum damage in an otherwise intact member: what follows it is
	// read as usual, garbage included.
	add("garbage after a member with a bad CRC is ErrGarbage", func() []byte {
		d := insert(C.off, []byte("junk"))
		d[trailer(B)] ^= 1
		return d
	}(), ok(A), want{off: B.off, payload: B.payload, readErr: ErrChecksum},
		want{off: C.off, nextErr: ErrGarbage, msg: " 4 bytes skipped"}, ok(shift(C, 4)), ok(shift(D, 4)))
	{
		// B rebuilt with stored blocks, so that a data byte can change
		// without breaking the deflate structure.
		var nb builder
		nb.member(base[A.off:end(A)], A.payload, A.hdrLen)
		m, h := handMember(t, B.payload, hdrOpts{stored: true})
		m[h+100] ^= 1
		nb.member(m, B.payload, h)
		nb.member(base[C.off:end(C)], C.payload, C.hdrLen)
		nb.member(base[D.off:end(D)], D.payload, D.hdrLen)
		add("flipped byte in B's stored data is ErrChecksum, C and D follow", nb.bytes(),
			ok(nb.parts[0]), want{off: nb.parts[1].off, readErr: ErrChecksum}, ok(nb.parts[2]), ok(nb.parts[3]))
	}

	// Corrupt deflate data in the middle member B: the members after it are
	// found again at their true offsets.
	add("reserved block type at B's first deflate byte is ErrCorrupt", patch(deflate(B), 0x07),
		ok(A), want{off: B.off, readErr: ErrCorrupt}, ok(C), ok(D))
	add("stored block with a bad NLEN in B is ErrCorrupt", patch(deflate(B), 0x00, 0x10, 0x00, 0x10, 0x00),
		ok(A), want{off: B.off, readErr: ErrCorrupt}, ok(C), ok(D))
	add("bytes overwritten in B's Huffman data is ErrCorrupt", patch(deflate(B)+200, bytes.Repeat([]byte{0xff}, 64)...),
		ok(A), want{off: B.off, readErr: ErrCorrupt}, ok(C), ok(D)) // (bytes before the damage is seen may be wrong)
	// The inflater reads B's stored block over C and stops at D's first
	// byte: a resynchronisation that went on from there would lose C and D.
	add("corrupt B read on through C into D is ErrCorrupt, C and D follow",
		patch(deflate(B), storedHeader(false, int(D.off-deflate(B)-5))...),
		ok(A), want{off: B.off, readErr: ErrCorrupt}, ok(C), ok(D))
	add("corrupt B read on through C is ErrChecksum, C and D follow",
		patch(deflate(B), storedHeader(true, int(end(C)-8-deflate(B)-5))...),
		ok(A), want{off: B.off, readErr: ErrChecksum}, ok(C), ok(D))

	// Damaged headers are bytes that are not a member.
	add("reserved flag bits in B's header skip B as garbage", patch(B.off+3, 0xe0),
		ok(A), want{off: B.off, nextErr: ErrGarbage, msg: fmt.Sprintf("%d bytes skipped", B.length)}, ok(C), ok(D))
	add("bad header CRC in C skips C as garbage", flip(deflate(C)-1),
		ok(A), ok(B), want{off: C.off, nextErr: ErrGarbage, msg: fmt.Sprintf("%d bytes skipped", C.length)}, ok(D))
	// FEXTRA with XLEN 0xffff: the header would run past the end of the file.
	add("extra field in B longer than the file skips B as garbage", patch(B.off+3, 0x04, 0, 0, 0, 0, 0, 0, 0xff, 0xff),
		ok(A), want{off: B.off, nextErr: ErrGarbage, msg: fmt.Sprintf("%d bytes skipped", B.length)}, ok(C), ok(D))
	add("unterminated name at the end of the file is ErrTruncated", append(bytes.Clone(base), 0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 0, 'a', 'b'),
		ok(A), ok(B), ok(C), ok(D), want{off: end(D), nextErr: ErrTruncated})

	// Garbage between members: one error with the count, then the member.
	for _, junk := range [][]byte{
		[]byte("x"),
		[]byte("\r\n"),
		[]byte("garbage"),
		[]byte("123456789"),
		[]byte("0123456789"),
		bytes.Repeat([]byte{0}, 512),
		{0x1f, 0x8b, 0x1f, 0x1f, 0x8b},
		{0x1f, 0x8b, 8, 0xe0, 0, 0, 0, 0, 0, 0, 'z'}, // a magic with a bad header
		{0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 'z'}, // a magic whose extra field spans the rest
		bytes.Repeat([]byte("x"), bufferSize-2),
		bytes.Repeat([]byte("x"), bufferSize-1),
		bytes.Repeat([]byte("x"), bufferSize),
		bytes.Repeat([]byte("x"), bufferSize+1),
		randomPayload(5, 3*bufferSize),
	} {
		if bytes.Contains(junk[1:], gzipMagic) {
			t.Fatal("test data: junk holds a second magic")
		}
		n := len(junk)
		add(fmt.Sprintf("%d bytes of garbage between B and C are ErrGarbage", n), insert(C.off, junk),
			ok(A), ok(B), want{off: C.off, nextErr: ErrGarbage, msg: fmt.Sprintf(" %d bytes skipped", n)}, ok(shift(C, n)), ok(shift(D, n)))
		if bytes.HasPrefix(junk, []byte{0x1f, 0x8b, 8, 4}) {
			continue // at the end, this is a header the file ends inside: below
		}
		add(fmt.Sprintf("%d bytes of trailing garbage are ErrGarbage", n), append(bytes.Clone(base), junk...),
			ok(A), ok(B), ok(C), ok(D), want{off: end(D), nextErr: ErrGarbage, msg: fmt.Sprintf(" %d bytes of trailing garbage", n)})
	}
	add("garbage then a truncated header are two errors", append(bytes.Clone(base), 'a', 'b', 'c', 0x1f, 0x8b, 8, 0),
		ok(A), ok(B), ok(C), ok(D), want{off: end(D), nextErr: ErrGarbage, msg: " 3 bytes skipped"}, want{off: end(D) + 3, nextErr: ErrTruncated})
	add("trailing extra field longer than the rest of the file is ErrTruncated", append(bytes.Clone(base), 0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 'z'),
		ok(A), ok(B), ok(C), ok(D), want{off: end(D), nextErr: ErrTruncated})
	// Five bytes of B's header and C's first five make a valid header whose
	// deflate data is the rest of C's header: the member it makes is corrupt,
	// and C is found again from just after its start.
	add("a member cut in its header and a member after it is ErrCorrupt, then that member", insert(C.off, base[B.off:B.off+5]),
		ok(A), ok(B), want{off: C.off, readErr: ErrCorrupt}, ok(shift(C, 5)), ok(shift(D, 5)))

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, bufSize := range []int{1 << 16, 333} {
				_, steps := readFile(t, c.data, "damaged.warc.gz", bufSize)
				checkSteps(t, steps, c.wants)
			}
		})
	}
}

// Each error is reported once: the call after it moves on, whether the
// member was read or skipped, and Read keeps returning the member's damage
// until Next.
func TestErrorReportedOnce(t *testing.T) {
	b := fourMembers(t)
	A, B, C := b.parts[0], b.parts[1], b.parts[2]
	data := b.bytes()
	data[B.off+B.length-8] ^= 1 // B's CRC
	type call struct {
		read    bool // read the member instead of calling Next on
		off     int64
		wantErr error
	}
	for _, tc := range []struct {
		name  string
		calls []call
	}{
		{"damage found by Read, then Next moves on", []call{
			{off: A.off}, {read: true, off: A.off},
			{off: B.off}, {read: true, off: B.off, wantErr: ErrChecksum}, {read: true, off: B.off, wantErr: ErrChecksum},
			{off: C.off}, {read: true, off: C.off},
		}},
		{"damage found by Next skipping the member, then Next moves on", []call{
			{off: A.off}, {off: B.off}, {off: B.off, wantErr: ErrChecksum}, {off: C.off}, {off: b.parts[3].off}, {wantErr: io.EOF}, {wantErr: io.EOF},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z, err := NewReader(bytes.NewReader(data), "f")
			if err != nil {
				t.Fatal(err)
			}
			var got []error
			var members []Member
			bounded(t, tc.name, func() {
				for _, c := range tc.calls {
					if c.read {
						_, err := io.ReadAll(z)
						got = append(got, err)
						members = append(members, z.Member())
						continue
					}
					m, err := z.Next()
					got = append(got, err)
					members = append(members, m)
				}
			})
			for i, c := range tc.calls {
				switch {
				case c.wantErr == io.EOF:
					if got[i] != io.EOF {
						t.Errorf("call %d: %v, want io.EOF", i, got[i])
					}
				case c.wantErr != nil:
					checkError(t, fmt.Sprintf("call %d", i), got[i], c.off, c.wantErr, "")
				case got[i] != nil:
					t.Errorf("call %d: %v, want success", i, got[i])
				case members[i].Offset != c.off:
					t.Errorf("call %d: member %+v, want offset %d", i, members[i], c.off)
				}
			}
		})
	}
}

// A member longer than the kept history that turns out corrupt: reading goes
// on with the next member all the same.
func TestCorruptLongMember(t *testing.T) {
	var b builder
	small := textPayload(1, 1000)
	b.member(klauspostMember(t, small, gzip.Header{}, 6), small, 10)
	big := randomPayload(2, 3*maxHistory)
	b.member(klauspostMember(t, big, gzip.Header{}, 6), big, 10)
	b.member(klauspostMember(t, small, gzip.Header{}, 6), small, 10)
	data := b.bytes()
	P := b.parts[1]
	if bytes.Contains(data[P.off+1:P.off+P.length], gzipMagic) {
		t.Skip("test data: random member holds a magic")
	}
	// Cut out the tail of the big member: its last stored block then runs
	// over the next member into the end of the file.
	d := append(bytes.Clone(data[:P.off+P.length-5000]), data[P.off+P.length:]...)
	_, steps := readFile(t, d, "f", 1<<16)
	if len(steps) != 3 || steps[1].readErr == nil || steps[2].nextErr != nil || steps[2].m.Offset != P.off+P.length-5000 {
		t.Fatalf("got %v; want the first member, damage in the second, the third at %d", steps, P.off+P.length-5000)
	}
	checkError(t, "big member", steps[1].readErr, P.off, ErrTruncated, "")
}
