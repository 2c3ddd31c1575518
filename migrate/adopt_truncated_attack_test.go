package migrate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/convert"
)

// TestAdoptTruncatedNamesWhy proves that an ARC with a truncated record,
// found beside its conversion (arc2warc -o into the collection), is left
// with a reason that says why: the proof refused it with "0 problems: "
// and nothing after, since a truncation is no violation of the mapping.
func TestAdoptTruncatedNamesWhy(t *testing.T) {
	const filedesc = "1 0 Alexa Internet\nURL IP-address Archive-date Content-type Archive-length\n"
	const http = "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\nhello, cut short"
	arc := fmt.Sprintf("filedesc://cut.arc 0.0.0.0 20050101000000 text/plain %d\n%s\n", len(filedesc), filedesc) +
		fmt.Sprintf("http://example.com/ 1.2.3.4 20050101000000 text/html %d\n%s", len(http)+100, http)
	var warc bytes.Buffer
	st, err := convert.Convert(strings.NewReader(arc), "cut.arc", "cut.warc.gz", &warc, convert.Options{})
	if err != nil || st.Truncated != 1 {
		t.Fatalf("convert: %v, %+v: want one truncated record", err, st)
	}
	dir := t.TempDir()
	coll := filepath.Join(dir, "coll")
	if err := os.MkdirAll(coll, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(coll, "cut.arc"), []byte(arc))
	write(t, filepath.Join(coll, "cut.warc.gz"), warc.Bytes())
	c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work")}}
	res, err := c.Run(context.Background(), coll, nil)
	if err != nil || len(res.Files) != 1 {
		t.Fatalf("run: %v, %+v", err, res)
	}
	o := res.Files[0]
	if !o.Status.Left() || strings.Contains(o.Reason, "0 problems") || !strings.Contains(o.Reason, "truncated") {
		t.Errorf("%s: %s: %q, want it left naming its truncated record", o.ARC, o.Status, o.Reason)
	}
}
