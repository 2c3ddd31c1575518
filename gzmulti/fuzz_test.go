package gzmulti

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// FuzzReader reads arbitrary bytes as a file. Properties: no panic, no
// endless loop, every member starts inside the file and, read to its end,
// ends inside it; members come in increasing offset order; damage is an
// *Error inside the file.
func FuzzReader(f *testing.F) {
	const maxSeed = 20 << 10
	seeded := 0
	for _, path := range corpusFiles(f, maxSeed) {
		if seeded == 12 {
			break
		}
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
			seeded++
		}
	}
	// Generated files: well-formed, and damaged in the ways the tests know.
	b := fourMembers(f)
	base := b.bytes()
	B := b.parts[1]
	f.Add(base)
	f.Add(base[:len(base)-3])
	f.Add(base[:b.parts[3].off+5])
	f.Add(append(bytes.Clone(base), 0, 0, 0, 0))
	f.Add(append(append(bytes.Clone(base[:B.off]), "garbage"...), base[B.off:]...))
	corrupt := bytes.Clone(base)
	corrupt[B.off+int64(B.hdrLen)] = 0x07
	f.Add(corrupt)
	badCRC := bytes.Clone(base)
	badCRC[B.off+B.length-6] ^= 1
	f.Add(badCRC)
	p := textPayload(1, 500)
	m, _ := handMember(f, p, hdrOpts{hcrc: true, extra: []byte("ab\x01\x00c"), name: "n", comment: "c"})
	f.Add(append(append(bytes.Clone(m), minimalEmptyMember...), storedEmptyMember...))
	f.Add(klauspostMember(f, p, gzip.Header{}, gzip.NoCompression))
	f.Add(bytes.Repeat(minimalEmptyMember, 10))
	f.Add([]byte{0x1f, 0x8b, 8})
	f.Add([]byte("WARC/1.0\r\n\r\n"))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		if msg := fuzzOne(t, data); msg != "" {
			t.Fatal(msg)
		}
	})
}

// fuzzOne checks the properties on data and returns what failed, if any.
func fuzzOne(t *testing.T, data []byte) (failure string) {
	z, err := NewReader(bytes.NewReader(data), "fuzz")
	if err != nil {
		return fmt.Sprintf("NewReader: %v", err)
	}
	size := int64(len(data))
	done := make(chan string, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Sprintf("panic: %v", r)
			}
		}()
		done <- func() string {
			last := int64(-1)
			buf := make([]byte, 4096)
			for i := 0; i < 1000; i++ {
				m, err := z.Next()
				if err == io.EOF {
					return ""
				}
				if err != nil {
					var e *Error
					if !errors.As(err, &e) {
						return fmt.Sprintf("Next: %v is not a *gzmulti.Error", err)
					}
					if e.Offset < 0 || e.Offset > size {
						return fmt.Sprintf("Next: error offset %d outside the file of %d bytes", e.Offset, size)
					}
					continue
				}
				if m.Offset < 0 || m.Offset >= size {
					return fmt.Sprintf("member %+v outside the file of %d bytes", m, size)
				}
				if m.Offset <= last {
					return fmt.Sprintf("member at %d after one at %d", m.Offset, last)
				}
				last = m.Offset
				for reads := 0; ; reads++ {
					if reads > 1<<16 {
						return fmt.Sprintf("member at %d: Read does not end", m.Offset)
					}
					_, err := z.Read(buf)
					if err == io.EOF {
						mm := z.Member()
						if mm.Offset != m.Offset || (mm.Length <= 0 && size > 0) || mm.Offset+mm.Length > size {
							return fmt.Sprintf("member %+v read to its end in a file of %d bytes", mm, size)
						}
						break
					}
					if err != nil {
						var e *Error
						if !errors.As(err, &e) || e.Offset != m.Offset {
							return fmt.Sprintf("Read: %v is not an *Error at the member's offset %d", err, m.Offset)
						}
						break
					}
				}
			}
			// 1000 calls of Next on fewer bytes means one of them made no
			// progress: each one consumes at least one byte.
			if size < 990 {
				return fmt.Sprintf("Next did not reach io.EOF after 1000 calls on %d bytes", size)
			}
			return ""
		}()
	}()
	select {
	case msg := <-done:
		return msg
	case <-time.After(10 * time.Second):
		return "reading did not finish within 10s"
	}
}
