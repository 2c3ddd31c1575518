package cdx

import (
	"bytes"
	"io"
	"testing"
)

// FuzzReader: any input reads without panic, every line is written back
// as read, and a record line with an offset, edited, reads back with the
// edited values.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		" CDX N b a m s k r M S V g\na)/ 2014 http://a/ text/html 200 D - - 10 5 f.warc.gz\n",
		`a)/ 2014 {"url":"http://a/","mime":"text/html","status":"200","digest":"D","length":"10","offset":"5","filename":"f"}` + "\n",
		`a)/ 2014 {"url": "http://a/\u00e9", "offset": 5, "x": [1, {"y": "}"}]}` + "\n",
		"a)/ 2014 http://a/ b c text/html 200 D - - 10 5 f\n",
		"undefined  {\"length\":\"1\",\"offset\":\"2\",\"filename\":\"f\"}\n",
		"!meta {}\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), "fuzz", Options{})
		if err != nil {
			return
		}
		for {
			l, err := r.Next()
			if err == io.EOF || l == nil {
				return
			}
			if got := l.AppendTo(nil); !bytes.Equal(got, l.Raw) {
				t.Fatalf("line %q written as %q", l.Raw, got)
			}
			if err != nil || l.Kind != Record || l.Offset < 0 || bytes.ContainsAny(l.Raw, "\r") {
				continue
			}
			c := l.Clone()
			c.SetOffset(l.Offset + 1)
			c.SetMIME("warc/revisit")
			back, err := NewReader(bytes.NewReader(append(c.AppendTo(nil), '\n')), "back", Options{Format: l.Format, Layout: l.cdxLayout})
			if err != nil {
				t.Fatal(err)
			}
			b, err := back.Next()
			if err != nil {
				t.Fatalf("edited %q to %q: %v", l.Raw, c.AppendTo(nil), err)
			}
			if b.Offset != l.Offset+1 || l.spans[fMIME].present && string(b.MIME) != "warc/revisit" {
				t.Fatalf("edited %q to %q: reads back offset %d mime %q", l.Raw, c.AppendTo(nil), b.Offset, b.MIME)
			}
		}
	})
}
