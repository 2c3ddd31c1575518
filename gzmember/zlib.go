//go:build cgo && !nozlib

package gzmember

/*
#cgo LDFLAGS: -lz
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

// gzr_step is what one call of deflate did.
typedef struct {
	uint32_t consumed; // input bytes used
	uint32_t produced; // output bytes written
	int32_t  status;   // deflate's return value
} gzr_step;

// gzr_new makes a raw deflate stream (no zlib or gzip wrapper: the member's
// header and trailer are put around it in Go).
static z_stream *gzr_new(int level, int window_bits, int mem_level, int strategy, int *status) {
	z_stream *s = calloc(1, sizeof *s);
	if (s == NULL) {
		*status = Z_MEM_ERROR;
		return NULL;
	}
	*status = deflateInit2(s, level, Z_DEFLATED, -window_bits, mem_level, strategy);
	if (*status != Z_OK) {
		free(s);
		return NULL;
	}
	return s;
}

static void gzr_free(z_stream *s) {
	deflateEnd(s);
	free(s);
}

// gzr_deflate runs deflate with the flush mode given over in and out, which
// are Go memory: the stream keeps no pointer to them after the call (zlib
// copies its input into its window).
static gzr_step gzr_deflate(z_stream *s, uint8_t *in, uint32_t in_len, uint8_t *out, uint32_t out_len, int flush) {
	gzr_step r;
	s->next_in = in;
	s->avail_in = in_len;
	s->next_out = out;
	s->avail_out = out_len;
	r.status = deflate(s, flush);
	r.consumed = in_len - s->avail_in;
	r.produced = out_len - s->avail_out;
	s->next_in = Z_NULL;
	s->avail_in = 0;
	s->next_out = Z_NULL;
	s->avail_out = 0;
	return r;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

const zlibAvailable = true

func zlibVersion() string { return C.GoString(C.zlibVersion()) }

// The flush modes of deflate (Z_FULL_FLUSH for the tests' members).
const (
	flushNone   = int(C.Z_NO_FLUSH)
	flushSync   = int(C.Z_SYNC_FLUSH)
	flushFull   = int(C.Z_FULL_FLUSH)
	flushFinish = int(C.Z_FINISH)
)

// deflater is a zlib deflate stream, made again only when the setting
// changes (deflateReset otherwise: the same bytes as a new stream, without
// allocating its 256-384 KB). The C memory is freed by close or, failing that,
// when the deflater is garbage.
type deflater struct {
	c       *zstream
	setting Setting
}

// zstream holds the C pointer apart from the deflater, for the cleanup.
type zstream struct{ s *C.z_stream }

func (z *deflater) reset(s Setting) error {
	if z.c != nil && z.c.s != nil && z.setting == s {
		if st := C.deflateReset(z.c.s); st != C.Z_OK {
			return fmt.Errorf("zlib deflateReset: status %d", int(st))
		}
		return nil
	}
	if z.c == nil {
		z.c = new(zstream)
		runtime.AddCleanup(z, func(c *zstream) {
			if c.s != nil {
				C.gzr_free(c.s)
			}
		}, z.c)
	}
	z.close()
	var st C.int
	p := C.gzr_new(C.int(s.Level), C.int(s.WindowBits), C.int(s.MemLevel), C.int(s.Strategy), &st)
	if p == nil {
		return fmt.Errorf("zlib deflateInit2 (%v): status %d", s, int(st))
	}
	z.c.s, z.setting = p, s
	return nil
}

// step runs deflate once over in and out with the flush mode given; end is
// set when the stream ended (all of its output given).
func (z *deflater) step(in, out []byte, flush int) (consumed, produced int, end bool, err error) {
	const maxChunk = 1 << 30 // zlib counts in 32 bits
	in, out = in[:min(len(in), maxChunk)], out[:min(len(out), maxChunk)]
	var inPtr, outPtr *C.uint8_t
	if len(in) > 0 {
		inPtr = (*C.uint8_t)(unsafe.Pointer(&in[0]))
	}
	if len(out) > 0 {
		outPtr = (*C.uint8_t)(unsafe.Pointer(&out[0]))
	}
	r := C.gzr_deflate(z.c.s, inPtr, C.uint32_t(len(in)), outPtr, C.uint32_t(len(out)), C.int(flush))
	switch r.status {
	case C.Z_OK, C.Z_BUF_ERROR: // Z_BUF_ERROR: nothing to do, not an error
	case C.Z_STREAM_END:
		end = true
	default:
		return 0, 0, false, fmt.Errorf("zlib deflate: status %d", int(r.status))
	}
	return int(r.consumed), int(r.produced), end, nil
}

func (z *deflater) close() {
	if z.c != nil && z.c.s != nil {
		C.gzr_free(z.c.s)
		z.c.s = nil
	}
}
