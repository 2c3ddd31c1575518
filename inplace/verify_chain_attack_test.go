package inplace

import (
	"os"
	"strings"
	"testing"

	"warcdedup/fixity"
	"warcdedup/rewritelog"
)

// TestVerifyChainsAcrossSumForms proves that a file rewritten twice,
// its new version logged once by SHA-256 (a WACZ member, WantSums; or
// --index, Placement.SHA256) and once by BLAKE3, in either order, has
// a log whose second "# file" line starts from the sum the first ended
// with, in the same form (the second rewrite expects the first's
// version: ExpectVersion), so that an undo sees the runs unbroken
// (rewritelog.Moves.Undone compares the two sums as text); and that
// each sum logged is what a fresh read of its version gives.
func TestVerifyChainsAcrossSumForms(t *testing.T) {
	const v0, v1, v2 = "AAAABBBBCCCC", "AAAAxyCCCC", "AAAAzCCCC"
	named := func(string) bool { return true }
	segs1 := []segment{{newOff: 0, length: 4, srcOff: 0}, {newOff: 4, length: 2, srcOff: 4, written: true, oldLen: 4}, {newOff: 6, length: 4, srcOff: 8}}
	segs2 := []segment{{newOff: 0, length: 4, srcOff: 0}, {newOff: 4, length: 1, srcOff: 4, written: true, oldLen: 2}, {newOff: 5, length: 4, srcOff: 6}}
	for _, tc := range []struct {
		name          string
		first, second *Placement
	}{
		{"SHA-256 (member) then BLAKE3 (plain)", &Placement{WantSums: named}, &Placement{}},
		{"BLAKE3 (plain) then SHA-256 (member)", &Placement{}, &Placement{WantSums: named}},
		{"SHA-256 (--index) then SHA-256 (member)", &Placement{SHA256: true}, &Placement{WantSums: named}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f1, tmp1 := sourceAndNew(t, []byte(v0), []byte(v1))
			first := &Version{Name: "x.wacz#archive/a.warc", Src: f1, tmp: tmp1, Size: int64(len(v0)), segments: segs1, pl: tc.first}
			old1, new1, err := first.verifyWith(func(int, int64, int64, *os.File) error { return nil }, openRead)
			if err != nil {
				t.Fatal(err)
			}
			fx := rewritelog.Fixity{File: first.Name, OldSize: int64(len(v0)), OldSum: old1, NewSize: int64(len(v1)), NewSum: new1}
			f2, tmp2 := sourceAndNew(t, []byte(v1), []byte(v2))
			second := &Version{Name: first.Name, Src: f2, tmp: tmp2, Size: int64(len(v1)), segments: segs2, pl: tc.second}
			if err := second.ExpectVersion(fx); err != nil {
				t.Fatal(err)
			}
			old2, new2, err := second.verifyWith(func(int, int64, int64, *os.File) error { return nil }, openRead)
			if err != nil {
				t.Fatal(err)
			}
			if old2 != new1 {
				t.Fatalf("the second rewrite logs the file it started from as %q; the first logged its new version as %q: the chain is broken", old2, new1)
			}
			for _, c := range []struct{ content, sum string }{{v0, old1}, {v1, new1}, {v2, new2}} {
				h, err := fixity.HashReader(strings.NewReader(c.content), fixity.Like(c.sum)...)
				if err != nil {
					t.Fatal(err)
				}
				if !h.Is(int64(len(c.content)), c.sum) {
					t.Fatalf("logged %q for %q; a fresh read gives %q", c.sum, c.content, h.Like(c.sum))
				}
			}
		})
	}
}
