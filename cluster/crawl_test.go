package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/stage"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// committedIndex makes an index with the crawl jan committed, at
// /data/jan, with sha1 digests.
func committedIndex(t *testing.T) string {
	t.Helper()
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	orig := filepath.Join(work, "jan.originals")
	line := "jan/a.warc 0 10 http://a/ 2024-01-01T00:00:00Z sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
	if err := os.WriteFile(orig, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := crawlindex.Commit(dir, crawlindex.Change{Add: &crawlindex.Crawl{Name: "jan", Location: "/data/jan"},
		Files: []crawlindex.FileInfo{{Name: "a.warc", Size: 10}}, Originals: orig}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckIndex proves what a job with an index is refused before
// anything is submitted: a name the index cannot hold, no one URL for
// the crawl's files, another digest algorithm, a root that holds a
// committed crawl's files or lies beneath them.
func TestCheckIndex(t *testing.T) {
	index := committedIndex(t)
	hosts := func(roots ...string) []Host {
		var out []Host
		for i, r := range roots {
			out = append(out, Host{Name: "store" + string(rune('1'+i)), Root: r, URL: "http://store/" + r})
		}
		return out
	}
	tests := []struct {
		name   string
		params Params
		want   string // in the error; "" for none
	}{
		{"a new crawl", Params{Hosts: hosts("/data/feb", "/data2/feb"), Algorithm: "sha1", Crawl: "feb", CrawlURL: "http://front/feb"}, ""},
		{"the committed crawl again", Params{Hosts: hosts("/data/jan"), Algorithm: "sha1", Crawl: "jan", CrawlURL: "http://front/jan"}, ""},
		{"a name with a blank", Params{Hosts: hosts("/data/feb"), Algorithm: "sha1", Crawl: "f b", CrawlURL: "http://front/feb"}, "crawl name"},
		{"no URL", Params{Hosts: hosts("/data/feb", "/data2/feb"), Algorithm: "sha1", Crawl: "feb"}, "--crawl-url"},
		{"another algorithm", Params{Hosts: hosts("/data/feb"), Algorithm: "sha256", Crawl: "feb", CrawlURL: "http://front/feb"}, "--hash sha1"},
		{"a root in a committed crawl", Params{Hosts: hosts("/data/feb", "/data/jan/more"), Algorithm: "sha1", Crawl: "feb", CrawlURL: "http://front/feb"}, "share files"},
		{"a root holding a committed crawl", Params{Hosts: hosts("/data"), Algorithm: "sha1", Crawl: "feb", CrawlURL: "http://front/feb"}, "share files"},
		{"the filesystem's root", Params{Hosts: hosts("/"), Algorithm: "sha1", Crawl: "feb", CrawlURL: "http://front/feb"}, "share files"},
		{"a root whose name only begins as the crawl's", Params{Hosts: hosts("/data/janet", "/data/ja"), Algorithm: "sha1", Crawl: "feb", CrawlURL: "http://front/feb"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.params.Index = index
			_, err := tt.params.CheckIndex()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// TestDefaultCrawlURL: the hosts' URL is the crawl's when they all give
// the same one (a front), none otherwise.
func TestDefaultCrawlURL(t *testing.T) {
	one := Params{Hosts: []Host{{Name: "a", URL: "http://front/w"}, {Name: "b", URL: "http://front/w"}}}
	two := Params{Hosts: []Host{{Name: "a", URL: "http://a/w"}, {Name: "b", URL: "http://b/w"}}}
	if got := one.DefaultCrawlURL(); got != "http://front/w" {
		t.Errorf("one URL: %q", got)
	}
	if got := two.DefaultCrawlURL(); got != "" {
		t.Errorf("two URLs: %q", got)
	}
}

// TestCrawlNames: with an index the manifests name the hosts' files
// CRAWL/REL, and a line of another crawl is the index's, not the job's.
func TestCrawlNames(t *testing.T) {
	with := &Spec{Params: Params{Index: "/i", Crawl: "feb"}}
	without := &Spec{}
	tests := []struct {
		spec       *Spec
		rel, name  string
		ours, jans bool // ours(name), ours("jan/"+rel)
	}{
		{with, "d/a.warc.gz", "feb/d/a.warc.gz", true, false},
		{without, "d/a.warc.gz", "d/a.warc.gz", true, true},
	}
	for _, tt := range tests {
		if got := tt.spec.fileName(tt.rel); got != tt.name {
			t.Errorf("fileName(%q) = %q, want %q", tt.rel, got, tt.name)
		}
		if got := tt.spec.relName(tt.name); got != tt.rel {
			t.Errorf("relName(%q) = %q, want %q", tt.name, got, tt.rel)
		}
		if tt.spec.ours(tt.name) != tt.ours || tt.spec.ours("jan/"+tt.rel) != tt.jans {
			t.Errorf("ours(%q) = %v, ours(jan/...) = %v", tt.name, tt.spec.ours(tt.name), tt.spec.ours("jan/"+tt.rel))
		}
	}
}

// TestCommittedAlready: a job on a committed crawl does nothing, and
// refuses --again (committed crawls are never rewritten); one on another
// crawl goes on.
func TestCommittedAlready(t *testing.T) {
	ix, err := crawlindex.Open(committedIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{WorkDir: t.TempDir(), Params: Params{Index: ix.Dir, Crawl: "jan"}}
	res, err := committedAlready(opt, ix)
	if err != nil || res == nil || !res.NothingToDo || len(res.Report.Crawls) != 1 {
		t.Errorf("rerun of jan: %+v, %v", res, err)
	}
	opt.Again = true
	if _, err := committedAlready(opt, ix); err == nil || !strings.Contains(err.Error(), "never rewritten") {
		t.Errorf("jan --again: %v", err)
	}
	opt.Again, opt.Params.Crawl = false, "feb"
	if res, err := committedAlready(opt, ix); res != nil || err != nil {
		t.Errorf("feb: %+v, %v", res, err)
	}
}

// TestCrawlFiles: the files a host's rehash records (stamps have blanks)
// are read back as the index records them, named beneath their roots.
func TestCrawlFiles(t *testing.T) {
	wd := workDir(t.TempDir())
	spec := &Spec{Params: Params{Hosts: []Host{{Name: "store1"}}, Index: "/i", Crawl: "feb"}}
	dir := t.TempDir()
	name := filepath.Join(dir, "a b.warc")
	if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	var sums stage.FileSums
	sums.Add(warcsum.Input{Name: "feb/d/a b.warc", Path: name, Size: 10}, "abc")
	sums.Add(warcsum.Input{Name: "feb/gone.warc", Path: filepath.Join(dir, "gone"), Size: 5}, "")
	if err := sums.Write(wd.host(&spec.Hosts[0], workdir.AfterFilesFile)); err != nil {
		t.Fatal(err)
	}
	k := &task{wd: wd, spec: spec}
	files, err := k.crawlFiles()
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(name)
	want := []crawlindex.FileInfo{{Name: "d/a b.warc", Size: 10, SHA256: "abc", Stamp: crawlindex.Stamp(fi)}, {Name: "gone.warc", Size: 5}}
	if !slices.Equal(files, want) {
		t.Errorf("files %+v\nwant %+v", files, want)
	}
}
