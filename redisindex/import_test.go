package redisindex

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/redis"
	"warcdedup/internal/redistest"
	"warcdedup/internal/ziptest"
)

func importInto(t *testing.T, c *redis.Conn, dir, location string, opt ImportOptions) (*ImportStats, error) {
	t.Helper()
	opt.Location, opt.TempDir, opt.Sort = location, t.TempDir(), systemSort
	return Import(context.Background(), c, dir, opt)
}

// crawlFacts is what a round trip must keep of a crawl.
type crawlFacts struct {
	Name                                              string
	Files                                             []string // name size sha256
	Records, Revisits, Conserved, Size, Originals, NF int64
	Requires                                          []string // crawl revisits file...
}

func facts(t *testing.T, dir string) ([]crawlFacts, []string) {
	t.Helper()
	ix := openIndex(t, dir)
	var out []crawlFacts
	for _, k := range ix.Registry.Crawls {
		f := crawlFacts{Name: k.Name, Records: k.Records, Revisits: k.Revisits, Conserved: k.BytesConserved,
			Size: k.Size, Originals: k.Originals, NF: k.Files}
		files, err := ix.Files(k.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, fi := range files {
			f.Files = append(f.Files, fmt.Sprintf("%s %d %s", fi.Name, fi.Size, fi.SHA256))
		}
		for _, n := range k.Requires {
			s := fmt.Sprintf("%s %d", n.Crawl, n.Revisits)
			var names []string
			for _, fi := range n.Files {
				names = append(names, fmt.Sprintf("%s %d %s", fi.Name, fi.Size, fi.SHA256))
			}
			slices.Sort(names)
			f.Requires = append(f.Requires, s+" "+strings.Join(names, " "))
		}
		out = append(out, f)
	}
	return out, indexOriginals(t, ix)
}

// indexOriginals are the index's originals, in digest order.
func indexOriginals(t *testing.T, ix *crawlindex.Index) []string {
	t.Helper()
	r, err := ix.Originals()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var originals []string
	for {
		l, err := r.Next()
		if err == io.EOF {
			return originals
		}
		if err != nil {
			t.Fatal(err)
		}
		originals = append(originals, l.String())
	}
}

// TestRoundTrip: index -> Redis -> index gives the same crawls (files,
// figures), originals and dependencies; and that index -> Redis gives
// the same keys again.
func TestRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	fx := newFixture(t, twoCrawls()...)
	export(t, c, fx.index, ExportOptions{})
	back := filepath.Join(t.TempDir(), "back")
	st, err := importInto(t, c, back, fx.dir, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Imported, []string{"c0", "c1"}) || st.Originals != 7 || st.Revisits != 3 || st.Files != 3 {
		t.Fatalf("import: %+v", st)
	}
	wantCrawls, wantOriginals := facts(t, fx.index)
	gotCrawls, gotOriginals := facts(t, back)
	if fmt.Sprint(gotCrawls) != fmt.Sprint(wantCrawls) {
		t.Errorf("crawls after the round trip:\n%+v\nwant\n%+v", gotCrawls, wantCrawls)
	}
	if !slices.Equal(gotOriginals, wantOriginals) {
		t.Errorf("originals after the round trip:\n%s\nwant\n%s", strings.Join(gotOriginals, "\n"), strings.Join(wantOriginals, "\n"))
	}
	for _, k := range openIndex(t, back).Registry.Crawls {
		if !k.Imported || k.Location != fx.dir {
			t.Errorf("crawl %s: imported %v, location %s", k.Name, k.Imported, k.Location)
		}
	}
	// The imported index verifies (files there, unchanged, every crawl
	// it needs committed).
	var problems []string
	if _, err := openIndex(t, back).Verify(true, func(p string) { problems = append(problems, p) }); err != nil || len(problems) > 0 {
		t.Errorf("verify of the imported index: %v %q", err, problems)
	}
	// And out again: the same keys.
	srv2 := redistest.Start(t)
	c2 := dial(t, srv2)
	export(t, c2, back, ExportOptions{})
	first := dump(t, c, keyExported, keySeq)
	compareDumps(t, dump(t, c2, keyExported, keySeq), first)

	// A second import finds both crawls there.
	st, err = importInto(t, c, back, fx.dir, ImportOptions{})
	if err != nil || !slices.Equal(st.Present, []string{"c0", "c1"}) || len(st.Imported) != 0 {
		t.Fatalf("second import: %+v %v", st, err)
	}
}

// browsertrixKeys writes the keys the crawler writes for a finished crawl
// of the fixture's c0 (its WACZ hashes in hex, the first WACZ holding a
// digest named),
// a running crawl and a canceled one.
func browsertrixKeys(t *testing.T, c *redis.Conn, fx *fixture) {
	t.Helper()
	p := c.Pipeline()
	for _, r := range fx.byKey {
		if r.crawl != "c0" || r.status != 0 {
			continue
		}
		d, _ := DateDigits(r.date)
		wacz := 0
		if r.wacz == "c0-b.wacz" {
			wacz = 1
		}
		p.Send("HSETNX", "h:bx", key(r.digest), Entry{wacz, d, r.uri, r.length}.String())
		p.Send("HSETNX", "alldupes", key(r.digest), "bx")
	}
	for _, n := range []string{"c0-a.wacz", "c0-b.wacz"} {
		f := fx.file(t, n)
		p.Send("RPUSH", "c:bx:wacz", WACZFile{f.Name, f.SHA256, f.Size}.String())
	}
	p.Send("HSET", "h:bx:counts", "totalUrls", "6", "totalCrawlSize", "1000")
	p.Send("SADD", "allcrawls", "bx", "gone")
	p.Send("SADD", "canceledcrawls", "gone")
	p.Send("SADD", "uncommittedcrawls", "running")
	p.Send("HSET", "h:running", key(payloadDigest("x")), "0 20240101000000 http://r/ 1")
	if _, err := p.Exec(); err != nil {
		t.Fatal(err)
	}
}

// TestImportBrowsertrix takes a crawl as the crawler commits it, and
// leaves out (naming them) the running and the canceled one.
func TestImportBrowsertrix(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	fx := newFixture(t, twoCrawls()[0])
	browsertrixKeys(t, c, fx)
	dir := filepath.Join(t.TempDir(), "index")
	var warned []string
	st, err := importInto(t, c, dir, fx.dir, ImportOptions{Warn: func(err error) { warned = append(warned, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Imported, []string{"bx"}) || !slices.Equal(st.Uncommitted, []string{"running"}) || !slices.Equal(st.Canceled, []string{"gone"}) {
		t.Fatalf("import: %+v", st)
	}
	if len(warned) != 2 || !strings.Contains(strings.Join(warned, "\n"), "crawl running left out: it is still running") {
		t.Errorf("warnings: %q", warned)
	}
	_, wantOriginals := facts(t, fx.index)
	_, gotOriginals := facts(t, dir)
	for i := range wantOriginals {
		if rest, ok := strings.CutPrefix(wantOriginals[i], "c0/"); ok {
			wantOriginals[i] = "bx/" + rest
		}
	}
	if !slices.Equal(gotOriginals, wantOriginals) {
		t.Errorf("originals:\n%s\nwant\n%s", strings.Join(gotOriginals, "\n"), strings.Join(wantOriginals, "\n"))
	}
	k := openIndex(t, dir).Registry.Crawl("bx")
	if k == nil || k.Records != 6 || !k.Imported || k.Files != 2 {
		t.Fatalf("crawl bx: %+v", k)
	}
}

// TestImportRefused: bad or inconsistent input is refused with a clear
// message, and nothing is committed to the index.
func TestImportRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, c *redis.Conn, fx *fixture, dir string)
		opt   ImportOptions
		err   string
	}{
		{name: "no h:CRAWL", err: "crawl c0 is committed (in allcrawls) but h:c0 is missing or empty: a partial key set",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) { c.Do("DEL", "h:c0") }},
		{name: "no c:CRAWL:wacz", err: "c:c1:wacz is missing or empty",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) { c.Do("DEL", "c:c1:wacz") }},
		{name: "a WACZ missing from the list", err: "h:c0 holds 4 digests, the crawl's WACZ files (c0-a.wacz) have records of 2 of them",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) { c.Do("RPOP", "c:c0:wacz") }},
		{name: "a WACZ not there", err: "c0-b.wacz: no such file",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				os.Remove(filepath.Join(fx.dir, "c0-b.wacz"))
			}},
		{name: "a WACZ of another hash", err: "c1.wacz has SHA-256",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				f := fx.file(t, "c1.wacz")
				c.Do("LSET", "c:c1:wacz", "0", WACZFile{f.Name, strings.Repeat("0", 64), f.Size}.String())
			}},
		{name: "a WACZ of another size", err: "c1.wacz is",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				f := fx.file(t, "c1.wacz")
				c.Do("LSET", "c:c1:wacz", "0", WACZFile{f.Name, f.SHA256, f.Size + 1}.String())
			}},
		{name: "a damaged WACZ", err: "not a WACZ (ZIP) package",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				name := filepath.Join(fx.dir, "c1.wacz")
				os.WriteFile(name, []byte("PK\x03\x04 not a zip"), 0o644)
				f := fx.file(t, "c1.wacz")
				c.Do("LSET", "c:c1:wacz", "0", WACZFile{f.Name, f.SHA256, f.Size}.String())
			}},
		{name: "a WARC member deflated", err: "c1.wacz: archive/data.warc.gz is compressed by ZIP (method 8): WARC members of a WACZ are stored",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				name := filepath.Join(fx.dir, "c1.wacz")
				rewriteZip(t, name, zip.Deflate)
				f := fx.file(t, "c1.wacz")
				c.Do("LSET", "c:c1:wacz", "0", WACZFile{f.Name, f.SHA256, f.Size}.String())
			}},
		{name: "a malformed entry", err: "h:c1: ",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				c.Do("DEL", "h:c1")
				c.Do("HSET", "h:c1", key(payloadDigest("delta")), "0 2024 http://ex.org/new")
			}},
		{name: "a digest of another algorithm", err: "h:c1 holds sha1 digests (AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH), the index sha256 digests",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				c.Do("DEL", "h:c1")
				c.Do("HSET", "h:c1", "AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH", "0 20240101000000 http://x/ 1")
			}},
		{name: "a crawl in both indexes with other files", err: "crawl c1 is in both indexes with other files (the Redis lists no other.wacz)",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				orig := filepath.Join(t.TempDir(), "o")
				writeText(t, orig, []string{"c1/other.wacz 0 10 http://w/ 2024-04-01T00:00:00Z " + payloadDigest("w")})
				if _, err := crawlindex.Commit(dir, crawlindex.Change{Add: &crawlindex.Crawl{Name: "c1", Location: fx.dir},
					Files: []crawlindex.FileInfo{{Name: "other.wacz", Size: 10}}, Originals: orig}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a crawl id that is no crawl name", err: "crawl ../x cannot be a crawl of the index",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) { c.Do("SADD", "allcrawls", "../x") }},
		{name: "a file name that leaves the directory", err: `lists "../c1.wacz", which is not a file name`,
			setup: func(t *testing.T, c *redis.Conn, fx *fixture, dir string) {
				c.Do("LSET", "c:c1:wacz", "0", `{"filename":"../c1.wacz"}`)
			}},
		{name: "a crawl not in the Redis", err: "crawl c7 is not in the Redis", opt: ImportOptions{Crawls: []string{"c7"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redistest.Start(t)
			conn := dial(t, srv)
			fx := newFixture(t, twoCrawls()...)
			export(t, conn, fx.index, ExportOptions{})
			dir := filepath.Join(t.TempDir(), "index")
			if c.setup != nil {
				c.setup(t, conn, fx, dir)
			}
			var before []crawlFacts
			if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err == nil {
				before, _ = facts(t, dir)
			}
			_, err := importInto(t, conn, dir, fx.dir, c.opt)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("import: %v; want an error saying %q", err, c.err)
			}
			if before == nil {
				if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err == nil {
					t.Fatal("a refused import committed to the index")
				}
			} else if after, _ := facts(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("a refused import changed the index:\n%+v\nwas\n%+v", after, before)
			}
		})
	}
}

// rewriteZip writes a ZIP again with every member compressed by method.
func rewriteZip(t *testing.T, name string, method uint16) {
	t.Helper()
	ziptest.Rewrite{Header: func(_ int, h *zip.FileHeader) {
		*h = zip.FileHeader{Name: h.Name, Method: method}
	}}.File(t, name)
}

// TestImportNamed imports the crawls named; a running one named is left
// out and said so.
func TestImportNamed(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	fx := newFixture(t, twoCrawls()...)
	export(t, c, fx.index, ExportOptions{})
	c.Do("SADD", "uncommittedcrawls", "running")
	dir := filepath.Join(t.TempDir(), "index")
	st, err := importInto(t, c, dir, fx.dir, ImportOptions{Crawls: []string{"c0", "running"}})
	if err != nil || !slices.Equal(st.Imported, []string{"c0"}) || !slices.Equal(st.Uncommitted, []string{"running"}) {
		t.Fatalf("import of c0 and running: %+v %v", st, err)
	}
}

// TestImportNeedsFiles: the files a crawl's revisits need are those that
// hold the originals, whatever WACZ index the entries give (Browsertrix's
// indexer writes 0 for every WACZ of a crawl), both when the needed crawl
// is imported at the same time and when it is already in the index.
func TestImportNeedsFiles(t *testing.T) {
	for _, together := range []bool{true, false} {
		t.Run(fmt.Sprintf("together=%v", together), func(t *testing.T) {
			srv := redistest.Start(t)
			c := dial(t, srv)
			fx := newFixture(t, twoCrawls()...)
			export(t, c, fx.index, ExportOptions{})
			kv, err := redis.Strings(c.Do("HGETALL", "h:c0"))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(kv); i += 2 {
				e, _ := ParseEntry(kv[i+1])
				e.WACZ = 0
				c.Do("HSET", "h:c0", kv[i], e.String())
			}
			back := filepath.Join(t.TempDir(), "back")
			if !together {
				if _, err := importInto(t, c, back, fx.dir, ImportOptions{Crawls: []string{"c0"}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := importInto(t, c, back, fx.dir, ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			want, _ := facts(t, fx.index)
			got, _ := facts(t, back)
			if fmt.Sprint(got[1].Requires) != fmt.Sprint(want[1].Requires) {
				t.Errorf("c1 requires %q, want %q", got[1].Requires, want[1].Requires)
			}
		})
	}
}

// TestImportOtherAlgorithmInWACZ: a WACZ whose index has SHA-1 digests
// for a crawl whose entries are SHA-256 stops the import, nothing
// committed.
func TestImportOtherAlgorithmInWACZ(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	fx := newFixture(t, twoCrawls()...)
	export(t, c, fx.index, ExportOptions{})
	// c1.wacz again, its index's digests SHA-1.
	w := fxWACZ{name: "c1.wacz", records: []*fxRecord{{uri: "http://ex.org/new", date: "2024-02-01T00:00:03.250Z", body: "delta"}}}
	w.records[0].crawl, w.records[0].wacz = "c1", "c1.wacz"
	w.records[0].digest = "sha1:AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH"
	f := fx.writeWACZ(t, w)
	c.Do("LSET", "c:c1:wacz", "0", WACZFile{f.Name, f.SHA256, f.Size}.String())
	dir := filepath.Join(t.TempDir(), "index")
	_, err := importInto(t, c, dir, fx.dir, ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), "c1.wacz: line 1: digest sha1:AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH: a digest of another algorithm than the index's (sha256)") {
		t.Fatalf("import: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err == nil {
		t.Fatal("a refused import committed to the index")
	}
}
