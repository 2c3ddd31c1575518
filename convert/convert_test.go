package convert

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/corpustest"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/verify"
	"warcdedup/warcsum"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixed makes conversions reproducible: a fixed clock and numbered IDs.
func fixed() Options {
	n := 0
	return Options{
		Plain:    true,
		Software: "warcdedup arc2warc test",
		Now:      func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		NewID: func() string {
			n++
			return fmt.Sprintf("<urn:uuid:00000000-0000-4000-8000-%012d>", n)
		},
	}
}

const httpBody = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"

// arcV1 and arcV2 are small ARC files with a filedesc, an HTTP record with a
// space in its URL, a dns: record and a record without HTTP headers.
func arcV1() string {
	desc := "1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
	dns := "20240102030405\nexample.com.\t300\tIN\tA\t93.184.216.34\n"
	return fmt.Sprintf("filedesc://test.arc 0.0.0.0 20240102030405 text/plain %d\n%s\n", len(desc), desc) +
		fmt.Sprintf("dns:example.com 10.0.0.1 20240102030405 text/dns %d\n%s\n", len(dns), dns) +
		fmt.Sprintf("http://example.com/a b.html 93.184.216.34 20240102030406 text/html %d\n%s\n", len(httpBody), httpBody) +
		"http://example.com/raw 93.184.216.34 20240102030407 no-type 3\nxyz\n"
}

func arcV2() string {
	desc := "2 0 Alexa Internet\nURL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n"
	return fmt.Sprintf("filedesc://test2.arc 0.0.0.0 20240102030405 text/plain 200 - - 0 test2.arc %d\n%s\n", len(desc), desc) +
		fmt.Sprintf("http://example.com/ 93.184.216.34 20240102030406 text/html 200 ABC - 123 test2.arc %d\n%s\n", len(httpBody), httpBody)
}

// TestGolden pins the exact WARC records written for ARC v1 and v2 input.
func TestGolden(t *testing.T) {
	tests := []struct {
		name, arc string
		version   string
	}{
		{"v1-warc1.0", arcV1(), "1.0"},
		{"v2-warc1.1", arcV2(), "1.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := fixed()
			opt.Version = tt.version
			var out bytes.Buffer
			st, err := Convert(strings.NewReader(tt.arc), "test.arc", "test.warc", &out, opt)
			if err != nil {
				t.Fatal(err)
			}
			if st.Damaged+st.Truncated != 0 {
				t.Errorf("stats %+v", st)
			}
			golden := filepath.Join("testdata", tt.name+".warc")
			if *update {
				os.WriteFile(golden, out.Bytes(), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output differs from %s:\n%s", golden, out.String())
			}
		})
	}
}

// TestMapping proves the record types, content types, IP and URI handling
// of the mapping, independently of the golden bytes.
func TestMapping(t *testing.T) {
	var out bytes.Buffer
	if _, err := Convert(strings.NewReader(arcV1()), "test.arc", "test.warc", &out, fixed()); err != nil {
		t.Fatal(err)
	}
	rr, _ := record.NewReader(&out, "test.warc")
	type want struct{ typ, uri, ctype, ip string }
	wants := []want{
		{"warcinfo", "", "application/warc-fields", ""},
		{"metadata", "filedesc://test.arc", "text/plain", ""},
		{"resource", "dns:example.com", "text/dns", "10.0.0.1"},
		{"response", "http://example.com/a%20b.html", "application/http; msgtype=response", "93.184.216.34"},
		{"resource", "http://example.com/raw", "application/octet-stream", "93.184.216.34"},
	}
	for i, w := range wants {
		rec, err := rr.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		h := rec.Header
		if rec.Type != w.typ || h.Get("WARC-Target-URI") != w.uri || h.Get("Content-Type") != w.ctype || h.Get("WARC-IP-Address") != w.ip {
			t.Errorf("record %d: %s %q %q %q, want %v", i, rec.Type, h.Get("WARC-Target-URI"), h.Get("Content-Type"), h.Get("WARC-IP-Address"), w)
		}
		if i > 0 && !h.Has("WARC-Block-Digest") {
			t.Errorf("record %d has no block digest", i)
		}
		if err := rr.Finish(); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
	}
	if _, err := rr.Next(); err != io.EOF {
		t.Errorf("more records than expected: %v", err)
	}
}

// TestTruncated proves a truncated last record keeps the bytes that exist
// with WARC-Truncated, or is left out, and is reported either way.
func TestTruncated(t *testing.T) {
	arc := arcV1()
	cut := arc[:strings.Index(arc, "hello")+2] // inside the HTTP record's body
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprint("drop=", drop), func(t *testing.T) {
			var damage []error
			opt := fixed()
			opt.DropTruncated = drop
			opt.Damage = func(err error) { damage = append(damage, err) }
			var out bytes.Buffer
			st, err := Convert(strings.NewReader(cut), "test.arc", "test.warc", &out, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(damage) != 1 || !strings.Contains(damage[0].Error(), "truncated") {
				t.Errorf("damage %v", damage)
			}
			rr, _ := record.NewReader(&out, "test.warc")
			var last *record.Record
			var block []byte
			for {
				rec, err := rr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				last = rec
				block, _ = io.ReadAll(rr)
			}
			if drop {
				if st.Dropped != 1 || last.Type != "resource" {
					t.Errorf("stats %+v, last %s", st, last.Type)
				}
				return
			}
			wantBlock := httpBody[:strings.Index(httpBody, "hello")+2]
			if st.Truncated != 1 || last.Header.Get("WARC-Truncated") != "length" || string(block) != wantBlock || last.BlockLength != int64(len(wantBlock)) {
				t.Errorf("stats %+v, last %v %q", st, last.Header, block)
			}
		})
	}
}

// TestCorpus converts every ARC of the shared corpus without a panic; each
// output reads back whole; and where warcsum finds the ARC undamaged, the
// two manifests match record for record in order.
func TestCorpus(t *testing.T) {
	dir := "../../shared/corpus"
	if _, err := os.Stat(dir); err != nil {
		corpustest.Missing(t, "shared corpus absent")
	}
	var arcs []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		n := strings.ToLower(d.Name())
		if err == nil && !d.IsDir() && (strings.HasSuffix(n, ".arc") || strings.HasSuffix(n, ".arc.gz")) {
			arcs = append(arcs, p)
		}
		return nil
	})
	if len(arcs) < 20 {
		t.Fatalf("found %d ARC files", len(arcs))
	}
	matched := 0
	for _, p := range arcs {
		data, _ := os.ReadFile(p)
		var out bytes.Buffer
		opt := Options{}
		_, err := Convert(bytes.NewReader(data), filepath.Base(p), "out.warc.gz", &out, opt)
		if err != nil {
			if !strings.Contains(err.Error(), filepath.Base(p)) {
				t.Errorf("%s: error does not name the file: %v", p, err)
			}
			continue
		}
		// The WARC reads back with no damage at all.
		arcLines, arcStats := sum(t, data, p)
		warcLines, warcStats := sum(t, out.Bytes(), p+" converted")
		if warcStats.Damaged != 0 || warcStats.FilesFailed != 0 {
			t.Errorf("%s: converted WARC has %d damaged records", p, warcStats.Damaged)
		}
		if arcStats.Damaged == 0 && arcStats.FilesFailed == 0 {
			var violations []string
			st, err := verify.Order(manifest.NewReader(strings.NewReader(arcLines), "arc"), manifest.NewReader(strings.NewReader(warcLines), "warc"),
				func(v string) { violations = append(violations, v) })
			if err != nil || st.Violations != 0 {
				t.Errorf("%s: %v %v", p, err, violations)
			}
			matched += int(st.Themselves)
		}
	}
	if matched < 100 {
		t.Errorf("only %d records compared in order; expected the corpus to give more", matched)
	}
}

func sum(t *testing.T, data []byte, name string) (string, warcsum.Stats) {
	var b bytes.Buffer
	w := manifest.NewWriter(&b)
	st, err := warcsum.NewSummer(warcsum.Options{}).SumFile(bytes.NewReader(data), name, func(l *manifest.Line) error { return w.Write(l) })
	w.Flush()
	if err != nil && !errors.Is(err, io.EOF) {
		st.FilesFailed++
	}
	return b.String(), st
}
