package convert

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/internal/corpustest"
	"warcdedup/verify"
)

// gzipMembers compresses each part of s, cut at the offsets given, as a
// gzip member of its own; no cuts gives one member for the whole file.
func gzipMembers(t testing.TB, s string, cuts ...int) []byte {
	t.Helper()
	var buf bytes.Buffer
	from := 0
	for _, c := range append(cuts, len(s)) {
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(s[from:c]))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		from = c
	}
	return buf.Bytes()
}

// recordStarts returns the offsets of the ARC record lines of arcV1().
func recordStarts(arc string) []int {
	var starts []int
	for _, p := range []string{"filedesc:", "dns:", "http://example.com/a", "http://example.com/raw"} {
		starts = append(starts, strings.Index(arc, p))
	}
	return starts
}

// checkConversion runs verify.Conversion over an ARC and the WARC written
// for it and fails the test on any violation.
func checkConversion(t *testing.T, arc, warc []byte) verify.ConversionStats {
	t.Helper()
	var violations []string
	st, err := verify.Conversion(
		verify.File{Name: "test.arc", R: bytes.NewReader(arc), Size: int64(len(arc))},
		verify.File{Name: "test.warc.gz", R: bytes.NewReader(warc), Size: int64(len(warc))},
		func(v string) { violations = append(violations, v) })
	if err != nil || len(violations) > 0 {
		t.Errorf("check: %v\n%s", err, strings.Join(violations, "\n"))
	}
	return st
}

// TestConvertEveryGzipForm: an ARC converts record for record however it
// is compressed; records need no gzip member of their own. (Before the
// stream reader, a whole-file gzip ARC gave the warcinfo and the filedesc
// only, reported as success.)
func TestConvertEveryGzipForm(t *testing.T) {
	arc := arcV1()
	s := recordStarts(arc)
	forms := []struct {
		name string
		data []byte
	}{
		{"plain", []byte(arc)},
		{"one member per record", gzipMembers(t, arc, s[1], s[2], s[3])},
		{"whole file in one member", gzipMembers(t, arc)},
		{"members of several records", gzipMembers(t, arc, s[2])},
		{"records cut across members", gzipMembers(t, arc, s[1]+5, s[3]-2)},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			var damage []error
			opt := fixed()
			opt.Plain = false
			opt.Damage = func(err error) { damage = append(damage, err) }
			var out bytes.Buffer
			st, err := Convert(bytes.NewReader(f.data), "test.arc", "test.warc.gz", &out, opt)
			if err != nil {
				t.Fatal(err)
			}
			if st.Records != 4 || st.Written != 5 || st.Damaged != 0 || len(damage) != 0 {
				t.Errorf("stats %+v, damage %v; want 4 records read, 5 written", st, damage)
			}
			if cs := checkConversion(t, f.data, out.Bytes()); cs.Matched != 4 || cs.ListedARC != 1 || cs.ListedWARC != 1 {
				t.Errorf("check: %+v", cs)
			}
		})
	}
}

// TestSkippedBytesAreDamage: every stretch of bytes the converter skips is
// counted as damage, once, whether it follows a whole record or starts no
// record. (Before, bytes after a whole record were printed but counted
// nowhere: "damaged: 0" and exit status 0.)
func TestSkippedBytesAreDamage(t *testing.T) {
	arc := arcV1()
	s := recordStarts(arc)
	cases := []struct {
		name    string
		arc     string
		damaged int64
		records int64
	}{
		{"junk after a whole record", arc[:s[2]] + "junk\n" + arc[s[2]:], 1, 4},
		{"record line that does not parse", arc[:s[3]] + "not a record line\nxyz\n" + arc[s[3]:], 1, 4},
		{"junk at the end", arc + "trailing junk", 1, 4},
		{"length too long swallows the next record line", strings.Replace(arc, "text/dns 51", "text/dns 60", 1), 1, 3},
	}
	for _, tc := range cases {
		for _, gz := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/gzip=%v", tc.name, gz), func(t *testing.T) {
				if tc.arc == arc {
					t.Fatal("the case changes nothing")
				}
				data := []byte(tc.arc)
				if gz {
					data = gzipMembers(t, tc.arc)
				}
				var damage []error
				opt := fixed()
				opt.Damage = func(err error) { damage = append(damage, err) }
				var out bytes.Buffer
				st, err := Convert(bytes.NewReader(data), "test.arc", "test.warc", &out, opt)
				if err != nil {
					t.Fatal(err)
				}
				if st.Damaged != tc.damaged || int64(len(damage)) != tc.damaged || st.Records != tc.records {
					t.Errorf("stats %+v, damage reported %v; want %d damaged, %d records", st, damage, tc.damaged, tc.records)
				}
				for _, d := range damage {
					if !strings.Contains(d.Error(), "skipped") {
						t.Errorf("%v does not say what was skipped", d)
					}
				}
			})
		}
	}
}

// TestRefusesNonARC: a WARC file, or a file holding no ARC record, is
// refused with ErrNotARC naming it, and nothing is written. (Before, a
// WARC file gave "not an ARC file" only through the command, which
// skipped .warc names and reported them converted.)
func TestRefusesNonARC(t *testing.T) {
	warc := "WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: urn:x\r\nWARC-Date: 2024-01-02T03:04:05Z\r\nContent-Length: 1\r\n\r\nx\r\n\r\n"
	for name, data := range map[string][]byte{
		"WARC":          []byte(warc),
		"WARC gzip":     gzipMembers(t, warc),
		"no record":     []byte("just some text\nand more\n"),
		"empty":         nil,
		"empty gzip":    gzipMembers(t, ""),
		"gzip of junk":  gzipMembers(t, "junk junk junk"),
		"WARC then ARC": []byte(warc + arcV1()),
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Convert(bytes.NewReader(data), "in.file", "out.warc", &out, fixed())
			if !errors.Is(err, ErrNotARC) || !strings.Contains(err.Error(), "in.file") {
				t.Errorf("error %v, want ErrNotARC naming the file", err)
			}
			if out.Len() != 0 {
				t.Errorf("%d bytes written", out.Len())
			}
		})
	}
}

// TestMissingDateRefused: a record without a date ("-") is not converted:
// a WARC record must have one and none is made up (the conversion's time
// was given, which no proof could accept: arc2warc said exit 0, --check
// and run --convert-arc said it did not prove). It is damage, named by
// file and offset: the WARC holds the rest, the exit status is 1, and
// migrate leaves the ARC as it is.
func TestMissingDateRefused(t *testing.T) {
	for _, tc := range []struct {
		name, arc string
		offset    int
	}{
		{"ARC v1", strings.Replace(arcV1(), "20240102030407 no-type", "- no-type", 1), strings.Index(arcV1(), "http://example.com/raw")},
		{"ARC v2", strings.Replace(arcV2(), "20240102030406 text/html", "- text/html", 1), strings.Index(arcV2(), "http://example.com/ ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var damage []error
			opt := fixed()
			opt.Damage = func(err error) { damage = append(damage, err) }
			var out bytes.Buffer
			st, err := Convert(strings.NewReader(tc.arc), "test.arc", "test.warc", &out, opt)
			if err != nil || st.Damaged != 1 || len(damage) != 1 {
				t.Fatalf("%v: stats %+v, damage %v, want one damaged record", err, st, damage)
			}
			if msg := damage[0].Error(); !strings.Contains(msg, "test.arc") || !strings.Contains(msg, fmt.Sprint(tc.offset)) || !strings.Contains(msg, "no date") {
				t.Errorf("the damage %q does not name the file, the offset %d and the missing date", msg, tc.offset)
			}
			if strings.Count(out.String(), "2026-01-02T03:04:05Z") > 1 { // the warcinfo's is the one
				t.Errorf("a record got the conversion's date:\n%s", out.String())
			}
			vs, err := verify.Conversion(verify.File{Name: "test.arc", R: strings.NewReader(tc.arc), Size: int64(len(tc.arc))},
				verify.File{Name: "test.warc", R: bytes.NewReader(out.Bytes()), Size: int64(out.Len())}, func(string) {})
			if err != nil || vs.Violations == 0 {
				t.Errorf("the check accepts a WARC without the undated record: %+v", vs)
			}
		})
	}
}

// TestCorpusWholeFileGzip: real ARCs, compressed as one gzip member each
// (the form of aut's badexample.arc.gz, which the corpus lacks), convert
// record for record, and the check finds every record.
func TestCorpusWholeFileGzip(t *testing.T) {
	dir := "../../shared/corpus/netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive"
	files := map[string]int64{
		"bitarchive/data/batch/originals/fyensdk.arc":                                                              190,
		"distribute/arcrepository/data/originals/2-2-20060731110420-00000-sb-test-har-001.statsbiblioteket.dk.arc": 85,
	}
	for rel, records := range files {
		plain, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			corpustest.Missing(t, "shared corpus absent: %v", err)
		}
		t.Run(filepath.Base(rel), func(t *testing.T) {
			data := gzipMembers(t, string(plain))
			var out bytes.Buffer
			st, err := Convert(bytes.NewReader(data), filepath.Base(rel)+".gz", "out.warc.gz", &out, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if st.Records != records || st.Written != records+1 || st.Damaged != 0 {
				t.Errorf("stats %+v, want %d records", st, records)
			}
			if cs := checkConversion(t, data, out.Bytes()); cs.Matched != records {
				t.Errorf("check: %+v", cs)
			}
		})
	}
}
