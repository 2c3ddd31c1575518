package recompress

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/corpustest"
)

// TestCorpus recompresses copies of the corpus files that hold several
// records in a gzip member: each becomes one record per member; the damaged
// ones are refused; files already right are left alone.
func TestCorpus(t *testing.T) {
	const corpus = "../../shared/corpus"
	if _, err := os.Stat(corpus); err != nil {
		corpustest.Missing(t, "shared corpus absent")
	}
	cases := []struct {
		path    string
		outcome Outcome
		records int
		damaged bool
	}{
		{"webrecorder+warcio/test/data/example-bad-non-chunked.warc.gz", Recompressed, 6, false},
		{"webrecorder+pywb/sample_archive/warcs/example-bad.warc.gz.bad", Recompressed, 6, false},
		{"datatogether+warc/testdata/test.warc.gz", Recompressed, 10, false},
		{"internetarchive+gowarc/testdata/warcs/good.warc.gz.open", Recompressed, 50, false},
		{"internetarchive+gowarc/testdata/warcs/skip-non-open.warc.gz", Recompressed, 10, false},
		// One member, then bytes that are no member.
		{"internetarchive+gowarc/testdata/warcs/corrupted-mid-record.warc.gz.open", 0, 0, true},
		{"internetarchive+gowarc/testdata/warcs/corrupted-trailing-bytes.warc.gz.open", 0, 0, true},
		// A record shorter than its Content-Length, in a member without trailer.
		{"chatnoir-eu+chatnoir-resiliparse/tests/data/clipped.warc.gz", 0, 0, true},
		{"webrecorder+pywb/sample_archive/warcs/iana.warc.gz", PerRecord, 0, false},
		{"webrecorder+pywb/sample_archive/warcs/example.arc.gz", PerRecord, 0, false},
		{"webrecorder+pywb/sample_archive/warcs/example.warc", Plain, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(corpus, tc.path))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			p := write(t, dir, filepath.Base(tc.path), data)
			res, err := File(context.Background(), p, Options{})
			if tc.damaged {
				if !errors.Is(err, ErrDamaged) {
					t.Errorf("%v, want a refusal for damage", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.outcome {
				t.Fatalf("%v, want %v", res.Outcome, tc.outcome)
			}
			if tc.outcome != Recompressed {
				return
			}
			got, _ := os.ReadFile(p)
			perRecord(t, got, tc.records)
			if string(inflate(t, got)) != string(inflate(t, data)) {
				t.Error("the inflated bytes changed")
			}
		})
	}
}
