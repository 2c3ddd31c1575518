//go:build isal && cgo

package gzmulti

/*
#cgo LDFLAGS: -lisal
#include <stdint.h>
#include <stdlib.h>
#include <isa-l/igzip_lib.h>

// gzm_clean_upper clears the upper halves of the vector registers after
// ISA-L's AVX2 and AVX-512 code, as compilers do after their own (Go's
// runtime does after its): left dirty, every SSE instruction the Go code
// runs next on this thread (crypto/sha1's SHA-NI rounds, the payload
// digests) waits on a merge of them, and warcsum with ISA-L took 12.9 CPU
// seconds on the bench collection where the pure Go inflater took 2.5.
// Only where the CPU has AVX, which VZEROUPPER needs.
static void gzm_clean_upper(void) {
#if defined(__x86_64__)
	static int avx = -1;
	if (avx < 0) {
		avx = __builtin_cpu_supports("avx");
	}
	if (avx) {
		__asm__ __volatile__("vzeroupper" ::: "memory");
	}
#endif
}

// gzm_step is what one call of isal_inflate did.
typedef struct {
	int64_t  consumed; // input bytes used; negative when the end of the stream gave back bytes taken before this call
	uint32_t produced; // output bytes written
	int32_t  status;   // isal_inflate's return value
	int32_t  done;     // the stream's final block has ended and all its output was written
} gzm_step;

// gzm_inflate runs isal_inflate over in and out, which are Go memory: the
// state keeps no pointer to them after the call. reset starts a new stream
// (saving a call per member). At the end of the stream
// the whole bytes still in ISA-L's bit buffer lie past the end (the trailer);
// releases before 2.31 do not give them back, so this does, and reports
// them as not consumed.
static gzm_step gzm_inflate(struct inflate_state *s, int reset, uint8_t *in, uint32_t in_len, uint8_t *out, uint32_t out_len) {
	gzm_step r;
	if (reset) {
		isal_inflate_reset(s);
	}
	s->next_in = in;
	s->avail_in = in_len;
	s->next_out = out;
	s->avail_out = out_len;
	r.status = isal_inflate(s);
	gzm_clean_upper();
	r.done = s->block_state == ISAL_BLOCK_FINISH;
	if (r.done && s->read_in_length >= 8) {
		s->avail_in += s->read_in_length / 8;
		s->read_in_length = 0;
		s->read_in = 0;
	}
	r.consumed = (int64_t)in_len - (int64_t)s->avail_in;
	r.produced = out_len - s->avail_out;
	s->next_in = NULL;
	s->next_out = NULL;
	s->avail_in = 0;
	s->avail_out = 0;
	return r;
}

static struct inflate_state *gzm_new(void) {
	struct inflate_state *s = malloc(sizeof *s);
	if (s != NULL) {
		isal_inflate_init(s);
		// The CRC-32 of the output, kept by ISA-L as it writes it; the
		// trailer is read and checked in Go.
		s->crc_flag = ISAL_GZIP_NO_HDR;
	}
	return s;
}
*/
import "C"

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime"
	"unsafe"
)

// Inflater names the deflate implementation of this build: "go"
// (klauspost/compress, pure Go) or "isal" (Intel ISA-L through cgo, built
// with -tags isal).
const Inflater = "isal"

// isalInflater decompresses raw deflate data with ISA-L's isal_inflate,
// reading straight from the bufio.Reader's buffer and writing straight into
// the caller's: no copy on either side. One C state (about 100 KB) is
// allocated per inflater and reset for every member; it is freed when the
// inflater is garbage.
type isalInflater struct {
	state *C.struct_inflate_state
	src   *bufio.Reader
	fresh bool    // Reset was called and no Read since
	in    int64   // deflate bytes consumed so far
	tail  [8]byte // the last bytes consumed, newest last
	over  []byte  // bytes given back at the end of the stream, a suffix of tail
	done  bool
	err   error
}

func newInflater() (inflater, error) {
	s := C.gzm_new()
	if s == nil {
		return nil, errors.New("gzmulti: no memory for an ISA-L inflate state")
	}
	z := &isalInflater{state: s}
	runtime.AddCleanup(z, func(s *C.struct_inflate_state) { C.free(unsafe.Pointer(s)) }, s)
	return z, nil
}

func (z *isalInflater) Reset(src *bufio.Reader) {
	z.src, z.fresh, z.in, z.over, z.done, z.err = src, true, 0, nil, false, nil
}

// maxOut bounds one call's output, which ISA-L counts in 32 bits.
const maxOut = 1 << 30

func (z *isalInflater) Read(p []byte) (int, error) {
	if z.done {
		return 0, z.err
	}
	p = p[:min(len(p), maxOut)]
	if len(p) == 0 {
		return 0, nil
	}
	for {
		in, eof, err := z.input()
		if err != nil {
			return 0, err
		}
		var inPtr *C.uint8_t
		if len(in) > 0 {
			inPtr = (*C.uint8_t)(unsafe.Pointer(&in[0]))
		}
		reset := C.int(0)
		if z.fresh {
			reset, z.fresh = 1, false
		}
		r := C.gzm_inflate(z.state, reset, inPtr, C.uint32_t(len(in)), (*C.uint8_t)(unsafe.Pointer(&p[0])), C.uint32_t(len(p)))
		n := int(r.produced)
		z.consume(in, int(r.consumed))
		switch {
		case r.status < 0:
			z.done, z.err = true, corruptError{z.in}
			return n, z.err
		case r.done != 0:
			z.done, z.err = true, io.EOF
			return n, io.EOF
		case n > 0:
			return n, nil
		case r.consumed == 0 && eof:
			z.done, z.err = true, io.ErrUnexpectedEOF
			return 0, z.err
		case r.consumed == 0:
			// Cannot happen: with input and room for output, isal_inflate
			// consumes or produces.
			z.done, z.err = true, fmt.Errorf("gzmulti: isal_inflate made no progress (status %d)", r.status)
			return 0, z.err
		}
	}
}

// input returns the bytes buffered in src, reading more if there are none;
// eof is set when src has no more.
func (z *isalInflater) input() (in []byte, eof bool, err error) {
	if z.src.Buffered() == 0 {
		if _, err := z.src.Peek(1); err != nil {
			if err != io.EOF {
				return nil, false, err
			}
			return nil, true, nil
		}
	}
	in, _ = z.src.Peek(z.src.Buffered())
	return in, false, nil
}

// consume discards the n bytes of in that ISA-L used. A negative n gives
// back bytes consumed by earlier calls: the end of the stream was among
// them, and they belong to the trailer.
func (z *isalInflater) consume(in []byte, n int) {
	z.in += int64(n)
	if n < 0 {
		// ISA-L's bit buffer holds at most 8 bytes.
		z.over = z.tail[len(z.tail)+max(n, -len(z.tail)):]
		return
	}
	if n >= len(z.tail) {
		copy(z.tail[:], in[n-len(z.tail):n])
	} else {
		copy(z.tail[:], z.tail[n:])
		copy(z.tail[len(z.tail)-n:], in[:n])
	}
	z.src.Discard(n)
}

func (z *isalInflater) Overread() []byte { return z.over }

func (z *isalInflater) Sum32() uint32 {
	if z.fresh {
		return 0
	}
	return uint32(z.state.crc)
}
