package verify_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"warcdedup/convert"
	"warcdedup/verify"
)

const httpBody = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"

// testARC is a filedesc, a dns: record, two HTTP records and a record
// without HTTP headers.
func testARC() string {
	desc := "1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
	dns := "20240102030405\nexample.com.\t300\tIN\tA\t93.184.216.34\n"
	other := strings.Replace(httpBody, "hello", "world", 1)
	return fmt.Sprintf("filedesc://test.arc 0.0.0.0 20240102030405 text/plain %d\n%s\n", len(desc), desc) +
		fmt.Sprintf("dns:example.com 10.0.0.1 20240102030405 text/dns %d\n%s\n", len(dns), dns) +
		fmt.Sprintf("http://example.com/a 93.184.216.34 20240102030406 text/html %d\n%s\n", len(httpBody), httpBody) +
		fmt.Sprintf("http://example.com/b 93.184.216.34 20240102030407 text/html %d\n%s\n", len(other), other) +
		"http://example.com/raw 93.184.216.34 20240102030408 no-type 3\nxyz\n"
}

// convertPlain converts arc to a plain WARC, reproducibly.
func convertPlain(t *testing.T, arc string, drop bool) string {
	t.Helper()
	n := 0
	opt := convert.Options{
		Plain: true, DropTruncated: drop,
		Now:   func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		NewID: func() string { n++; return fmt.Sprintf("<urn:uuid:00000000-0000-4000-8000-%012d>", n) },
	}
	var out bytes.Buffer
	if _, err := convert.Convert(strings.NewReader(arc), "test.arc", "test.warc", &out, opt); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// records splits a plain WARC written by convert into its records, each
// starting with its version line and WARC-Type (convert writes it first).
func records(warc string) []string {
	const start = "WARC/1.0\r\nWARC-Type: "
	var out []string
	for len(warc) > 0 {
		next := strings.Index(warc[1:], start)
		if next < 0 {
			return append(out, warc)
		}
		out = append(out, warc[:next+1])
		warc = warc[next+1:]
	}
	return out
}

func gz(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

// gzEach compresses each record as a member of its own.
func gzEach(recs []string) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(gz(r))
	}
	return b.String()
}

func check(t *testing.T, arc, warc string) (verify.ConversionStats, []string, error) {
	var violations []string
	st, err := verify.Conversion(
		verify.File{Name: "test.arc", R: strings.NewReader(arc), Size: int64(len(arc))},
		verify.File{Name: "test.warc", R: strings.NewReader(warc), Size: int64(len(warc))},
		func(v string) { violations = append(violations, v) })
	return st, violations, err
}

// otherDigest gives the first field named in warc the SHA-1 of nothing.
func otherDigest(warc, field string) string {
	i := strings.Index(warc, field+": sha1:") + len(field+": sha1:")
	return warc[:i] + "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ" + warc[i+32:]
}

// dropField removes the first field named from warc.
func dropField(warc, field string) string {
	i := strings.Index(warc, field+": ")
	return warc[:i] + warc[i+strings.Index(warc[i:], "\r\n")+2:]
}

// TestConversionAccepts: a complete conversion passes, however the ARC
// was compressed.
func TestConversionAccepts(t *testing.T) {
	arc := testARC()
	warc := convertPlain(t, arc, false)
	recs := records(warc)
	if len(recs) != 6 {
		t.Fatalf("split the WARC into %d records", len(recs))
	}
	for name, in := range map[string]string{"plain ARC": arc, "whole-file gzip ARC": gz(arc)} {
		for wname, out := range map[string]string{"plain WARC": warc, "one member per record": gzEach(recs)} {
			st, violations, err := check(t, in, out)
			if err != nil || len(violations) > 0 || st.ARCRecords != 5 || st.WARCRecords != 6 || st.Matched != 5 || st.ListedARC != 2 || st.ListedWARC != 2 {
				t.Errorf("%s, %s: %v %+v\n%s", name, wname, err, st, strings.Join(violations, "\n"))
			}
		}
	}
}

// TestConversionFailures: every way a WARC can lack what the ARC holds is
// a violation, each named.
func TestConversionFailures(t *testing.T) {
	arc := testARC()
	warc := convertPlain(t, arc, false)
	recs := records(warc)
	join := func(rs ...string) string { return strings.Join(rs, "") }
	cut := arc[:strings.LastIndex(arc, "xyz")+1] // the last record truncated
	tests := []struct {
		name, arc, warc string
		say             string // in some violation
	}{
		{"last record missing", arc, join(recs[:5]...), "is missing from the WARC"},
		{"a middle record missing", arc, join(recs[0], recs[1], recs[2], recs[4], recs[5]), "differs"},
		{"only warcinfo and metadata (a whole-file gzip ARC converted before the stream reader)", gz(arc), join(recs[:2]...), "is missing from the WARC"},
		{"empty WARC", arc, "", "is missing from the WARC"},
		{"an extra record", arc, join(append(recs, recs[5])...), "has no counterpart in the ARC"},
		{"a block byte changed", arc, strings.Replace(warc, "world", "w0rld", 1), "differs"},
		{"a URI changed", arc, strings.Replace(warc, "WARC-Target-URI: http://example.com/b", "WARC-Target-URI: http://example.com/c", 1), "URI"},
		{"a date changed", arc, strings.Replace(warc, "WARC-Date: 2024-01-02T03:04:07Z", "WARC-Date: 2024-01-02T03:04:09Z", 1), "date"},
		{"a type changed", arc, strings.Replace(warc, "WARC-Type: response", "WARC-Type: resource", 1), "type"},
		{"no warcinfo first", arc, join(recs[1:]...), "not warcinfo"},
		{"WARC compressed as one member", arc, gz(warc), "damaged"},
		{"WARC record damaged", arc, strings.Replace(warc, "Content-Length: 3\r\n", "Content-Length: 2\r\n", 1), "damaged"},
		{"ARC has bytes no record holds", strings.Replace(arc, "http://example.com/b", "junk\nhttp://example.com/b", 1), warc, "not in the WARC"},
		{"ARC record that does not parse", strings.Replace(arc, "http://example.com/raw 93.184.216.34 20240102030408 no-type 3", "not a record line", 1), convertPlain(t, arc, false), "not in the WARC"},
		{"truncated record left out", cut, convertPlain(t, cut, true), "is missing from the WARC"},
		{"truncated record not marked", cut, strings.Replace(convertPlain(t, cut, false), "WARC-Truncated: length\r\n", "", 1), "no WARC-Truncated"},
		{"an IP address changed", arc, strings.Replace(warc, "WARC-IP-Address: 93.184.216.34", "WARC-IP-Address: 10.9.9.9", 1), "WARC-IP-Address"},
		{"an IP address dropped", arc, strings.Replace(warc, "WARC-IP-Address: 10.0.0.1\r\n", "", 1), "WARC-IP-Address"},
		{"a response's Content-Type changed", arc, strings.Replace(warc, "Content-Type: application/http; msgtype=response", "Content-Type: text/html", 1), "Content-Type"},
		{"a dns: record's Content-Type changed", arc, strings.Replace(warc, "Content-Type: text/dns", "Content-Type: text/plain", 1), "Content-Type"},
		{"a resource's Content-Type changed", arc, strings.Replace(warc, "Content-Type: application/octet-stream", "Content-Type: text/html", 1), "Content-Type"},
		{"the metadata's Content-Type dropped", arc, strings.Replace(warc, "WARC-Concurrent-To: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\nContent-Type: text/plain\r\n", "WARC-Concurrent-To: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n", 1), "Content-Type"},
		{"a payload digest changed", arc, otherDigest(warc, "WARC-Payload-Digest"), "WARC-Payload-Digest"},
		{"a block digest changed", arc, otherDigest(warc, "WARC-Block-Digest"), "WARC-Block-Digest"},
		{"a payload digest dropped", arc, dropField(warc, "WARC-Payload-Digest"), "WARC-Payload-Digest"},
		{"a block digest dropped", arc, dropField(warc, "WARC-Block-Digest"), "WARC-Block-Digest"},
		{"an undated ARC record given a date", strings.Replace(arc, "20240102030408 no-type", "- no-type", 1), warc, "has no date (\"-\"): no WARC record can hold it"},
		{"whole record marked truncated", arc, strings.Replace(warc, "Content-Length: 3\r\n", "WARC-Truncated: length\r\nContent-Length: 3\r\n", 1), "WARC-Truncated, but"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.warc == warc && tt.arc == arc {
				t.Fatal("the case changes nothing")
			}
			st, violations, err := check(t, tt.arc, tt.warc)
			if err != nil {
				t.Fatal(err)
			}
			if st.Violations == 0 || int64(len(violations)) != st.Violations {
				t.Fatalf("%d violations %v, want some", st.Violations, violations)
			}
			t.Log(strings.Join(violations, "\n"))
			if !strings.Contains(strings.Join(violations, "\n"), tt.say) {
				t.Errorf("no violation says %q:\n%s", tt.say, strings.Join(violations, "\n"))
			}
		})
	}
	t.Run("truncated record kept and marked passes", func(t *testing.T) {
		st, violations, err := check(t, cut, convertPlain(t, cut, false))
		if err != nil || len(violations) > 0 || st.Truncated != 1 || st.Matched != 5 {
			t.Errorf("%v %+v %v", err, st, violations)
		}
	})
}
