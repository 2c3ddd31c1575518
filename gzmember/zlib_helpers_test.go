//go:build cgo && !nozlib

package gzmember

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// zlibMember is a gzip member as a zlib writer makes it: hdr, then payload
// compressed by zlib's deflate with setting s, fed chunk bytes at a time,
// with a flush of mode flush after every flushEvery bytes (0: none), then
// the trailer. It is built with the package's deflater, but by calls of
// its own (chunking, a small output buffer, flushes) that the rebuild
// never makes. A flush is given room for its output: when a flush's
// output ends exactly where the writer's buffer does, zlib, called again
// to finish the flush as its manual says, adds an empty stored block, so
// such a member depends on the writer's buffer size (and is not rebuilt).
func zlibMember(t testing.TB, hdr []byte, payload []byte, s Setting, chunk, flushEvery, flush int) []byte {
	t.Helper()
	var z deflater
	defer z.close()
	if err := z.reset(s); err != nil {
		t.Fatal(err)
	}
	m := append([]byte(nil), hdr...)
	small, large := make([]byte, 1000), make([]byte, 1<<20)
	run := func(in []byte, mode int) {
		// Output drained in many calls while compressing; room to flush.
		out := small
		if mode != flushNone {
			out = large
		}
		for {
			consumed, produced, end, err := z.step(in, out, mode)
			if err != nil {
				t.Fatal(err)
			}
			m = append(m, out[:produced]...)
			in = in[consumed:]
			if mode == flushFinish && end || mode != flushFinish && len(in) == 0 && produced < len(out) {
				return
			}
		}
	}
	if chunk <= 0 {
		chunk = len(payload) + 1
	}
	sinceFlush := 0
	for p := payload; len(p) > 0; {
		n := min(chunk, len(p))
		if flushEvery > 0 {
			n = min(n, flushEvery-sinceFlush)
		}
		run(p[:n], flushNone)
		p, sinceFlush = p[n:], sinceFlush+n
		if flushEvery > 0 && sinceFlush == flushEvery {
			run(nil, flush)
			sinceFlush = 0
		}
	}
	if flushEvery > 0 && len(payload) == 0 {
		run(nil, flush) // a writer's flush before close, of nothing
	}
	run(nil, flushFinish)
	m = binary.LittleEndian.AppendUint32(m, crc32.ChecksumIEEE(payload))
	m = binary.LittleEndian.AppendUint32(m, uint32(len(payload)))
	return m
}
