package gzmulti

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/gzip"
)

// op is one Writer call of a test: compress payload as a member, or copy a
// member's raw bytes from src.
type op struct {
	payload []byte
	copyOf  []byte // raw member bytes to CopyMember
}

func TestWriterRoundTrip(t *testing.T) {
	ext := klauspostMember(t, textPayload(50, 4000), gzip.Header{Name: "kept.warc"}, 9)
	extPayload := textPayload(50, 4000)
	hand, _ := handMember(t, textPayload(51, 100), hdrOpts{hcrc: true, comment: "copied as is"})
	handPayload := textPayload(51, 100)
	for _, tc := range []struct {
		name  string
		level int
		ops   []op
	}{
		{"compressed members", gzip.DefaultCompression, []op{
			{payload: textPayload(1, 10000)}, {payload: randomPayload(2, 5000)}, {payload: textPayload(3, 1)},
		}},
		{"members of 0 bytes", gzip.BestSpeed, []op{{payload: []byte{}}, {payload: nil}, {payload: textPayload(4, 10)}, {payload: []byte{}}}},
		{"stored level", gzip.NoCompression, []op{{payload: textPayload(5, 70000)}, {payload: randomPayload(6, 100)}}},
		{"Huffman-only level", gzip.HuffmanOnly, []op{{payload: textPayload(5, 70000)}, {payload: []byte{}}}},
		{"stateless level", gzip.StatelessCompression, []op{{payload: textPayload(5, 70000)}, {payload: []byte{}}, {payload: textPayload(6, 9)}}},
		{"copied members only", gzip.DefaultCompression, []op{{copyOf: ext}, {copyOf: hand}, {copyOf: minimalEmptyMember}}},
		{"compressed and copied members mixed", gzip.DefaultCompression, []op{
			{copyOf: ext}, {payload: textPayload(7, 3000)}, {payload: textPayload(8, 300000)},
			{copyOf: hand}, {copyOf: storedEmptyMember}, {payload: randomPayload(9, 1000)}, {copyOf: ext},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := NewWriter(&out, tc.level)
			var wants []want
			for i, o := range tc.ops {
				before := int64(out.Len())
				if w.Offset() != before {
					t.Fatalf("op %d: Offset() = %d before the member, %d bytes written", i, w.Offset(), before)
				}
				var m Member
				var err error
				var payload []byte
				if o.copyOf != nil {
					m, err = w.CopyMember(bytes.NewReader(o.copyOf), int64(len(o.copyOf)))
					if err != nil {
						t.Fatalf("op %d: CopyMember: %v", i, err)
					}
					if !bytes.Equal(out.Bytes()[before:], o.copyOf) {
						t.Fatalf("op %d: CopyMember did not copy the raw bytes unchanged", i)
					}
					switch {
					case bytes.Equal(o.copyOf, ext):
						payload = extPayload
					case bytes.Equal(o.copyOf, hand):
						payload = handPayload
					default:
						payload = []byte{}
					}
				} else {
					// Write in two halves to cover a member of several writes.
					half := len(o.payload) / 2
					if _, err := w.Write(o.payload[:half]); err != nil {
						t.Fatal(err)
					}
					if _, err := w.Write(o.payload[half:]); err != nil {
						t.Fatal(err)
					}
					if m, err = w.CloseMember(); err != nil {
						t.Fatalf("op %d: CloseMember: %v", i, err)
					}
					payload = o.payload
				}
				after := int64(out.Len())
				if m != (Member{Offset: before, Length: after - before}) {
					t.Errorf("op %d: Writer says %+v, the member is at %d, %d bytes", i, m, before, after-before)
				}
				if w.Offset() != after {
					t.Errorf("op %d: Offset() = %d after the member, %d bytes written", i, w.Offset(), after)
				}
				wants = append(wants, want{off: before, length: after - before, payload: payload})
			}
			_, steps := readFile(t, out.Bytes(), "written.warc.gz", 1<<15)
			checkSteps(t, steps, wants)
		})
	}
}

// A file written with many small members of every kind, checked against the
// standard multistream reading of the same bytes.
func TestWriterManyMembers(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, gzip.BestSpeed)
	var all []byte
	var members []Member
	for i := range 3000 {
		p := textPayload(uint64(i), i%40)
		if i%7 == 0 {
			m, err := w.CopyMember(bytes.NewReader(minimalEmptyMember), int64(len(minimalEmptyMember)))
			if err != nil {
				t.Fatal(err)
			}
			members = append(members, m)
			continue
		}
		w.Write(p)
		m, err := w.CloseMember()
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
		all = append(all, p...)
	}
	zr, err := gzip.NewReader(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, all) {
		t.Fatalf("multistream reading of the written file: %v, %d bytes of %d", err, len(got), len(all))
	}
	_, steps := readFile(t, out.Bytes(), "f", 4096)
	if len(steps) != len(members) {
		t.Fatalf("Reader found %d members, Writer wrote %d", len(steps), len(members))
	}
	for i, s := range steps {
		if s.nextErr != nil || s.readErr != nil || s.final != members[i] {
			t.Errorf("member %d: Reader %v, Writer %+v", i, s, members[i])
		}
	}
}

func TestWriterErrors(t *testing.T) {
	t.Run("CopyMember from a short source is an error", func(t *testing.T) {
		var out bytes.Buffer
		w := NewWriter(&out, gzip.DefaultCompression)
		m, err := w.CopyMember(bytes.NewReader(minimalEmptyMember[:7]), int64(len(minimalEmptyMember)))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("error %v, want io.ErrUnexpectedEOF", err)
		}
		if m != (Member{Offset: 0, Length: 7}) || out.Len() != 7 || w.Offset() != 7 {
			t.Errorf("member %+v, %d bytes out, Offset %d; want the 7 bytes copied accounted for", m, out.Len(), w.Offset())
		}
	})
	t.Run("CopyMember passes a read error on", func(t *testing.T) {
		boom := errors.New("boom")
		w := NewWriter(io.Discard, gzip.DefaultCompression)
		if _, err := w.CopyMember(iotest.ErrReader(boom), 10); !errors.Is(err, boom) {
			t.Errorf("error %v, want the read error", err)
		}
	})
	t.Run("CopyMember while a member is open is an error", func(t *testing.T) {
		var out bytes.Buffer
		w := NewWriter(&out, gzip.DefaultCompression)
		w.Write([]byte("open"))
		n := out.Len()
		if _, err := w.CopyMember(bytes.NewReader(minimalEmptyMember), 20); err == nil {
			t.Error("CopyMember with a member open succeeded")
		}
		if out.Len() != n {
			t.Error("CopyMember with a member open wrote bytes")
		}
		m, err := w.CloseMember()
		if err != nil || m.Offset != 0 || m.Length != int64(out.Len()) {
			t.Errorf("CloseMember after the refused copy: %+v, %v", m, err)
		}
	})
	t.Run("CloseMember with no member open is an error", func(t *testing.T) {
		w := NewWriter(io.Discard, gzip.DefaultCompression)
		if _, err := w.CloseMember(); err == nil {
			t.Error("CloseMember on a new Writer succeeded")
		}
		w.Write(nil)
		if _, err := w.CloseMember(); err != nil {
			t.Errorf("CloseMember of an empty member: %v", err)
		}
		if _, err := w.CloseMember(); err == nil {
			t.Error("second CloseMember succeeded")
		}
	})
	t.Run("a bad level is an error", func(t *testing.T) {
		w := NewWriter(io.Discard, 42)
		if _, err := w.Write([]byte("x")); err == nil {
			t.Error("Write at level 42 succeeded")
		}
	})
	t.Run("a write error is returned", func(t *testing.T) {
		boom := errors.New("full")
		w := NewWriter(failWriter{boom}, gzip.DefaultCompression)
		_, err := w.Write(textPayload(1, 1<<20))
		if err == nil {
			_, err = w.CloseMember()
		}
		if !errors.Is(err, boom) {
			t.Errorf("error %v, want the write error", err)
		}
	})
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// TestWriterReset proves that a Writer reset onto another destination
// writes whole members there, its offsets counted from 0, whatever it was
// doing before (a member left open is dropped).
func TestWriterReset(t *testing.T) {
	var first, second bytes.Buffer
	w := NewWriter(&first, gzip.DefaultCompression)
	if _, err := w.Write(textPayload(1, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseMember(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(textPayload(2, 1000)); err != nil { // left open
		t.Fatal(err)
	}
	w.Reset(&second)
	if w.Offset() != 0 {
		t.Errorf("Offset() = %d after Reset, want 0", w.Offset())
	}
	payload := textPayload(3, 5000)
	if _, err := w.Write(payload); err != nil {
		t.Fatal(err)
	}
	m, err := w.CloseMember()
	if err != nil {
		t.Fatal(err)
	}
	if m != (Member{Offset: 0, Length: int64(second.Len())}) {
		t.Errorf("member %+v, %d bytes written", m, second.Len())
	}
	_, steps := readFile(t, second.Bytes(), "reset.warc.gz", 1<<15)
	checkSteps(t, steps, []want{{off: 0, length: int64(second.Len()), payload: payload}})
}
