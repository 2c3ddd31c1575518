package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"warcdedup/internal/corpustest"
)

// corpusDir holds real archive files from public projects' test suites
// (see its MANIFEST.md); it is absent on a user's machine.
const corpusDir = "../../shared/corpus"

// corpusResult is what reading one corpus file gave.
type corpusResult struct {
	whole  []Record // records read whole, in file order
	damage []error  // *Error reports, in order
	end    error    // what ended the file: io.EOF, or an error that is no damage
	calls  int      // calls of Next
	panic  any
}

const maxNextCalls = 100000

// readCorpusFile reads every record of data the way warcsum does (Next,
// ReadHTTPHead, WriteTo, Finish).
func readCorpusFile(name string, data []byte) (res corpusResult) {
	defer func() {
		if p := recover(); p != nil {
			res.panic = p
		}
	}()
	rr, err := NewReader(bytes.NewReader(data), name)
	if err != nil {
		res.end = err
		return res
	}
	for res.calls < maxNextCalls {
		res.calls++
		r, err := rr.Next()
		var e *Error
		switch {
		case err == io.EOF:
			res.end = io.EOF
			return res
		case errors.As(err, &e):
			res.damage = append(res.damage, err)
			continue
		case err != nil:
			res.end = err
			return res
		}
		_, err = rr.ReadHTTPHead()
		if err == nil {
			_, err = rr.WriteTo(io.Discard)
		}
		if errors.As(err, &e) && !errors.Is(err, ErrHeaderTooLong) {
			res.damage = append(res.damage, err)
			continue
		} else if err != nil && !errors.As(err, &e) {
			res.end = err
			return res
		}
		if err := rr.Finish(); err != nil {
			if !errors.As(err, &e) {
				res.end = err
				return res
			}
			res.damage = append(res.damage, err)
			continue
		}
		res.whole = append(res.whole, *r)
	}
	return res
}

// readWithDeadline fails the test if reading a file does not end in time,
// which would be a loop that never ends.
func readWithDeadline(t *testing.T, name string, data []byte) corpusResult {
	t.Helper()
	done := make(chan corpusResult, 1)
	go func() { done <- readCorpusFile(name, data) }()
	select {
	case res := <-done:
		if res.panic != nil {
			t.Fatalf("panic: %v", res.panic)
		}
		if res.calls >= maxNextCalls {
			t.Fatalf("Next called %d times without reaching the end", res.calls)
		}
		return res
	case <-time.After(10 * time.Second):
		t.Fatalf("reading did not finish within 10s")
	}
	return corpusResult{}
}

// checkIsolated re-reads the bytes a record says it occupies as a file of
// their own: they must hold exactly that record, whole.
func checkIsolated(t *testing.T, data []byte, want Record) {
	t.Helper()
	if want.Offset < 0 || want.Length <= 0 || want.Offset+want.Length > int64(len(data)) {
		t.Errorf("record %q at %d+%d lies outside the %d-byte file", want.URI, want.Offset, want.Length, len(data))
		return
	}
	piece := data[want.Offset : want.Offset+want.Length]
	rr, err := NewReader(bytes.NewReader(piece), "piece")
	if err != nil {
		t.Fatal(err)
	}
	got, err := rr.Next()
	if err != nil {
		t.Errorf("record %q at %d+%d read alone: %v", want.URI, want.Offset, want.Length, err)
		return
	}
	g := *got
	if err := rr.Finish(); err != nil {
		t.Errorf("record %q at %d+%d read alone: %v", want.URI, want.Offset, want.Length, err)
		return
	}
	g.Length = got.Length
	w := want
	w.Offset = 0
	if !reflect.DeepEqual(g, w) {
		t.Errorf("record at %d+%d read alone differs:\n got %+v\nwant %+v", want.Offset, want.Length, g, w)
	}
	if r, err := rr.Next(); err != io.EOF {
		t.Errorf("record %q at %d+%d read alone is followed by %v %v", want.URI, want.Offset, want.Length, r, err)
	}
}

// corpusFiles lists every file of the corpus but its tools and manifest.
func corpusFiles(t testing.TB) []string {
	if _, err := os.Stat(corpusDir); err != nil {
		corpustest.Missing(t, "no corpus: %v", err)
	}
	var paths []string
	err := filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "_tools" {
			return filepath.SkipDir
		}
		if !d.IsDir() && p != filepath.Join(corpusDir, "MANIFEST.md") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skip("empty corpus")
	}
	return paths
}

func TestCorpus(t *testing.T) {
	for _, p := range corpusFiles(t) {
		rel, _ := filepath.Rel(corpusDir, p)
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			res := readWithDeadline(t, rel, data)
			if res.end != io.EOF {
				t.Fatalf("reading ended with %v", res.end)
			}
			last := int64(-1)
			for _, r := range res.whole {
				if r.Offset <= last {
					t.Errorf("record at %d follows one at %d", r.Offset, last)
				}
				last = r.Offset + r.Length - 1
				checkIsolated(t, data, r)
			}
		})
	}
}

// TestCorpusExpected checks files whose contents MANIFEST.md describes, by
// the number of records read whole and the damage reported, in order.
func TestCorpusExpected(t *testing.T) {
	corpusFiles(t)
	tests := []struct {
		path   string
		whole  int
		damage []error
	}{
		// warcinfo 1, request 171, response 48, revisit 123.
		{"webrecorder+pywb/sample_archive/warcs/iana.warc.gz", 343, nil},
		// All records in one gzip member.
		{"webrecorder+warcio/test/data/example-bad-non-chunked.warc.gz", 0, []error{ErrMultiRecord}},
		{"webrecorder+pywb/sample_archive/warcs/example-bad.warc.gz.bad", 0, []error{ErrMultiRecord}},
		{"datatogether+warc/testdata/test.warc.gz", 0, []error{ErrMultiRecord}},
		{"internetarchive+gowarc/testdata/warcs/good.warc.gz.open", 0, []error{ErrMultiRecord}},
		// 30 requests, 30 responses, each ended by a single CRLF.
		{"N0taN3rd+node-warc/test/files/books.toscrape.warc", 60, nil},
		{"N0taN3rd+node-warc/test/files/parseMe.warc", 30, nil},
		// filedesc and one record declaring 1591 bytes, 1579 present.
		{"webrecorder+warcio/test/data/example-space-in-url.arc", 1, []error{ErrTruncated}},
		// The 5th record's Content-Length stops short: 6 stray bytes.
		{"webrecorder+pywb/sample_archive/warcs/example.warc", 5, []error{ErrRecordEnd}},
		{"webrecorder+warcio/test/data/example-trunc.warc", 3, []error{ErrRecordEnd}},
		{"webrecorder+warcio.js/test/data/example-bad-length.warc", 5, []error{ErrRecordEnd}},
		// Record shorter than Content-Length, gzip member without trailer.
		{"chatnoir-eu+chatnoir-resiliparse/tests/data/clipped.warc.gz", 0, []error{ErrTruncated}},
		{"oduwsdl+ipwb/samples/warcs/redirect.warc", 1, []error{ErrTruncated}},
		{"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/arcrepository/bitpreservation/data/originals/bitarchive1/filedir/integrity11.ARC", 1, []error{ErrTruncated}},
		// Valid record, then 55 bytes of garbage.
		{"netarchivesuite+jwat/jwat-warc/src/test/resources/invalid-warcfile-record-then-garbage.warc", 0, []error{ErrRecordEnd}},
		// Content-Length "very lengthy".
		{"netarchivesuite+jwat/jwat-warc/src/test/resources/invalid-warcfile-fields-invalidformat.warc", 0, []error{ErrBadHeader}},
		// Four header-only records without Content-Length.
		{"netarchivesuite+jwat/jwat-warc/src/test/resources/invalid-warcfile-lonely-request-response-resource-conversion.warc", 0,
			[]error{ErrBadHeader, ErrBadHeader, ErrBadHeader, ErrBadHeader}},
		// Lower-case "warc/1.0" version lines and field names.
		{"netarchivesuite+jwat/jwat-warc/src/test/resources/valid-warcfile-upper-lower-case.warc", 5, nil},
		{"netarchivesuite+jwat/jwat-warc/src/test/resources/valid-warcfile-fields-continuation.warc", 1, nil},
		{"chfoo+warcat/example/c1_warcinfo.warc", 1, nil},
		{"netarchivesuite+jwat/jwat-common/src/test/resources/test-utf8.warc", 1, nil},
		{"chatnoir-eu+chatnoir-resiliparse/tests/data/block-sized-records.warc", 3, nil},
		{"chatnoir-eu+chatnoir-resiliparse/tests/data/block-sized-records.warc.gz", 3, nil},
		{"chatnoir-eu+chatnoir-resiliparse/tests/data/clueweb-quirk.warc.gz", 30, nil},
		{"oduwsdl+ipwb/samples/warcs/sample-1.warc.gz", 231, nil},
		{"webrecorder+pywb/sample_archive/warcs/missing-status-text.warc", 1, nil},
		{"oduwsdl+ipwb/samples/warcs/variableSizedDates.warc", 5, nil},
		{"internetarchive+gowarc/testdata/warcs/empty.warc.gz.open", 0, nil},
		// ARC: filedesc plus records.
		{"netarchivesuite+jwat/jwat-arc/src/test/resources/1-1-20110922131213-00000-svc-VirtualBox.arc", 102, nil},
		{"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/bitarchive/data/batch/originals/fyensdk.arc", 190, nil},
		{"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/NetarchiveSuite-netarkivet.arc.gz", 66, nil},
		{"iipc+webarchive-commons/src/test/resources/org/archive/format/arc/IAH-20080430204825-00000-blackbook-truncated.arc", 9, nil},
		{"internetarchive+warc/test_data/alexa_short_header.arc.gz", 2, nil},
		{"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/common/utils/arc/data/originals/input-2.arc", 1, nil},
		{"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/tools/data/originals/test1.arc", 2, nil},
		{"webrecorder+pywb/sample_archive/warcs/example.arc.gz", 2, nil},
		{"webrecorder+pywb/sample_archive/warcs/example.arc", 2, nil},
		// One extra LF before the filedesc line.
		{"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/arcrepository/bitpreservation/data/originals/bitarchive1_to_fail/filedir/integrity1.ARC", 2, []error{ErrRecordEnd}},
		// Trailing padding after the last record.
		{"netarchivesuite+jwat/jwat-arc/src/test/resources/test-arc-1.0-dashed-fields.arc", 1, []error{ErrRecordEnd}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(corpusDir, tt.path))
			if err != nil {
				t.Fatal(err)
			}
			res := readWithDeadline(t, tt.path, data)
			if res.end != io.EOF {
				t.Fatalf("reading ended with %v", res.end)
			}
			var got []string
			for _, err := range res.damage {
				got = append(got, err.Error())
			}
			if len(res.whole) != tt.whole || len(res.damage) != len(tt.damage) {
				t.Fatalf("%d whole, damage %q; want %d whole, damage %v", len(res.whole), got, tt.whole, tt.damage)
			}
			for i, err := range res.damage {
				if !errors.Is(err, tt.damage[i]) {
					t.Errorf("damage %d: %v, want %v", i, err, tt.damage[i])
				}
			}
		})
	}
}

// TestCorpusDetails checks facts of single corpus records.
func TestCorpusDetails(t *testing.T) {
	corpusFiles(t)
	read := func(t *testing.T, path string) corpusResult {
		data, err := os.ReadFile(filepath.Join(corpusDir, path))
		if err != nil {
			t.Fatal(err)
		}
		return readWithDeadline(t, path, data)
	}
	t.Run("space in an ARC URL", func(t *testing.T) {
		res := read(t, "webrecorder+warcio/test/data/example-space-in-url.arc")
		var e *Error
		if len(res.damage) != 1 || !errors.As(res.damage[0], &e) || e.Offset != 151 {
			t.Fatalf("damage %v, want ErrTruncated at 151", res.damage)
		}
	})
	t.Run("stray bytes after a short Content-Length", func(t *testing.T) {
		res := read(t, "webrecorder+pywb/sample_archive/warcs/example.warc")
		var e *Error
		if len(res.damage) != 1 || !errors.As(res.damage[0], &e) || e.Offset != 4061 {
			t.Fatalf("damage %v, want a report at 4061", res.damage)
		}
		if want := fmtSkipped(7, 4764, 4771); !bytes.Contains([]byte(e.Error()), []byte(want)) {
			t.Errorf("%v does not say %q", e, want)
		}
		if last := res.whole[len(res.whole)-1]; last.Offset != 4771 || last.Offset+last.Length != 5629 {
			t.Errorf("last record at %d+%d, want 4771 to the end at 5629", last.Offset, last.Length)
		}
	})
	t.Run("Alexa four-field line", func(t *testing.T) {
		res := read(t, "internetarchive+warc/test_data/alexa_short_header.arc.gz")
		if len(res.whole) != 2 {
			t.Fatalf("%d records", len(res.whole))
		}
		r := res.whole[1]
		if r.ARCFields.ContentType != "" || r.Date == "" || r.URI == "" {
			t.Errorf("%+v", r)
		}
	})
	t.Run("lower-case version lines", func(t *testing.T) {
		res := read(t, "netarchivesuite+jwat/jwat-warc/src/test/resources/valid-warcfile-upper-lower-case.warc")
		versions := map[string]int{}
		for _, r := range res.whole {
			versions[r.Version]++
		}
		if versions["warc/1.0"] == 0 || versions["WARC/1.0"] == 0 {
			t.Errorf("versions %v", versions)
		}
	})
	t.Run("single-CRLF terminators", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(corpusDir, "N0taN3rd+node-warc/test/files/books.toscrape.warc"))
		if err != nil {
			t.Fatal(err)
		}
		res := readWithDeadline(t, "books", data)
		end := int64(0)
		for i, r := range res.whole {
			if r.Offset != end {
				t.Fatalf("record %d at %d, the one before ends at %d", i, r.Offset, end)
			}
			if tail := data[r.Offset+r.HeaderLength+r.BlockLength : r.Offset+r.Length]; string(tail) != "\r\n" {
				t.Fatalf("record %d ends in %q", i, tail)
			}
			end = r.Offset + r.Length
		}
		if end != int64(len(data)) {
			t.Errorf("records end at %d of %d bytes", end, len(data))
		}
	})
	t.Run("HTTP status without reason phrase", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(corpusDir, "webrecorder+pywb/sample_archive/warcs/missing-status-text.warc"))
		if err != nil {
			t.Fatal(err)
		}
		rr, _ := NewReader(bytes.NewReader(data), "m")
		if _, err := rr.Next(); err != nil {
			t.Fatal(err)
		}
		h, err := rr.ReadHTTPHead()
		if err != nil || h.Status != 302 {
			t.Fatalf("%v %v", h, err)
		}
	})
}

func ExampleReader() {
	data := "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: urn:x\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n"
	rr, _ := NewReader(bytes.NewReader([]byte(data)), "x.warc")
	for {
		r, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			continue
		}
		var block bytes.Buffer
		rr.WriteTo(&block)
		if err := rr.Finish(); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(r.Type, r.URI, r.Offset, r.Length, block.String())
	}
	// Output: resource urn:x 0 85 hello
}
