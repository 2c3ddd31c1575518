package report

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestJSONRoundTrip: a full report read back is the report written, and
// written again gives the same bytes.
func TestJSONRoundTrip(t *testing.T) {
	r := sampleReport()
	r.Caveats = append(r.Caveats, hostile("json"))
	var first bytes.Buffer
	if err := WriteJSON(&first, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("read back:\n%+v\nwritten:\n%+v", got, r)
	}
	var second bytes.Buffer
	if err := WriteJSON(&second, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("written again, the JSON differs")
	}
	s := first.String()
	for _, want := range []string{
		"{\n  \"title\": ",
		`"<script>alert(json)</script>\" onmouseover=\"xjson'&"`, // as it is, not \u003c
		`"took_ns": 41000000000`,
		`"generated": "2026-11-22T20:33:00Z"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the JSON lacks %s", want)
		}
	}
	if !strings.HasSuffix(s, "}\n") {
		t.Error("the JSON does not end in a newline")
	}
}

// TestWriteJSONEmpty: the breakdowns and tables of an empty report are
// [] (a reader can iterate them), and reading it back and writing it
// again gives the same bytes.
func TestWriteJSONEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &Report{}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, key := range []string{"collections", "by_mime", "by_host", "by_month", "by_size", "largest_classes", "not_deduplicable"} {
		if !strings.Contains(s, `"`+key+`": []`) {
			t.Errorf("%s is not []", key)
		}
	}
	for _, key := range []string{"caveats", "estimate", "stages", "crawls", "exit_reason"} {
		if strings.Contains(s, `"`+key+`"`) {
			t.Errorf("%s is written though empty", key)
		}
	}
	r, err := ReadJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	WriteJSON(&again, r)
	if again.String() != s {
		t.Errorf("written again:\n%s\nfirst:\n%s", again.String(), s)
	}
	if err := WriteJSON(&buf, nil); err == nil {
		t.Error("WriteJSON(nil) did not fail")
	}
}

func TestWriteJSONFailingWriter(t *testing.T) {
	if err := WriteJSON(failingWriter{}, &Report{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("error %v, want the writer's", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestReadJSONErrors: bad input is refused with where it went wrong.
func TestReadJSONErrors(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"empty", "", "empty input"},
		{"truncated", `{"title": "x", "totals": {`, "truncated"},
		{"not JSON", `{"title": x}`, "offset 11"},
		{"a field of the wrong type", `{"totals": {"files": "many"}}`, "offset 27"},
		{"a second value after the report", `{"title": "a"} {"title": "b"}`, "offset 16: data after the report"},
		{"not an object", `[1, 2]`, "cannot unmarshal array"},
	} {
		_, err := ReadJSON(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "report: reading JSON: ") {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
	// White space after the report is not data.
	if _, err := ReadJSON(strings.NewReader("{}\n\n  ")); err != nil {
		t.Errorf("trailing white space: %v", err)
	}
	// A newer warcdedup's fields are ignored.
	r, err := ReadJSON(strings.NewReader(`{"title": "t", "added_later": {"x": 1}}`))
	if err != nil || r.Title != "t" {
		t.Errorf("unknown field: %v, %+v", err, r)
	}
}
