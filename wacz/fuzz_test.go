package wacz

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestOpenMutations opens and checks packages (a generated one, the
// corpus's) with bytes changed, cut out and put in at random: bad input
// is an error or a problem reported, never a panic or a hang.
func TestOpenMutations(t *testing.T) {
	bases := [][]byte{packageBytes(validMembers(t))}
	for _, c := range corpusPackages {
		if b, err := os.ReadFile(corpusDir + "/" + c.path); err == nil && len(b) < 1<<16 {
			bases = append(bases, b)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	opened := 0
	for i := 0; i < n; i++ {
		b := bytes.Clone(bases[rng.IntN(len(bases))])
		for k := 0; k < 1+rng.IntN(4); k++ {
			switch at := rng.IntN(len(b)); rng.IntN(3) {
			case 0:
				b[at] = byte(rng.IntN(256))
			case 1:
				b = append(b[:at], b[min(len(b), at+1+rng.IntN(8)):]...)
			default:
				b = append(b[:at], append([]byte{byte(rng.IntN(256)), 0xff, 0xff}, b[at:]...)...)
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			p, err := NewPackage(bytes.NewReader(b), int64(len(b)), "mutated.wacz")
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Errorf("not an *Error: %v", err)
				}
				return
			}
			opened++
			if _, err := Check(p, CheckOptions{Records: true}); err != nil {
				t.Errorf("Check: %v", err)
			}
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("mutation %d: no answer in 30 s (%q)", i, b)
		}
	}
	t.Logf("%d mutated packages, %d opened", n, opened)
}

// FuzzDatapackage parses mutated datapackage.json files: no panic, and
// one that parses writes back a file that parses to the same bytes.
func FuzzDatapackage(f *testing.F) {
	f.Add([]byte(datapackageFor(validMembers(&testing.T{}))))
	f.Add([]byte(`{"resources": [{"path": "p", "stats": {"hash": "00", "bytes": 1}, "hashing": "sha256"}], "relation": {"requires": [{"filename": "a.wacz", "size": 3}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDatapackage(b)
		if err != nil {
			return
		}
		out := d.Bytes()
		d2, err := ParseDatapackage(out)
		if err != nil {
			t.Fatalf("written back as %q, which does not parse: %v", out, err)
		}
		if !bytes.Equal(d2.Bytes(), out) {
			t.Fatalf("not stable: %q then %q", out, d2.Bytes())
		}
		d.SetModified(rebuildTime)
		d.Require(Requirement{Filename: "x.wacz", Size: -1})
		if _, err := ParseDatapackage(d.Bytes()); err != nil {
			t.Fatalf("edited into %q, which does not parse: %v", d.Bytes(), err)
		}
	})
}
