package spool

import (
	"bytes"
	"fmt"
	"testing"
)

// A spool gives back exactly what was written, in order, whether it stayed
// in memory or went on to its temporary file, and holds no more memory than
// its limit; after Reset it serves the next unit the same way.
func TestSpool(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int
		writes []int // sizes of the writes
	}{
		{"nothing written", 100, nil},
		{"all in memory", 1 << 20, []int{10, 0, 300, 70000, 5}},
		{"exactly the limit", 1000, []int{400, 600}},
		{"one byte over the limit", 1000, []int{400, 601}},
		{"lines past the limit", 150 << 10, repeat(100, 4000)},
		{"no memory at all", 0, []int{1, 2, 3}},
		{"a write larger than the file buffer", 10, []int{5, 200 << 10, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.limit)
			defer s.Close()
			for unit := range 3 {
				var want bytes.Buffer
				for i, n := range tc.writes {
					p := bytes.Repeat([]byte{byte('a' + (unit+i)%26)}, n)
					if k, err := s.Write(p); k != n || err != nil {
						t.Fatalf("unit %d write %d: %d, %v", unit, i, k, err)
					}
					want.Write(p)
					if cap(s.mem) > tc.limit {
						t.Fatalf("unit %d: %d bytes of memory for a limit of %d", unit, cap(s.mem), tc.limit)
					}
				}
				var got bytes.Buffer
				n, err := s.WriteTo(&got)
				if err != nil || n != int64(want.Len()) || !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("unit %d: WriteTo wrote %d bytes (%v), want the %d written", unit, n, err, want.Len())
				}
				if err := s.Reset(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func repeat(n, times int) []int {
	s := make([]int, times)
	for i := range s {
		s[i] = n
	}
	return s
}

func ExampleSpool() {
	s := New(8)
	defer s.Close()
	fmt.Fprint(s, "in memory ")
	fmt.Fprint(s, "and on disk\n")
	var out bytes.Buffer
	s.WriteTo(&out)
	fmt.Print(out.String())
	// Output: in memory and on disk
}

// TestPool proves that a spool put back comes out empty, with its memory
// kept, and that the pool keeps no more than it was told to.
func TestPool(t *testing.T) {
	p := NewPool(1<<20, 1)
	a := p.Get()
	a.Write([]byte("first unit\n"))
	mem := &a.mem[:1][0]
	p.Put(a)
	b := p.Get()
	if b != a {
		t.Fatalf("Get after Put made a new spool")
	}
	var out bytes.Buffer
	if _, err := b.WriteTo(&out); err != nil || out.Len() != 0 {
		t.Errorf("a spool put back holds %q (%v)", out.String(), err)
	}
	b.Write([]byte("second unit\n"))
	if &b.mem[:1][0] != mem {
		t.Errorf("the spool's memory was allocated again")
	}
	c := p.Get()
	p.Put(b)
	p.Put(c) // one more than the pool keeps: closed
	if c.mem != nil {
		t.Errorf("a spool the pool had no room for was not closed")
	}
}
