package originals

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"warcdedup/manifest"
)

// countCase is a digest's kept lines (URI and class each) and duplicate
// lines (the kept URI and class each names), in table order, and the uses
// each kept line must get: the duplicates Plan sends to it.
type countCase struct {
	name  string
	lines []countLine
	want  []int
}

// countLine is a kept line (kept) or a duplicate naming uri in class.
type countLine struct {
	kept  bool
	uri   string
	class int
}

// TestCountUses proves the uses of each kept line as Plan will choose it:
// a duplicate counts for the first kept line of its class, URI and date
// (whichever comes first in the table), none for one of another class or
// naming nothing kept, and a digest whose duplicates name more originals
// than are counted gets no counts (0: not known, kept until evicted), not
// wrong ones.
func TestCountUses(t *testing.T) {
	k := func(uri string, class int) countLine { return countLine{true, uri, class} }
	d := func(uri string, class int) countLine { return countLine{false, uri, class} }
	many := []countLine{k("a", 1)}
	for i := range maxNamed {
		many = append(many, d(fmt.Sprintf("x%d", i), 1))
	}
	many = append(many, d("a", 1), d("a", 1))
	tests := []countCase{
		{"duplicates before their original", []countLine{d("a", 1), d("a", 1), k("a", 1)}, []int{2}},
		{"two originals, two classes", []countLine{k("a", 1), d("a", 1), k("b", 2), d("b", 2), d("b", 2), d("a", 1)}, []int{2, 2}},
		{"a duplicate of another class names the URI", []countLine{k("a", 1), d("a", 2)}, []int{0}},
		{"the same capture kept twice: the first takes all", []countLine{k("a", 1), d("a", 1), k("a", 1), d("a", 1)}, []int{2, 0}},
		{"duplicates naming nothing kept", []countLine{d("z", 1), k("a", 1), d("a", 1)}, []int{1}},
		{"no duplicates", []countLine{k("a", 1), k("b", 2)}, []int{0, 0}},
		{"more originals named than counted: not known", many, []int{0}},
		{"just as many as counted", append(slices.Clone(many[:maxNamed]), d("a", 1)), []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			for i, c := range tt.lines {
				l := manifest.Line{File: "f.warc", Offset: int64(i) * 100, Length: 90, URI: fmt.Sprintf("http://h/%d", i), Date: "20240101000000",
					Digest: "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", Class: c.class, Copy: 2, RefURI: "http://h/" + c.uri, RefDate: "20240101000000", Fields: 10}
				if c.kept {
					l.URI, l.Copy, l.RefURI, l.RefDate = "http://h/"+c.uri, 1, "-", "-"
				}
				b.Write(l.Append(nil))
			}
			tab, err := manifest.NewTable(bytes.NewReader(b.Bytes()), int64(b.Len()), "t")
			if err != nil {
				t.Fatal(err)
			}
			o, err := New(nil, tab)
			if err != nil {
				t.Fatal(err)
			}
			di, err := o.lookup("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(di.uses, tt.want) {
				t.Errorf("uses %v, want %v", di.uses, tt.want)
			}
		})
	}
}
