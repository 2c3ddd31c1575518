package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRunsHistory proves that the work directory's report shows every run
// and undo with a link to its own page and what they did together, and
// that stats.json keeps them.
func TestRunsHistory(t *testing.T) {
	r := sampleReport()
	r.Collection = &Collection{RevisitsWritten: 1234, RecordsRestored: 34, BytesSaved: 5_000_000, FilesReplaced: 7}
	r.Runs = []Run{
		{Dir: "runs/2026-01-02T030400Z-dry-run", Started: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Mode: "dry run", Files: 9, RevisitsWritten: 1200, BytesSaved: 4_900_000},
		{Dir: "runs/2026-01-03T030400Z-run", Started: time.Date(2026, 1, 3, 3, 4, 0, 0, time.UTC), Mode: "run", Exit: 1, Files: 9, RevisitsWritten: 1200, BytesSaved: 4_900_000, FilesRewritten: 6},
		{Dir: "runs/2026-01-04T030400Z-undo", Started: time.Date(2026, 1, 4, 3, 4, 0, 0, time.UTC), Mode: "undo", Files: 1, RecordsRestored: 34, BytesSaved: -100_000, FilesRewritten: 1},
		{Dir: "runs/2026-01-05T030400Z-run", Mode: hostile("mode"), Files: 10, RevisitsWritten: 34, BytesSaved: 200_000, FilesRewritten: 2},
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Runs, r.Runs) || !reflect.DeepEqual(got.Collection, r.Collection) {
		t.Errorf("read back %+v %+v, wrote %+v %+v", got.Runs, got.Collection, r.Runs, r.Collection)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{
		`<h2 id="runs">Every run of the collection</h2>`,
		"Every run together wrote 1,234 revisits, and every undo restored 34 records: 5.0 MB saved now, in 7 files replaced once or more",
		`<a href="runs/2026-01-03T030400Z-run/report.html">`,
		"<td>undo</td><td class=\"n\">0</td><td class=\"n\">1</td><td class=\"n\">34 restored</td>",
		"2026-01-02 03:04 UTC</td><td>dry run</td>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(html, "<script>") {
		t.Errorf("a mode was not escaped")
	}
	r.Runs, r.Collection = nil, nil
	page.Reset()
	WriteHTML(&page, r)
	if strings.Contains(page.String(), `id="runs"`) {
		t.Errorf("a report without runs shows the section")
	}
}
