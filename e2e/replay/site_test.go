package replay

import (
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The two-date site: a small web site under two hosts, captured twice, a
// month apart, one WARC file per capture date. Both crawls saw the same
// bytes again, under the same URL and under others, sometimes served with
// another status, Content-Type or Content-Encoding: the cases the issue
// measured, where a revisit replays with its original's HTTP head.
// Everything is made here from fixed seeds; no file is checked in.

const (
	siteWWW    = "http://www.example.org"
	siteStatic = "http://static.example.net"
)

// siteDay is one crawl of the site: its WARC file and its start time.
type siteDay struct {
	file  string
	start time.Time
}

var siteDays = []siteDay{
	{"site-20240301.warc.gz", time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)},
	{"site-20240401.warc.gz", time.Date(2024, 4, 1, 10, 0, 0, 0, time.UTC)},
}

// siteCapture is one response of a crawl.
type siteCapture struct {
	day      int
	url      string
	status   int
	header   []string // HTTP header lines but Content-Length
	body     []byte   // the entity body as sent (gzip bytes when encoded)
	why      string   // what the capture is there to show
	revisits bool     // today's toolchain makes it a revisit
}

// siteContent are the bodies the crawls saw; several appear more than once.
type siteContent struct {
	index, style1, style2, report, status, notes []byte
	logo, banner                                 []byte // PNG
	photo                                        []byte // JPEG
	archive, lib                                 []byte // gzip streams
}

func makeSiteContent() siteContent {
	r := rand.New(rand.NewPCG(2024, 4))
	var c siteContent
	c.index = []byte(`<!doctype html>
<html><head><meta charset="utf-8"><title>Example site</title>
<link rel="stylesheet" href="/style.css">
</head><body>
<h1>Example site</h1>
<img src="` + siteStatic + `/logo.png" width="64" height="64" alt="logo">
<img src="` + siteStatic + `/photo.jpg" width="64" height="64" alt="photo">
<p id="marker">` + words(r, 300) + `</p>
</body></html>
`)
	c.style1 = []byte("/* first crawl */\nbody { color: #112233; }\n" + cssRules(r, 60))
	c.style2 = []byte("/* second crawl */\nbody { color: #445566; }\n" + cssRules(r, 60))
	c.report = []byte("<!doctype html><html><body><h1>Report</h1><p>" + words(r, 400) + "</p></body></html>\n")
	c.status = []byte("<!doctype html><html><body><h1>Status</h1><p>" + words(r, 400) + "</p></body></html>\n")
	c.notes = []byte(`{"notes": "` + words(r, 400) + `"}` + "\n")
	c.logo = pngImage(r, 48)
	c.banner = pngImage(r, 40)
	c.photo = jpegImage(r, 64)
	c.archive = gzipBytes([]byte("var archived = true;\n" + jsLines(r, 120)))
	c.lib = gzipBytes([]byte("var lib = {};\n" + jsLines(r, 120)))
	return c
}

// siteCaptures lists both crawls in order.
func siteCaptures(c siteContent) []siteCapture {
	html := "Content-Type: text/html; charset=utf-8"
	return []siteCapture{
		// First crawl.
		{day: 0, url: siteWWW + "/", status: 200, header: []string{html}, body: c.index, why: "home page, same bytes on both dates, its style sheet changes"},
		{day: 0, url: siteWWW + "/style.css", status: 200, header: []string{"Content-Type: text/css"}, body: c.style1, why: "style sheet of the first crawl"},
		{day: 0, url: siteStatic + "/logo.png", status: 200, header: []string{"Content-Type: image/png"}, body: c.logo, why: "image on the second host"},
		{day: 0, url: siteStatic + "/photo.jpg", status: 200, header: []string{"Content-Type: image/jpeg"}, body: c.photo, why: "JPEG image"},
		{day: 0, url: siteWWW + "/api/notes.json", status: 200, header: []string{"Content-Type: application/json"}, body: c.notes, why: "JSON"},
		{day: 0, url: siteWWW + "/notes.txt", status: 200, header: []string{"Content-Type: text/plain"}, body: c.notes, revisits: true, why: "same bytes as text/plain, same file: becomes application/json"},
		{day: 0, url: siteWWW + "/report.html", status: 200, header: []string{html}, body: c.report, why: "page"},
		{day: 0, url: siteWWW + "/download/archive.gz", status: 200, header: []string{"Content-Type: application/gzip"}, body: c.archive, why: "a gzip file served as it is"},
		// Second crawl.
		{day: 1, url: siteWWW + "/", status: 200, header: []string{html}, body: c.index, revisits: true, why: "home page again: same URL, other file"},
		{day: 1, url: siteWWW + "/style.css", status: 200, header: []string{"Content-Type: text/css"}, body: c.style2, why: "changed style sheet"},
		{day: 1, url: siteStatic + "/logo.png", status: 200, header: []string{"Content-Type: image/png"}, body: c.logo, revisits: true, why: "same image, same URL, other file"},
		{day: 1, url: siteWWW + "/img/logo.png", status: 200, header: []string{"Content-Type: image/png"}, body: c.logo, revisits: true, why: "same image under the other host"},
		{day: 1, url: siteStatic + "/thumb.png", status: 200, header: []string{"Content-Type: image/png"}, body: c.photo, revisits: true, why: "the JPEG's bytes labelled image/png: gets image/jpeg"},
		{day: 1, url: siteWWW + "/report-old.html", status: 203, header: []string{html}, body: c.report, revisits: true, why: "same page with status 203: becomes 200"},
		{day: 1, url: siteWWW + "/app.js", status: 200, header: []string{"Content-Type: text/javascript", "Content-Encoding: gzip"}, body: c.archive, revisits: true, why: "the gzip file's bytes as Content-Encoding: gzip: served raw"},
		{day: 1, url: siteStatic + "/banner.png", status: 200, header: []string{"Content-Type: image/png"}, body: c.banner, why: "PNG"},
		{day: 1, url: siteStatic + "/banner.gif", status: 200, header: []string{"Content-Type: image/gif"}, body: c.banner, revisits: true, why: "the PNG's bytes labelled image/gif, same file"},
		{day: 1, url: siteWWW + "/status.html", status: 200, header: []string{html}, body: c.status, why: "page"},
		{day: 1, url: siteWWW + "/status-copy.html", status: 203, header: []string{html}, body: c.status, revisits: true, why: "same page with status 203, same file"},
		{day: 1, url: siteWWW + "/lib.js.gz", status: 200, header: []string{"Content-Type: application/gzip"}, body: c.lib, why: "a gzip file"},
		{day: 1, url: siteWWW + "/lib.js", status: 200, header: []string{"Content-Type: text/javascript", "Content-Encoding: gzip"}, body: c.lib, revisits: true, why: "its bytes as Content-Encoding: gzip, same file"},
	}
}

// writeSite writes the two WARC files of the site into dir and returns the
// captures with their dates.
func writeSite(t *testing.T, dir string) []siteCapture {
	t.Helper()
	caps := siteCaptures(makeSiteContent())
	files := make([]bytes.Buffer, len(siteDays))
	seq := make([]int, len(siteDays))
	for _, c := range caps {
		d := siteDays[c.day]
		date := d.start.Add(time.Duration(seq[c.day]) * time.Second)
		seq[c.day]++
		writeSiteRecord(&files[c.day], c, date)
	}
	for i, d := range siteDays {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d.file), files[i].Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return caps
}

// writeSiteRecord appends the capture as a WARC/1.1 response record in a
// gzip member of its own, with payload and block digests.
func writeSiteRecord(w *bytes.Buffer, c siteCapture, date time.Time) {
	var head strings.Builder
	fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", c.status, statusText(c.status))
	for _, h := range c.header {
		head.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", len(c.body))
	block := append([]byte(head.String()), c.body...)
	id := sha1.Sum([]byte(c.url + date.Format(time.RFC3339)))
	var rec bytes.Buffer
	fmt.Fprintf(&rec, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:%x-%x-%x-%x-%x>\r\n", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
	fmt.Fprintf(&rec, "WARC-Date: %s\r\nWARC-Target-URI: %s\r\n", date.Format(time.RFC3339), c.url)
	fmt.Fprintf(&rec, "Content-Type: application/http; msgtype=response\r\n")
	fmt.Fprintf(&rec, "WARC-Payload-Digest: sha1:%s\r\nWARC-Block-Digest: sha1:%s\r\n", b32sha1(c.body), b32sha1(block))
	fmt.Fprintf(&rec, "Content-Length: %d\r\n\r\n", len(block))
	rec.Write(block)
	rec.WriteString("\r\n\r\n")
	zw := gzip.NewWriter(w)
	zw.Write(rec.Bytes())
	zw.Close()
}

func statusText(code int) string {
	if code == 203 {
		return "Non-Authoritative Information"
	}
	return "OK"
}

func b32sha1(b []byte) string {
	s := sha1.Sum(b)
	return base32.StdEncoding.EncodeToString(s[:])
}

var lorem = strings.Fields("archive web capture crawl replay page image style record revisit original payload digest header status type encoding host date library national collection")

func words(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = lorem[r.IntN(len(lorem))]
	}
	return strings.Join(w, " ")
}

func cssRules(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, ".c%d { margin: %dpx; color: #%06x; }\n", i, r.IntN(40), r.IntN(1<<24))
	}
	return b.String()
}

func jsLines(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "var v%d = %d; // %s\n", i, r.IntN(1e6), words(r, 4))
	}
	return b.String()
}

func gzipBytes(b []byte) []byte {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

func noiseImage(r *rand.Rand, size int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			img.Set(x, y, color.RGBA{uint8(r.IntN(256)), uint8(x * 4), uint8(y * 4), 255})
		}
	}
	return img
}

func pngImage(r *rand.Rand, size int) []byte {
	var b bytes.Buffer
	png.Encode(&b, noiseImage(r, size))
	return b.Bytes()
}

func jpegImage(r *rand.Rand, size int) []byte {
	var b bytes.Buffer
	jpeg.Encode(&b, noiseImage(r, size), &jpeg.Options{Quality: 90})
	return b.Bytes()
}
