package cluster

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
)

// TestOriginalsSplit proves which lines of a range reach each host's
// originals part: a digest's kept and revisit lines go to the hosts with a
// duplicate of it (and to no other), lines without a digest go to every
// host, and a digest whose lines pass the limit goes to every host.
func TestOriginalsSplit(t *testing.T) {
	const (
		keptA = "a.warc 0 10 http://a/ 2024-01-01T00:00:00Z sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA 0 1 - -"
		dupA  = "b.warc 0 10 http://a2/ 2024-02-01T00:00:00Z sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA 0 2 http://a/ 2024-01-01T00:00:00Z"
		pin   = "a.warc 50 10 http://p/ 2024-01-01T00:00:00Z - -1 0 http://x/ *"
		revB  = "c.warc 0 10 http://b/ 2024-03-01T00:00:00Z sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB -1 0 http://b/ 2024-01-01T00:00:00Z"
		keptB = "a.warc 20 10 http://b/ 2024-01-01T00:00:00Z sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB 0 1 - -"
		dupB  = "c.warc 20 10 http://b/ 2024-04-01T00:00:00Z sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB 0 2 http://b/ 2024-01-01T00:00:00Z"
		// A committed original joined from a crawl index: held by no host.
		keptJan = "jan/a.warc 0 10 http://a/ 2024-01-01T00:00:00Z sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA 0 1 - -"
		keptC   = "a.warc 40 10 http://c/ 2024-01-01T00:00:00Z sha1:CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC 0 1 - -"
		keptD1  = "a.warc 60 10 http://d/ 2024-01-01T00:00:00Z sha1:DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD 0 1 - -"
		keptD2  = "a.warc 80 10 http://d/ 2024-01-02T00:00:00Z sha1:DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD 1 1 - -"
		dupD    = "b.warc 80 10 http://d/ 2024-01-03T00:00:00Z sha1:DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD 1 2 http://d/ 2024-01-02T00:00:00Z"
	)
	type in struct {
		line string
		host int
	}
	tests := []struct {
		name  string
		limit int
		lines []in
		want  [3][]string // each host's part
	}{
		{"kept line only where a duplicate is", 1 << 20,
			[]in{{keptA, 0}, {dupA, 1}, {keptC, 0}},
			[3][]string{nil, {keptA}, nil}},
		{"a committed original goes where a duplicate is", 1 << 20,
			[]in{{keptJan, -1}, {dupA, 2}, {keptC, 0}},
			[3][]string{nil, nil, {keptJan}}},
		{"a line without digest goes everywhere", 1 << 20,
			[]in{{pin, 0}, {keptA, 0}, {dupA, 2}},
			[3][]string{{pin}, {pin}, {pin, keptA}}},
		{"revisit lines go with the kept line", 1 << 20,
			[]in{{revB, 2}, {keptB, 0}, {dupB, 2}},
			[3][]string{nil, nil, {revB, keptB}}},
		{"a digest past the limit goes everywhere", len(keptD1) + 1,
			[]in{{keptD1, 0}, {keptD2, 0}, {dupD, 1}, {keptC, 0}},
			[3][]string{{keptD1, keptD2}, {keptD1, keptD2}, {keptD1, keptD2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := &originalsSplit{limit: tt.limit, dup: make([]bool, 3)}
			for h := range 3 {
				f, err := atomicfile.Create(filepath.Join(dir, string(rune('0'+h))), 0o644)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Abort()
				o.files = append(o.files, f)
				o.parts = append(o.parts, bufio.NewWriter(f))
			}
			for _, l := range tt.lines {
				parsed, err := manifest.Parse([]byte(l.line))
				if err != nil {
					t.Fatalf("%s: %v", l.line, err)
				}
				if err := o.add(&parsed, []byte(l.line+"\n"), l.host); err != nil {
					t.Fatal(err)
				}
			}
			if err := o.close(); err != nil {
				t.Fatal(err)
			}
			for h := range 3 {
				data, err := os.ReadFile(filepath.Join(dir, string(rune('0'+h))))
				if err != nil {
					t.Fatal(err)
				}
				want := strings.Join(tt.want[h], "\n")
				if want != "" {
					want += "\n"
				}
				if string(data) != want {
					t.Errorf("host %d got\n%s\nwant\n%s", h, data, want)
				}
			}
		})
	}
}
