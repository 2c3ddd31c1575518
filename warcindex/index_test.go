package warcindex

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/replaytest"
	"warcdedup/internal/warctest"
	"warcdedup/scripts/gen"
)

// ourLines indexes the file at p, its lines named by base name as
// warcio.js names them.
func ourLines(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	err = Index(f, filepath.Base(p), func(e *Entry) error {
		lines = append(lines, string(e.AppendCDXJ(nil)))
		return nil
	})
	return lines, err
}

// warcioIndex runs `warcio cdx-index --format cdxj` on the files and
// returns each file's lines, or nil for a file warcio.js does not read
// without complaint (an error or a warning). All files go to one run
// under unique names (node starts slowly); a run that fails is done
// again in halves.
func warcioIndex(t *testing.T, cli string, files []string) map[string][]string {
	dir := t.TempDir()
	name := map[string]string{} // unique name -> file
	args := []string{"cdx-index"}
	for i, p := range files {
		// warcio.js skips symbolic links: a link, or a copy.
		n := fmt.Sprintf("%04d-%s", i, filepath.Base(p))
		if err := os.Link(p, filepath.Join(dir, n)); err != nil {
			b, err := os.ReadFile(p)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, n), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		name[n] = p
		args = append(args, filepath.Join(dir, n))
	}
	out, ok := runWarcio(cli, append(args, "--format", "cdxj"))
	res := map[string][]string{}
	if !ok {
		if len(files) == 1 {
			t.Logf("warcio.js does not read %s", files[0])
			return res
		}
		for _, half := range [][]string{files[:len(files)/2], files[len(files)/2:]} {
			for k, v := range warcioIndex(t, cli, half) {
				res[k] = v
			}
		}
		return res
	}
	for _, p := range files {
		res[p] = []string{}
	}
	for _, l := range out {
		// Each line's file is its "filename" value: the unique name.
		i := strings.LastIndex(l, `"filename":"`)
		if i < 0 {
			t.Fatalf("warcio.js line without a filename: %s", l)
		}
		n, _, _ := strings.Cut(l[i+len(`"filename":"`):], `"`)
		p := name[n]
		l = l[:i] + `"filename":"` + filepath.Base(p) + l[i+len(`"filename":"`)+len(n):]
		res[p] = append(res[p], l)
	}
	return res
}

func runWarcio(cli string, args []string) ([]string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		return nil, false
	}
	s := strings.TrimSuffix(out.String(), "\n")
	if s == "" {
		return nil, true
	}
	return strings.Split(s, "\n"), true
}

// compareWithWarcio checks that Index gives warcio.js's lines, in its
// order, for each file it and warcio.js read; diverging lists the files
// where they are known to differ (checked to differ still). It returns
// the files compared.
func compareWithWarcio(t *testing.T, files []string, diverging map[string]string) (compared, lines int) {
	cli := replaytest.WarcioCLI(t)
	want := warcioIndex(t, cli, files)
	for _, p := range files {
		w, ok := want[p]
		if !ok {
			continue
		}
		got, err := ourLines(p)
		if err != nil {
			// warcio.js read a file our reader calls damaged: named, but
			// not a difference of the indexers.
			t.Logf("%s: %v (warcio.js read it)", p, err)
			continue
		}
		d := diffLines(got, w)
		why, known := diverging[strings.TrimPrefix(p, corpusDir+"/")]
		switch {
		case known && d == "":
			t.Errorf("%s: said to differ from warcio.js (%s), but is equal", p, why)
		case known:
			t.Logf("%s: differs from warcio.js as known: %s", p, why)
		case d != "":
			t.Errorf("%s: the index differs from warcio.js's:\n%s", p, d)
		default:
			compared++
			lines += len(w)
		}
	}
	return compared, lines
}

func diffLines(got, want []string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&b, "line %d:\n  ours:    %s\n  warcio:  %s\n", i+1, g, w)
			if n++; n == 5 {
				break
			}
		}
	}
	if len(got) != len(want) && b.Len() == 0 {
		fmt.Fprintf(&b, "%d lines, warcio.js %d\n", len(got), len(want))
	}
	return b.String()
}

// TestIndexGenerated compares Index with warcio.js on generated files of
// every WARC format, with every kind of record warcgen writes and the
// legal oddities of -quirks.
func TestIndexGenerated(t *testing.T) {
	dir := t.TempDir()
	res, err := gen.Write(dir, gen.Config{Files: 4, Records: 300, DupRate: 0.3, Seed: 5, MeanPayload: 2000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11}, NonCandidates: true, Quirks: true, Chunked: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, n := range res.Names {
		files = append(files, filepath.Join(dir, n))
	}
	compared, lines := compareWithWarcio(t, files, nil)
	if compared != len(files) {
		t.Errorf("%d of %d generated files compared", compared, len(files))
	}
	t.Logf("%d files, %d lines equal to warcio.js's", compared, lines)
}

// TestIndexRequests covers what the generated files lack: POST requests
// of each body type warcio.js turns into a query, and records without a
// URI, date or Content-Type.
func TestIndexRequests(t *testing.T) {
	dir := t.TempDir()
	resp := warctest.Response("http://example.com/api", "2024-01-02T03:04:05Z", "ok")
	req := func(uri, ctype, body string) string {
		h := "POST /api HTTP/1.1\r\nHost: example.com\r\n"
		if ctype != "" {
			h += "Content-Type: " + ctype + "\r\n"
		}
		return warctest.Record("request", uri, "2024-01-02T03:04:05Z", h+"\r\n"+body, "Content-Type: application/http; msgtype=request")
	}
	var recs []string
	for _, c := range []struct{ ctype, body string }{
		{"application/x-www-form-urlencoded", "a=1&b=%41+x&c=%E2%82%AC"},
		{"application/json", `{"b": [1, 2.50, {"c": null}], "a": true, "10": "x", "2": "y", "b2": "", "nested": {"a": "again"}}`},
		{"application/json; charset=utf-8", `[1e21, 1e-7, 1.5e-8, -0, 123456789012345678901]`},
		{"text/plain", `{"q": "search terms"}`},
		{"text/plain", "not json at all"},
		{"multipart/form-data; boundary=XyZ", "--XyZ\r\nContent-Disposition: form-data; name=\"f1\"\r\n\r\nvalue one\r\n--XyZ\r\nContent-Disposition: form-data; name=\"f2\"\r\n\r\n2\r\n--XyZ--\r\n"},
		{"application/octet-stream", "\x00\x01\x02binary\xff"},
		{"", ""},
		{"application/x-www-form-urlencoded", "bad=%E2%82"},
		{"application/x-www-form-urlencoded", strings.Repeat("long=", 1000)},
	} {
		recs = append(recs, req("http://example.com/api", c.ctype, c.body), resp)
		recs = append(recs, resp, req("http://example.com/api", c.ctype, c.body))
	}
	recs = append(recs,
		warctest.Record("resource", "", "2024-01-02T03:04:05Z", "no uri", "Content-Type: text/plain"),
		warctest.Record("metadata", "http://example.com/m", "", "no date"),
		warctest.Record("resource", "http://example.com/r", "2024-01-02T03:04:05.123456Z", "fields: x\r\n", "Content-Type: application/warc-fields"),
		warctest.Record("response", "http://example.com/odd", "2024-01-02T03:04:05Z", "HTTP/1.1 0200 Fine\r\nContent-Type: ; charset=x\r\nContent-Type: text/html\r\n\r\nbody", "Content-Type: application/http; msgtype=response"),
		warctest.Record("response", "http://example.com/nohttp", "2024-01-02T03:04:05Z", "", "Content-Type: application/http; msgtype=response"),
	)
	plain := warctest.WriteFile(t, dir, "post.warc", []byte(strings.Join(recs, "")))
	gz := warctest.WriteFile(t, dir, "post.warc.gz", warctest.Gzip(recs...))
	if compared, _ := compareWithWarcio(t, []string{plain, gz}, nil); compared != 2 {
		t.Errorf("%d of 2 files compared", compared)
	}
}

// TestIndexCorpus compares Index with warcio.js on every WARC file of
// the corpus that both read without complaint.
func TestIndexCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		corpustest.Missing(t, "no corpus: %v", err)
	}
	var files []string
	filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".warc") || strings.HasSuffix(p, ".warc.gz")) {
			files = append(files, p)
		}
		return nil
	})
	// Files our reader calls damaged are not compared, nor those
	// warcio.js does not read (left out of its run, which each would
	// fail: node starts slowly).
	var readable []string
	for _, p := range files {
		if _, err := ourLines(p); err == nil && !warcioUnreadable[strings.TrimPrefix(p, corpusDir+"/")] {
			readable = append(readable, p)
		}
	}
	compared, lines := compareWithWarcio(t, readable, warcioDiverges)
	if compared < 75 {
		t.Errorf("only %d corpus files compared", compared)
	}
	t.Logf("%d of %d corpus WARC files compared, %d lines", compared, len(files), lines)
}

// warcioDiverges are the corpus files whose index by warcio.js 2.4.11 is
// known to differ from Index's, and why: all are files whose records are
// not separated as WARC says (LF or CR CR LF line ends, blocks that are no
// HTTP message in responses, repeated header fields), where warcio.js's
// HTTP parse reads past a record's block and merges records.
var warcioDiverges = map[string]string{
	"datatogether+warc/testdata/response.warc":                                                                                                                           "a response block without a status line: warcio.js gives the record the request's offset",
	"iipc+webarchive-commons/src/test/resources/org/archive/resource/html/link-extraction-test.warc":                                                                     "a response whose block ends without CRLF CRLF: warcio.js merges it with the next",
	"netarchivesuite+jwat/jwat-warc/src/test/resources/invalid-warcfile-duplicate-fields.warc":                                                                           "repeated WARC-Type: warcio.js joins the values and indexes a warcinfo record",
	"netarchivesuite+jwat/jwat-warc/src/test/resources/valid-warcfile-upper-lower-case.warc":                                                                             "dns: responses: warcio.js parses their text as HTTP and reads into the next record",
	"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/NAS-20100909163324-00000-mette.kb.dk.warc": "dns: responses: warcio.js gives the next record their offset",
	"oduwsdl+ipwb/samples/warcs/1memento.warc":                                                                                                                           "LF line ends: warcio.js reads the whole file as one record",
	"oduwsdl+ipwb/samples/warcs/1memento_noContentType.warc":                                                                                                             "LF line ends",
	"oduwsdl+ipwb/samples/warcs/2mementos.warc":                                                                                                                          "LF line ends",
	"oduwsdl+ipwb/samples/warcs/2mementos_htmlXhtml.warc":                                                                                                                "LF line ends",
	"oduwsdl+ipwb/samples/warcs/2mementos_queryString.warc":                                                                                                              "LF line ends",
	"oduwsdl+ipwb/samples/warcs/3mementos.warc":                                                                                                                          "LF line ends",
	"oduwsdl+ipwb/samples/warcs/4mementos.warc":                                                                                                                          "LF line ends",
	"oduwsdl+ipwb/samples/warcs/5mementos.warc":                                                                                                                          "LF line ends",
	"oduwsdl+ipwb/samples/warcs/5mementosAndFroggie.warc":                                                                                                                "LF line ends",
	"oduwsdl+ipwb/samples/warcs/mkelly1.warc":                                                                                                                            "LF line ends",
	"oduwsdl+ipwb/samples/warcs/mkelly2.warc":                                                                                                                            "LF line ends",
	"oduwsdl+ipwb/samples/warcs/redirectRelative.warc":                                                                                                                   "LF line ends",
	"oduwsdl+ipwb/samples/warcs/slash.warc":                                                                                                                              "LF line ends",
	"oduwsdl+ipwb/samples/warcs/variableSizedDates.warc":                                                                                                                 "LF line ends",
	"webrecorder+pywb/sample_archive/warcs/missing-status-text.warc":                                                                                                     "CR CR LF line ends: warcio.js finds no status",
}

// warcioUnreadable are the corpus files warcio.js 2.4.11 cdx-index stops
// on or warns about (an error, a warning) while Index reads them.
var warcioUnreadable = map[string]bool{
	"netarchivesuite+jwat/jwat-common/src/test/resources/test-utf8.warc":                                                                            true,
	"netarchivesuite+jwat/jwat-warc/src/test/resources/invalid-warcfile-contenttype-recommended.warc":                                               true,
	"netarchivesuite+jwat/jwat-warc/src/test/resources/valid-warcfile-fields-continuation.warc":                                                     true,
	"netarchivesuite+jwat/jwat-warc/src/test/resources/valid-warcfile-fields-metainfo.warc":                                                         true,
	"netarchivesuite+jwat/jwat-warc/src/test/resources/valid-warcfile-fields-warcinfo.warc":                                                         true,
	"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/warcs/netarkivet-20081105135926-00000.warc": true,
	"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/warcs/netarkivet-20081105135926-00001.warc": true,
}
