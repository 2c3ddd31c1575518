package wacz

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplitName(t *testing.T) {
	for _, c := range []struct {
		name, pkg, member string
		ok                bool
	}{
		{"crawl.wacz#archive/data.warc.gz", "crawl.wacz", "archive/data.warc.gz", true},
		{"2024/06/crawl-1.WACZ#archive/a#b.warc.gz", "2024/06/crawl-1.WACZ", "archive/a#b.warc.gz", true},
		{"dir.wacz/x.wacz#archive/x.warc", "dir.wacz/x.wacz", "archive/x.warc", true},
		{"plain.warc.gz", "", "", false},
		{"x.wacz", "", "", false},
		{"x.wacz#", "", "", false},
		{"a#b.warc.gz", "", "", false},
	} {
		pkg, member, ok := SplitName(c.name)
		if pkg != c.pkg || member != c.member || ok != c.ok {
			t.Errorf("SplitName(%q) = %q, %q, %v", c.name, pkg, member, ok)
		}
		if ok && JoinName(pkg, member) != c.name {
			t.Errorf("JoinName(%q, %q) = %q", pkg, member, JoinName(pkg, member))
		}
	}
}

// TestReadCollection reads multi-WACZ JSON as Browsertrix's indexer takes
// it (its own test's import file) and as the backend exports it.
func TestReadCollection(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       []CollectionEntry
		err        string
	}{
		{"Browsertrix indexer import", `{"resources": [
  {"name": "dedupe-test-dupe", "path": "/crawls/collections/dedupe-test-dupe/dedupe-test-dupe.wacz", "crawlId": "dedupe-test-dupe"},
  {"name": "dedupe-test-orig", "path": "/crawls/collections/dedupe-test-orig/dedupe-test-orig.wacz", "crawlId": "dedupe-test-orig"}]}`,
			[]CollectionEntry{{Name: "dedupe-test-dupe", Path: "/crawls/collections/dedupe-test-dupe/dedupe-test-dupe.wacz", CrawlID: "dedupe-test-dupe"},
				{Name: "dedupe-test-orig", Path: "/crawls/collections/dedupe-test-orig/dedupe-test-orig.wacz", CrawlID: "dedupe-test-orig"}}, ""},
		{"backend export with hashes, sizes and more", `{"resources": [{"name": "a.wacz", "path": "https://s3/a.wacz?sig=1", "hash": "ab12", "size": 1234,
  "crawlId": "c1", "numReplicas": 1, "expireAt": "2025-01-01T00:00:00"}], "id": "coll", "title": "x"}`,
			[]CollectionEntry{{Name: "a.wacz", Path: "https://s3/a.wacz?sig=1", Hash: "ab12", Size: 1234, CrawlID: "c1"}}, ""},
		{"name from path", `{"resources": [{"path": "sub/b.wacz"}]}`, []CollectionEntry{{Name: "b.wacz", Path: "sub/b.wacz"}}, ""},
		{"no resources", `{"files": []}`, nil, `no "resources" list`},
		{"not JSON", `resources`, nil, "not a multi-WACZ JSON"},
		{"a resource without path", `{"resources": [{"name": "x"}]}`, nil, "resource 1 has no path"},
		{"a path twice", `{"resources": [{"path": "a.wacz"}, {"path": "a.wacz"}]}`, nil, "resource 2: path \"a.wacz\" listed twice"},
		{"a size that is no count", `{"resources": [{"path": "a.wacz", "size": -3}]}`, nil, "is not a count of bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadCollection(strings.NewReader(c.json), "coll.json")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "coll.json") {
					t.Fatalf("error %v, want one naming coll.json and saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	var b bytes.Buffer
	entries := []CollectionEntry{{Name: "a.wacz", Path: "a.wacz", Hash: "ff", Size: 3, CrawlID: "c"}}
	if err := WriteCollection(&b, entries); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCollection(&b, "written")
	if err != nil || fmt.Sprint(back) != fmt.Sprint(entries) {
		t.Errorf("written and read back: %v, %v", back, err)
	}
}

func TestCollectionLocalPath(t *testing.T) {
	for _, c := range []struct {
		path, want string
		ok         bool
	}{
		{"a.wacz", "/data/coll/a.wacz", true},
		{"sub/b.wacz", "/data/coll/sub/b.wacz", true},
		{"/abs/c.wacz", "/abs/c.wacz", true},
		{"file:///abs/d.wacz", "/abs/d.wacz", true},
		{"https://example.com/e.wacz", "", false},
		{"s3://bucket/f.wacz", "", false},
	} {
		got, ok := CollectionEntry{Path: c.path}.LocalPath("/data/coll/collection.json")
		if got != c.want || ok != c.ok {
			t.Errorf("LocalPath(%q) = %q, %v", c.path, got, ok)
		}
	}
}

// TestOrder orders rewrites so that a package comes after every package
// it requires, and names the cycles that have no such order.
func TestOrder(t *testing.T) {
	for _, c := range []struct {
		name     string
		packages []string
		deps     []Dependency
		order    string
		cycles   string
	}{
		{"none", []string{"b", "a"}, nil, "a b", ""},
		{"a chain of crawls", []string{"jan", "feb", "mar"}, []Dependency{{"mar", "feb"}, {"feb", "jan"}, {"mar", "jan"}}, "jan feb mar", ""},
		{"a diamond", []string{"a", "b", "c", "d"}, []Dependency{{"d", "b"}, {"d", "c"}, {"b", "a"}, {"c", "a"}}, "a b c d", ""},
		{"two that need each other", []string{"a", "b", "c"}, []Dependency{{"a", "b"}, {"b", "a"}, {"c", "a"}}, "a b c", "[a b]"},
		{"a package that needs itself", []string{"a"}, []Dependency{{"a", "a"}}, "a", "[a]"},
		{"a required package outside the list", []string{"new"}, []Dependency{{"new", "committed"}}, "committed new", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			order, cycles := Order(c.packages, c.deps)
			if strings.Join(order, " ") != c.order {
				t.Errorf("order %v, want %s", order, c.order)
			}
			got := ""
			for _, cy := range cycles {
				got += fmt.Sprint(cy)
			}
			if got != c.cycles {
				t.Errorf("cycles %s, want %s", got, c.cycles)
			}
		})
	}
}

func TestContainerURI(t *testing.T) {
	if got := ContainerURI("/archive/2024/crawl-a.wacz"); got != "file://crawl-a.wacz" {
		t.Errorf("ContainerURI = %q", got)
	}
	for _, c := range []struct {
		v, name string
		ok      bool
	}{
		{"file://crawl-a.wacz", "crawl-a.wacz", true},
		{"file://", "", false},
		{"file://dir/x.wacz", "", false},
		{"http://x/y.wacz", "", false},
	} {
		name, ok := ParseContainerURI(c.v)
		if name != c.name || ok != c.ok {
			t.Errorf("ParseContainerURI(%q) = %q, %v", c.v, name, ok)
		}
	}
	r := RequirementOf("/x/orig.wacz", []byte{0xab, 0xcd}, 42, "crawl-1")
	if r != (Requirement{Filename: "orig.wacz", Hash: "abcd", Size: 42, CrawlID: "crawl-1"}) {
		t.Errorf("RequirementOf = %+v", r)
	}
}

// TestDatapackageLayout writes datapackage.json back byte for byte in
// the layouts its writers use, and edits it in place.
func TestDatapackageLayout(t *testing.T) {
	for _, c := range []struct{ name, text string }{
		{"JSON.stringify(v, null, 2)", "{\n  \"resources\": [\n    {\n      \"name\": \"a\",\n      \"path\": \"archive/a.warc\",\n      \"hash\": \"sha256:00\",\n      \"bytes\": 1\n    }\n  ],\n  \"created\": \"2024\",\n  \"wacz_version\": \"1.1.1\",\n  \"software\": \"x\",\n  \"extras\": {\"n\": [1, 2.50, null, true, \"\\u00e9\\/\"], \"empty\": {}, \"none\": []}\n}"},
		{"compact JavaScript", `{"resources":[{"path":"a","hash":"sha256:00","bytes":1}],"wacz_version":"1.1.1","x":[1,{"y":"z"}]}`},
		{"compact Python", `{"resources": [{"path": "a", "hash": "sha256:00", "bytes": 1}], "wacz_version": "1.1.1"}` + "\n"},
		{"Python indent=4", "{\n    \"resources\": [\n        {\n            \"path\": \"a\"\n        }\n    ],\n    \"wacz_version\": \"1.0.0\"\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDatapackage([]byte(c.text))
			if err != nil {
				t.Fatal(err)
			}
			text := c.text
			if c.name == "JSON.stringify(v, null, 2)" {
				// Nested compact values are laid out as the rest.
				d2, _ := ParseDatapackage(d.Bytes())
				if !bytes.Equal(d2.Bytes(), d.Bytes()) {
					t.Error("not stable")
				}
				if !strings.Contains(string(d.Bytes()), `"\u00e9\/"`) || !strings.Contains(string(d.Bytes()), "2.50") {
					t.Errorf("values not kept as written:\n%s", d.Bytes())
				}
				return
			}
			if got := string(d.Bytes()); got != text {
				t.Errorf("written back as\n%s\nwas\n%s", got, text)
			}
		})
	}
	d, _ := ParseDatapackage([]byte(`{"resources": [{"path": "p", "stats": {"hash": "00", "bytes": 1}, "hashing": "sha256"}], "created": "2024-01-02T03:04:05.678Z"}`))
	if err := d.setResource("p", bytes.Repeat([]byte{0xee}, 32), 9); err != nil {
		t.Fatal(err)
	}
	d.SetModified(time.Date(2025, 1, 2, 3, 4, 5, 600e6, time.UTC))
	want := `{"resources": [{"path": "p", "stats": {"hash": "` + strings.Repeat("ee", 32) + `", "bytes": 9}, "hashing": "sha256"}], "created": "2024-01-02T03:04:05.678Z", "modified": "2025-01-02T03:04:05.600Z"}`
	if got := string(d.Bytes()); got != want {
		t.Errorf("edited:\n%s\nwant\n%s", got, want)
	}
}

// TestCreate packages generated WARC files as Browsertrix does, plain
// and ZipNum, and checks the packages and their index against warcindex.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	w1 := writeTemp(t, dir, "a.warc.gz", testWARC())
	w2 := writeTemp(t, dir, "b.warc.gz", testWARC())
	for _, zipnum := range []bool{false, true} {
		t.Run(fmt.Sprintf("ZipNum %v", zipnum), func(t *testing.T) {
			name := filepath.Join(dir, fmt.Sprintf("c-%v.wacz", zipnum))
			f, err := os.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Create(f, CreateOptions{WARCs: []string{w1, w2}, ZipNum: zipnum, LinesPerBlock: 3, Software: "warcgen", Title: "t",
				Created: rebuildTime, Requires: []Requirement{{Filename: "old.wacz", Hash: "ab", Size: 1, CrawlID: "c0"}}})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			p := openFile(t, name)
			checkClean(t, p)
			want := append(freshLinesOf(t, "a.warc.gz", testWARC()), freshLinesOf(t, "b.warc.gz", testWARC())...)
			slices.Sort(want)
			if got := indexLines(t, p); !slices.Equal(got, want) {
				t.Errorf("index:\n%s", strings.Join(got, "\n"))
			}
			if r, _ := p.Datapackage.Requires(); len(r) != 1 || r[0].CrawlID != "c0" {
				t.Errorf("requires %+v", r)
			}
			if zipnum {
				ix := findIndex(t, p)
				lay, _ := p.zipNumLayout(ix)
				if ix.Kind != ZipNumIndex || lay.linesPerBlock != 3 || lay.blocks != 3 {
					t.Errorf("ZipNum layout %+v", lay)
				}
			}
		})
	}
}

// TestLineSorter sorts in memory and, past its memory limit, through a
// file and the system sort, with the same result.
func TestLineSorter(t *testing.T) {
	var want []string
	for i := range 2000 {
		want = append(want, fmt.Sprintf("com,example)/%d 2024 {\"n\":%d}", (i*7919)%2000, i))
	}
	for _, limit := range []int{1 << 30, 1000} {
		s := newLineSorter(t.TempDir())
		s.memLimit = limit
		for _, l := range want {
			if err := s.add([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		if spilled := s.spill != nil; spilled != (limit == 1000) {
			t.Errorf("limit %d: spilled to a file: %v", limit, spilled)
		}
		var got []string
		if err := s.each(func(l []byte) error { got = append(got, string(l)); return nil }); err != nil {
			t.Fatal(err)
		}
		s.close()
		sorted := slices.Clone(want)
		slices.Sort(sorted)
		if !slices.Equal(got, sorted) {
			t.Errorf("limit %d: not sorted as sort does", limit)
		}
	}
}

// TestCheckRecordsOf compares only the members asked: a wrong line of
// another member goes unseen there, and is found without the limit.
func TestCheckRecordsOf(t *testing.T) {
	m := validMembers(t)
	lines := strings.Split(strings.TrimSuffix(m[1].data, "\n"), "\n")
	lines[0] = strings.Replace(lines[0], `"status":"200"`, `"status":"404"`, 1)
	m[1].data = strings.Join(lines, "\n") + "\n"
	p, _ := packageOf(t, m)
	r, _ := Check(p, CheckOptions{Records: true, RecordsOf: func(string) bool { return false }})
	if r.Err() != nil {
		t.Errorf("problems in members not compared: %v", r.Err())
	}
	r, _ = Check(p, CheckOptions{Records: true, RecordsOf: func(m string) bool { return m == "archive/data.warc.gz" }})
	wantKind(t, r.Err(), ErrIndex, "status 404")
}
