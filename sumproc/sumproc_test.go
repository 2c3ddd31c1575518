package sumproc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"warcdedup/manifest"
)

const (
	dA = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	dB = "sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
)

func process(t *testing.T, input string, opt Options, deps Deps) (string, *Stats, []error) {
	t.Helper()
	var warnings []error
	opt.Warn = func(err error) { warnings = append(warnings, err) }
	var out bytes.Buffer
	w := manifest.NewWriter(&out)
	st, err := Process(manifest.NewReader(strings.NewReader(input), "in"), w, opt, deps)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	w.Flush()
	return out.String(), st, warnings
}

// TestNumbering proves the copy numbers, including the case the original
// warcsumproc got wrong: a collision class (ext 1) under the same digest
// starts its own numbering, it is not copy 3 of class 0.
func TestNumbering(t *testing.T) {
	tests := []struct {
		name, in, want string
		opt            Options
	}{
		{
			name: "copies point at the earliest",
			in: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0\n" +
				"b.warc 5 900 http://y/ 2020-02-01T00:00:00Z " + dA + " 0\n" +
				"a.warc 900 900 http://x/ 2020-03-01T00:00:00Z " + dA + " 0\n",
			want: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0 1 - -\n" +
				"b.warc 5 900 http://y/ 2020-02-01T00:00:00Z " + dA + " 0 2 http://x/ 2020-01-01T00:00:00Z\n" +
				"a.warc 900 900 http://x/ 2020-03-01T00:00:00Z " + dA + " 0 3 http://x/ 2020-01-01T00:00:00Z\n",
		},
		{
			name: "a collision class is numbered on its own",
			in: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0\n" +
				"b.warc 0 900 http://x/ 2020-01-02T00:00:00Z " + dA + " 0\n" +
				"c.warc 0 900 http://z/ 2020-01-03T00:00:00Z " + dA + " 1\n" +
				"d.warc 0 900 http://w/ 2020-01-04T00:00:00Z " + dA + " 1\n",
			want: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0 1 - -\n" +
				"b.warc 0 900 http://x/ 2020-01-02T00:00:00Z " + dA + " 0 2 http://x/ 2020-01-01T00:00:00Z\n" +
				"c.warc 0 900 http://z/ 2020-01-03T00:00:00Z " + dA + " 1 1 - -\n" +
				"d.warc 0 900 http://w/ 2020-01-04T00:00:00Z " + dA + " 1 2 http://z/ 2020-01-03T00:00:00Z\n",
		},
		{
			name: "a new digest with the same ext starts a class",
			in: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0\n" +
				"b.warc 0 900 http://y/ 2020-01-02T00:00:00Z " + dB + " 0\n",
			want: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0 1 - -\n" +
				"b.warc 0 900 http://y/ 2020-01-02T00:00:00Z " + dB + " 0 1 - -\n",
		},
		{
			name: "dups only leaves copy 1 out",
			opt:  Options{DupsOnly: true},
			in: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0\n" +
				"b.warc 0 900 http://y/ 2020-01-02T00:00:00Z " + dA + " 0\n",
			want: "b.warc 0 900 http://y/ 2020-01-02T00:00:00Z " + dA + " 0 2 http://x/ 2020-01-01T00:00:00Z\n",
		},
		{
			name: "the same record twice is listed once",
			in: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0\n" +
				"a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0\n" +
				"b.warc 0 900 http://y/ 2020-01-02T00:00:00Z " + dA + " 0\n",
			want: "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0 1 - -\n" +
				"b.warc 0 900 http://y/ 2020-01-02T00:00:00Z " + dA + " 0 2 http://x/ 2020-01-01T00:00:00Z\n",
		},
		{
			name: "revisit lines pass through; what they refer to stays a response",
			in: "r.warc 0 400 http://r/ 2020-05-01T00:00:00Z - -1 0 http://w/ 2020-01-04T00:00:00Z\n" +
				"r.warc 400 400 http://r/ 2020-05-02T00:00:00Z " + dA + " -1 0 http://y/ 2020-01-02T00:00:00Z\n" +
				"a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0\n" +
				"b.warc 0 900 http://y/ 2020-01-02T00:00:00Z " + dA + " 0\n" +
				"c.warc 0 900 http://z/ 2020-01-03T00:00:00Z " + dA + " 0\n" +
				"d.warc 0 900 http://w/ 2020-01-04T00:00:00Z " + dA + " 0\n",
			want: "r.warc 0 400 http://r/ 2020-05-01T00:00:00Z - -1 0 http://w/ 2020-01-04T00:00:00Z\n" +
				"r.warc 400 400 http://r/ 2020-05-02T00:00:00Z " + dA + " -1 0 http://y/ 2020-01-02T00:00:00Z\n" +
				"a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 0 1 - -\n" +
				"b.warc 0 900 http://y/ 2020-01-02T00:00:00Z " + dA + " 0 1 - -\n" +
				"c.warc 0 900 http://z/ 2020-01-03T00:00:00Z " + dA + " 0 2 http://x/ 2020-01-01T00:00:00Z\n" +
				"d.warc 0 900 http://w/ 2020-01-04T00:00:00Z " + dA + " 0 1 - -\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, _ := process(t, tt.in, tt.opt, nil)
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestStatsAndDeps proves the figures of --stats and --deps.
func TestStatsAndDeps(t *testing.T) {
	in := "a.warc 0 1000 http://x/ 2020-01-01T00:00:00Z " + dA + " 0\n" +
		"b.warc 0 1000 http://x/ 2020-01-02T00:00:00Z " + dA + " 0\n" +
		"b.warc 1000 500 http://y/ 2020-01-03T00:00:00Z " + dA + " 0\n" +
		"a.warc 1000 3000 http://z/ 2020-01-01T00:00:00Z " + dB + " 0\n" +
		"a.warc 1000 3000 http://z/ 2020-01-01T00:00:00Z " + dB + " 0\n"
	deps := Deps{}
	_, st, warnings := process(t, in, Options{}, deps)
	if len(warnings) != 1 || !strings.Contains(warnings[0].Error(), "line 5: a.warc offset 1000 is listed twice") {
		t.Errorf("warnings %v", warnings)
	}
	want := Stats{Records: 4, Repeated: 1, UniquePayloads: 2, Duplicates: 2, Bytes: 5500, DuplicateBytes: 1500,
		RateByCount: 0.5, RateByBytes: 1500.0 / 5500, SavedEstimate: 400}
	st.Largest, st.largest = nil, nil
	if !reflect.DeepEqual(*st, want) {
		t.Errorf("stats %+v\nwant %+v", *st, want)
	}
	var b bytes.Buffer
	deps.Write(&b)
	if b.String() != "b.warc a.warc 2\n" {
		t.Errorf("deps %q", b.String())
	}
	b.Reset()
	if err := st.WriteJSON(&b); err != nil || !json.Valid(b.Bytes()) {
		t.Errorf("JSON %v %s", err, b.String())
	}
}

// TestLargest proves that the largest classes are kept, largest first.
func TestLargest(t *testing.T) {
	var in strings.Builder
	for i, n := range []int{3, 1, 5, 2, 4} {
		d := "sha1:" + strings.Repeat(string(rune('A'+i)), 32)
		for j := range n {
			in.WriteString("f.warc " + string(rune('1'+i)) + string(rune('0'+j)) + " 10 u d " + d + " 0\n")
		}
	}
	_, st, _ := process(t, in.String(), Options{Largest: 3}, nil)
	var got []int64
	for _, c := range st.Largest {
		got = append(got, c.Copies)
	}
	if len(got) != 3 || got[0] != 5 || got[1] != 4 || got[2] != 3 {
		t.Errorf("largest %v, want [5 4 3]", got)
	}
}

// TestOrderChecked proves that input not sorted by class order is refused
// with the sort command.
func TestOrderChecked(t *testing.T) {
	in := "a.warc 0 900 http://x/ 2020-01-01T00:00:00Z " + dA + " 1\n" +
		"b.warc 0 900 http://x/ 2020-01-02T00:00:00Z " + dA + " 0\n"
	var out bytes.Buffer
	_, err := Process(manifest.NewReader(strings.NewReader(in), "in"), manifest.NewWriter(&out), Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "in:2:") || !strings.Contains(err.Error(), "-k7,7n") {
		t.Errorf("err %v", err)
	}
}
