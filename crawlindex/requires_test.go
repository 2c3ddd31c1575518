package crawlindex

import (
	"strings"
	"testing"
)

// TestFileRequiresRoundTrip proves that a crawl's list of files keeps
// what a commit recorded of each package's requires entries: none
// (known: a run need not open the package), some, and not known (an
// older index, an import: a run opens it), which an older list, without
// the field, reads as.
func TestFileRequiresRoundTrip(t *testing.T) {
	some, ok := RequiresOf([]string{"b.wacz", "c.wacz"})
	if !ok {
		t.Fatal("RequiresOf refused plain names")
	}
	files := []FileInfo{
		{Name: "none.wacz", Size: 1, Stamp: "s", RequiresKnown: true},
		{Name: "some.wacz", Size: 2, Stamp: "s", Requires: some, RequiresKnown: true},
		{Name: "unknown.wacz", Size: 3, Stamp: "s"},
	}
	data, err := marshalCrawlFiles(&CrawlFiles{Crawl: "c", Files: files})
	if err != nil {
		t.Fatal(err)
	}
	got, err := unmarshalCrawlFiles(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if got.Files[i] != f {
			t.Errorf("%s: read back as %+v, written %+v", f.Name, got.Files[i], f)
		}
	}
	if n := got.Files[1].RequiredNames(); len(n) != 2 || n[0] != "b.wacz" || n[1] != "c.wacz" {
		t.Errorf("some.wacz requires %q", n)
	}
	older := strings.ReplaceAll(string(data), `"requires": []`, `"x": 0`)
	if older == string(data) {
		t.Fatalf("no empty requires list written: %s", data)
	}
	got, err = unmarshalCrawlFiles([]byte(older))
	if err != nil {
		t.Fatal(err)
	}
	if got.Files[0].RequiresKnown {
		t.Error("a list without the field read as known to require none")
	}
	if _, ok := RequiresOf([]string{"a\nb.wacz"}); ok {
		t.Error("a name with a line feed taken as known")
	}
}
