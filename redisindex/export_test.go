package redisindex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/redis"
	"warcdedup/internal/redistest"
)

// twoCrawls are c0 (two WACZ files: a payload twice, a 404) and c1 (one
// WACZ: revisits of both of c0's files, a payload c0 also holds, a
// revisit within itself).
func twoCrawls() []fxCrawl {
	return []fxCrawl{
		{name: "c0", waczs: []fxWACZ{
			{name: "c0-a.wacz", records: []*fxRecord{
				{uri: "http://ex.com/a", date: "2024-01-01T00:00:01Z", body: "alpha"},
				{uri: "http://ex.com/b", date: "2024-01-01T00:00:02Z", body: "beta"},
				{uri: "http://ex.com/404", date: "2024-01-01T00:00:03Z", body: "beta", status: 404},
				{uri: "http://ex.com/a2", date: "2024-01-01T00:00:04Z", body: "alpha"},
			}},
			{name: "c0-b.wacz", records: []*fxRecord{
				{uri: "http://ex.com/c", date: "2024-01-01T00:00:05Z", body: "gamma"},
				{uri: "http://ex.com/common", date: "2024-01-01T00:00:06Z", body: "common"},
			}},
		}},
		{name: "c1", waczs: []fxWACZ{
			{name: "c1.wacz", records: []*fxRecord{
				{uri: "http://ex.com/a", date: "2024-02-01T00:00:01Z", revisitOf: "http://ex.com/a 2024-01-01T00:00:01Z"},
				{uri: "http://ex.com/c", date: "2024-02-01T00:00:02Z", revisitOf: "http://ex.com/c 2024-01-01T00:00:05Z"},
				{uri: "http://ex.org/new", date: "2024-02-01T00:00:03.250Z", body: "delta"},
				{uri: "http://ex.org/common", date: "2024-02-01T00:00:04Z", body: "common"},
				{uri: "http://ex.org/new2", date: "2024-02-01T00:00:05Z", revisitOf: "http://ex.org/new 2024-02-01T00:00:03.250Z"},
			}},
		}},
	}
}

func openIndex(t *testing.T, dir string) *crawlindex.Index {
	t.Helper()
	ix, err := crawlindex.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func export(t *testing.T, c *redis.Conn, dir string, opt ExportOptions) *ExportStats {
	t.Helper()
	st, err := Export(context.Background(), c, openIndex(t, dir), opt)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func key(digest string) string {
	k, err := DigestKey(digest)
	if err != nil {
		panic(err)
	}
	return k
}

// TestExportKeys writes two crawls and checks every key the crawler
// reads, entry for entry.
func TestExportKeys(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	fx := newFixture(t, twoCrawls()...)
	st := export(t, c, fx.index, ExportOptions{})
	if !slices.Equal(st.Added, []string{"c0", "c1"}) || st.Entries != 6 || st.NewDupes != 5 || st.LeftOut != 0 {
		t.Fatalf("stats %+v", st)
	}
	got := dump(t, c, keyExported)
	rec := func(uri, date string) *fxRecord { return fx.byKey[uri+" "+date] }
	entry := func(r *fxRecord, wacz int) string {
		d, _ := DateDigits(r.date)
		return key(r.digest) + " = " + Entry{wacz, d, r.uri, r.length}.String()
	}
	a, b := rec("http://ex.com/a", "2024-01-01T00:00:01Z"), rec("http://ex.com/b", "2024-01-01T00:00:02Z")
	cc, common0 := rec("http://ex.com/c", "2024-01-01T00:00:05Z"), rec("http://ex.com/common", "2024-01-01T00:00:06Z")
	delta, common1 := rec("http://ex.org/new", "2024-02-01T00:00:03.250Z"), rec("http://ex.org/common", "2024-02-01T00:00:04Z")
	hash := func(lines ...string) string {
		slices.Sort(lines)
		return "hash:\n  " + strings.Join(lines, "\n  ")
	}
	set := func(members ...string) string {
		slices.Sort(members)
		return "set:\n  " + strings.Join(members, "\n  ")
	}
	list := func(names ...string) string {
		var out []string
		for _, n := range names {
			f := fx.file(t, n)
			out = append(out, WACZFile{f.Name, f.SHA256, f.Size}.String())
		}
		return "list:\n  " + strings.Join(out, "\n  ")
	}
	size := func(names ...string) int64 {
		var n int64
		for _, name := range names {
			n += fx.file(t, name).Size
		}
		return n
	}
	want := map[string]string{
		// The earliest original of a digest is the crawl's entry (a, not a2).
		"h:c0":          hash(entry(a, 0), entry(b, 0), entry(cc, 1), entry(common0, 1)),
		"h:c1":          hash(entry(delta, 0), entry(common1, 0)),
		"c:c0:wacz":     list("c0-a.wacz", "c0-b.wacz"),
		"c:c1:wacz":     list("c1.wacz"),
		"h:c0:counts":   hash("totalUrls = 6", fmt.Sprintf("totalCrawlSize = %d", size("c0-a.wacz", "c0-b.wacz"))),
		"h:c1:counts":   hash("totalUrls = 5", "dupeUrls = 3", "conservedSize = 15", fmt.Sprintf("totalCrawlSize = %d", size("c1.wacz"))),
		"allcrawls":     set("c0", "c1"),
		"src:d":         set("c0-a.wacz", "c0-b.wacz", "c1.wacz"),
		"warcdedup:seq": "string:\n  2",
		// A digest both crawls hold goes to the one committed first.
		"alldupes": hash(key(a.digest)+" = c0", key(b.digest)+" = c0", key(cc.digest)+" = c0", key(common0.digest)+" = c0", key(delta.digest)+" = c1"),
		"allcounts": hash("totalUrls = 11", "dupeUrls = 3", "conservedSize = 15",
			fmt.Sprintf("totalCrawlSize = %d", size("c0-a.wacz", "c0-b.wacz", "c1.wacz"))),
	}
	compareDumps(t, got, want)

	// The owner records name the index.
	kv, err := redis.Strings(c.Do("HGETALL", keyExported))
	if err != nil || len(kv) != 4 {
		t.Fatalf("%s: %q %v", keyExported, kv, err)
	}
	for i := 0; i < len(kv); i += 2 {
		o, err := parseOwner(kv[i+1])
		if err != nil || o.Index != openIndex(t, fx.index).Dir || o.Fingerprint == "" {
			t.Errorf("owner of %s: %+v %v", kv[i], o, err)
		}
	}

	// The crawler's look-up, two reads: alldupes, then h:CRAWL.
	crawl, err := c.Do("HGET", "alldupes", key(a.digest))
	if err != nil || crawl.Str != "c0" {
		t.Fatalf("alldupes[a] = %+v %v", crawl, err)
	}
	v, err := c.Do("HGET", "h:"+crawl.Str, key(a.digest))
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseEntry(v.Str)
	if err != nil || e.URL != "http://ex.com/a" || e.Date != "20240101000001" {
		t.Fatalf("h:c0[a] = %q (%v)", v.Str, err)
	}
	w, err := c.Do("LINDEX", "c:c0:wacz", fmt.Sprint(e.WACZ))
	if err != nil || !strings.Contains(w.Str, `"filename":"c0-a.wacz"`) {
		t.Fatalf("c:c0:wacz[%d] = %q %v", e.WACZ, w.Str, err)
	}
}

func compareDumps(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("key %s:\n%s\nwant\n%s", k, got[k], w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("key %s is there and should not be:\n%s", k, got[k])
		}
	}
}

// TestExportIncremental: a crawl committed later is added alone, the
// others untouched; a crawl removed from the index leaves the Redis as
// the crawler's purge takes it out.
func TestExportIncremental(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	fx := newFixture(t, twoCrawls()...)
	export(t, c, fx.index, ExportOptions{})
	before := dump(t, c)
	// A mark in c0's keys: an export that rewrote them would lose it.
	if _, err := c.Do("HSET", "h:c0:counts", "mark", "1"); err != nil {
		t.Fatal(err)
	}
	// Browsertrix commits a crawl of its own that shares a payload with c2.
	shared := payloadDigest("shared with browsertrix")
	p := c.Pipeline()
	p.Send("HSET", "h:bx", key(shared), "0 20240301000000123 http://bx/s 99")
	p.Send("RPUSH", "c:bx:wacz", `{"filename":"bx.wacz","hash":"00","size":5}`)
	p.Send("SADD", "allcrawls", "bx")
	p.Send("HSETNX", "alldupes", key(shared), "bx")
	if _, err := p.Exec(); err != nil {
		t.Fatal(err)
	}

	fx.add(t, fxCrawl{name: "c2", waczs: []fxWACZ{{name: "c2.wacz", records: []*fxRecord{
		{uri: "http://ex.net/only", date: "2024-03-01T00:00:01Z", body: "only in c2"},
		{uri: "http://ex.net/s", date: "2024-03-01T00:00:02Z", body: "shared with browsertrix"},
		{uri: "http://ex.net/c", date: "2024-03-01T00:00:03Z", body: "common"},
	}}}})
	st := export(t, c, fx.index, ExportOptions{})
	if !slices.Equal(st.Added, []string{"c2"}) || !slices.Equal(st.Unchanged, []string{"c0", "c1"}) || st.Entries != 3 || st.NewDupes != 1 {
		t.Fatalf("second export: %+v", st)
	}
	after := dump(t, c)
	if !strings.Contains(after["h:c0:counts"], "mark = 1") || after["h:c0"] != before["h:c0"] || after["h:c1"] != before["h:c1"] {
		t.Fatal("the second export rewrote c0 or c1")
	}
	if v, _ := c.Do("HGET", "alldupes", key(shared)); v.Str != "bx" {
		t.Fatalf("alldupes of a digest Browsertrix's crawl held first: %q, want bx", v.Str)
	}
	if v, _ := c.Do("HGET", "alldupes", key(payloadDigest("only in c2"))); v.Str != "c2" {
		t.Fatalf("alldupes of c2's own digest: %q", v.Str)
	}

	// c2 leaves the index: it leaves the Redis. A digest only it held
	// leaves alldupes; one Browsertrix's crawl holds stays with it.
	if _, err := crawlindex.Commit(fx.index, crawlindex.Change{Remove: "c2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do("HDEL", "h:c0:counts", "mark"); err != nil {
		t.Fatal(err)
	}
	st = export(t, c, fx.index, ExportOptions{})
	if !slices.Equal(st.Removed, []string{"c2"}) || st.Dropped != 1 || len(st.Added) != 0 {
		t.Fatalf("export after the removal: %+v", st)
	}
	gone := dump(t, c, keyExported, keySeq)
	// The state is that of an export of c0 and c1 beside Browsertrix's bx.
	srv2 := redistest.Start(t)
	c2 := dial(t, srv2)
	p = c2.Pipeline()
	p.Send("HSET", "h:bx", key(shared), "0 20240301000000123 http://bx/s 99")
	p.Send("RPUSH", "c:bx:wacz", `{"filename":"bx.wacz","hash":"00","size":5}`)
	p.Send("SADD", "allcrawls", "bx")
	p.Send("HSETNX", "alldupes", key(shared), "bx")
	if _, err := p.Exec(); err != nil {
		t.Fatal(err)
	}
	export(t, c2, fx.index, ExportOptions{})
	compareDumps(t, gone, dump(t, c2, keyExported, keySeq))
}

// TestExportRemoveRepoints: when the crawl alldupes names for a digest
// leaves, the entry goes to another committed crawl that holds it, as the
// crawler's purge (which recommits the crawls kept) gives.
func TestExportRemoveRepoints(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	fx := newFixture(t, twoCrawls()...)
	export(t, c, fx.index, ExportOptions{})
	common := key(payloadDigest("common"))
	if v, _ := c.Do("HGET", "alldupes", common); v.Str != "c0" {
		t.Fatalf("alldupes[common] = %q", v.Str)
	}
	st := export(t, c, fx.index, ExportOptions{Withdraw: true, Crawls: []string{"c0"}})
	if !slices.Equal(st.Removed, []string{"c0"}) || st.Repointed != 1 || st.Dropped != 3 {
		t.Fatalf("withdrawing c0: %+v", st)
	}
	if v, _ := c.Do("HGET", "alldupes", common); v.Str != "c1" {
		t.Fatalf("alldupes[common] after c0 left = %q, want c1 (which holds it)", v.Str)
	}
	got := dump(t, c)
	for _, k := range []string{"h:c0", "c:c0:wacz", "h:c0:counts"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s is still there", k)
		}
	}
	if strings.Contains(got["allcrawls"], "c0") || strings.Contains(got["src:d"], "c0-") {
		t.Errorf("c0 is still in allcrawls or src:d:\n%s\n%s", got["allcrawls"], got["src:d"])
	}
	if !strings.Contains(got["allcounts"], "totalUrls = 5") {
		t.Errorf("allcounts after c0 left:\n%s", got["allcounts"])
	}
	// Withdrawing everything leaves nothing the export wrote but its
	// counters at zero.
	export(t, c, fx.index, ExportOptions{Withdraw: true})
	left := dump(t, c)
	delete(left, keySeq)
	if a := left["allcounts"]; a != "hash:\n  conservedSize = 0\n  dupeUrls = 0\n  totalCrawlSize = 0\n  totalUrls = 0" {
		t.Errorf("allcounts after withdrawing all: %s", a)
	}
	delete(left, "allcounts")
	if len(left) != 0 {
		t.Errorf("after withdrawing every crawl: %v", left)
	}
}

// TestExportReplace: a crawl whose files changed in the index (its
// revisits restored when a crawl it needed left) is written again.
func TestExportReplace(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	fx := newFixture(t, twoCrawls()...)
	export(t, c, fx.index, ExportOptions{})
	ix := openIndex(t, fx.index)
	files, err := ix.Files("c1")
	if err != nil {
		t.Fatal(err)
	}
	files[0].SHA256 = strings.Repeat("1", 64)
	var lines []string
	for _, l := range indexOriginals(t, ix) {
		if strings.HasPrefix(l, "c1/") && !strings.Contains(l, "ex.org/common") {
			lines = append(lines, l)
		}
	}
	orig := filepath.Join(t.TempDir(), "c1")
	writeText(t, orig, lines)
	if _, err := crawlindex.Commit(fx.index, crawlindex.Change{Replace: map[string][]crawlindex.FileInfo{"c1": files}, Originals: orig}); err != nil {
		t.Fatal(err)
	}
	st := export(t, c, fx.index, ExportOptions{})
	if !slices.Equal(st.Replaced, []string{"c1"}) || !slices.Equal(st.Unchanged, []string{"c0"}) {
		t.Fatalf("stats %+v", st)
	}
	got := dump(t, c)
	if !strings.Contains(got["c:c1:wacz"], strings.Repeat("1", 64)) || strings.Contains(got["h:c1"], key(payloadDigest("common"))) {
		t.Fatalf("c1 not replaced:\n%s\n%s", got["c:c1:wacz"], got["h:c1"])
	}
	if v, _ := c.Do("HGET", "alldupes", key(payloadDigest("delta"))); v.Str != "c1" {
		t.Fatalf("alldupes[delta] = %q after c1 was replaced", v.Str)
	}
	for k := range got {
		if strings.HasPrefix(k, stagePrefix) || strings.HasPrefix(k, retiredPrefix) {
			t.Errorf("%s left", k)
		}
	}
}

// TestExportRefused: what an export refuses, with a message, writing
// nothing.
func TestExportRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, c *redis.Conn, fx *fixture)
		opt   ExportOptions
		err   string
	}{
		{name: "a crawl still running in Browsertrix", err: "crawl c1 is running in Browsertrix",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture) { c.Do("SADD", "uncommittedcrawls", "c1") }},
		{name: "a crawl of another writer with other files", err: "crawl c0 is committed to the Redis by another writer with other files (the Redis lists no c0-a.wacz)",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture) {
				c.Do("SADD", "allcrawls", "c0")
				c.Do("RPUSH", "c:c0:wacz", `{"filename":"other.wacz"}`)
			}},
		{name: "a crawl of another writer with another hash", err: "c0-b.wacz has SHA-256 ff",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture) {
				c.Do("SADD", "allcrawls", "c0")
				a, b := fx.file(t, "c0-a.wacz"), fx.file(t, "c0-b.wacz")
				c.Do("RPUSH", "c:c0:wacz", WACZFile{a.Name, a.SHA256, a.Size}.String(), WACZFile{b.Name, strings.Repeat("ff", 32), b.Size}.String())
			}},
		{name: "keys of a crawl that is not committed", err: "crawl c1 is not committed to the Redis, but h:c1 exist",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture) { c.Do("HSET", "h:c1", "x", "0 20240101000000 u 1") }},
		{name: "digests of another algorithm", err: "alldupes holds sha1 digests (AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH, of crawl old)",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture) {
				c.Do("HSET", "alldupes", "AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH", "old")
			}},
		{name: "digests of no algorithm", err: "alldupes holds digest \"xyz\": neither",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture) { c.Do("HSET", "alldupes", "xyz", "old") }},
		{name: "another export running", err: "another export is writing to the Redis",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture) { c.Do("SET", keyLock, "host pid 1") }},
		{name: "an unknown crawl named", err: "crawl c9 is neither committed to the index", opt: ExportOptions{Crawls: []string{"c9"}}},
		{name: "WARC files", err: "crawl c3: c3.warc.gz is no WACZ package",
			setup: func(t *testing.T, c *redis.Conn, fx *fixture) {
				orig := filepath.Join(t.TempDir(), "o")
				writeText(t, orig, []string{"c3/c3.warc.gz 0 10 http://w/ 2024-04-01T00:00:00Z " + payloadDigest("w")})
				if _, err := crawlindex.Commit(fx.index, crawlindex.Change{Add: &crawlindex.Crawl{Name: "c3", Location: fx.dir},
					Files: []crawlindex.FileInfo{{Name: "c3.warc.gz", Size: 10}}, Originals: orig}); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redistest.Start(t)
			conn := dial(t, srv)
			fx := newFixture(t, twoCrawls()...)
			if c.setup != nil {
				c.setup(t, conn, fx)
			}
			before := dump(t, conn)
			_, err := Export(context.Background(), conn, openIndex(t, fx.index), c.opt)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("export: %v; want an error saying %q", err, c.err)
			}
			compareDumps(t, dump(t, conn), before)
		})
	}
}

// TestExportSHA1 refuses a SHA-1 index unless told the crawls run with
// --useSHA1, and then writes its digests as the crawler keys them.
func TestExportSHA1(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv)
	dir := filepath.Join(t.TempDir(), "index")
	orig := filepath.Join(t.TempDir(), "o")
	writeText(t, orig, []string{"s/s.wacz 0 10 http://w/ 2024-04-01T00:00:00Z sha1:AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH"})
	if _, err := crawlindex.Commit(dir, crawlindex.Change{Add: &crawlindex.Crawl{Name: "s", Location: t.TempDir()},
		Files: []crawlindex.FileInfo{{Name: "s.wacz", Size: 10}}, Originals: orig}); err != nil {
		t.Fatal(err)
	}
	_, err := Export(context.Background(), c, openIndex(t, dir), ExportOptions{})
	if err == nil || !strings.Contains(err.Error(), "holds SHA-1 digests") || !strings.Contains(err.Error(), "--sha1") {
		t.Fatalf("SHA-1 index: %v", err)
	}
	if n := len(dump(t, c)); n != 0 {
		t.Fatalf("%d keys written by a refused export", n)
	}
	export(t, c, dir, ExportOptions{SHA1: true})
	if v, _ := c.Do("HGET", "h:s", "AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH"); v.Str != "0 20240401000000 http://w/ 10" {
		t.Fatalf("h:s = %q", v.Str)
	}
}

// TestExportResumed stops an export at each point (as a kill would) and
// runs it again: no crawl is ever visible half written, and the rerun
// ends where a clean export ends.
func TestExportResumed(t *testing.T) {
	for _, point := range []string{"staged", "committed", "removed"} {
		t.Run(point, func(t *testing.T) {
			srv := redistest.Start(t)
			c := dial(t, srv)
			fx := newFixture(t, twoCrawls()...)
			export(t, c, fx.index, ExportOptions{Crawls: []string{"c0"}})
			fx.add(t, fxCrawl{name: "c2", waczs: []fxWACZ{{name: "c2.wacz", records: []*fxRecord{
				{uri: "http://ex.net/only", date: "2024-03-01T00:00:01Z", body: "only in c2"},
				{uri: "http://ex.net/c", date: "2024-03-01T00:00:03Z", body: "common"},
			}}}})
			if _, err := crawlindex.Commit(fx.index, crawlindex.Change{Remove: "c0", Force: true}); err != nil {
				t.Fatal(err)
			}
			crash := errors.New("killed")
			testHook = func(at string) error {
				if at == point {
					return crash
				}
				return nil
			}
			_, err := Export(context.Background(), c, openIndex(t, fx.index), ExportOptions{})
			testHook = nil
			if !errors.Is(err, crash) {
				t.Fatalf("export: %v, want the crash", err)
			}
			// A crawl half written is not visible: no crawl of allcrawls
			// lacks its keys.
			crawls, _ := redis.Strings(c.Do("SMEMBERS", "allcrawls"))
			for _, k := range crawls {
				if n, _ := redis.Int64(c.Do("EXISTS", "h:"+k, "c:"+k+":wacz", "h:"+k+":counts")); n != 3 {
					t.Errorf("crawl %s committed with %d of its 3 keys", k, n)
				}
			}
			c.Do("DEL", keyLock) // the killed export's lock, which would expire
			st := export(t, c, fx.index, ExportOptions{})
			if st.Finished == 0 && point == "staged" {
				t.Errorf("the rerun found nothing to finish: %+v", st)
			}
			// The end state is a clean export's.
			srv2 := redistest.Start(t)
			c2 := dial(t, srv2)
			export(t, c2, fx.index, ExportOptions{})
			compareDumps(t, dump(t, c, keyExported, keySeq), dump(t, c2, keyExported, keySeq))
		})
	}
}

func writeText(t *testing.T, name string, lines []string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExportNoScripts: a Redis that refuses scripts (here an ACL) gets
// the same keys, one HSETNX a claim.
func TestExportNoScripts(t *testing.T) {
	fx := newFixture(t, twoCrawls()...)
	srv := redistest.Start(t)
	c := dial(t, srv)
	export(t, c, fx.index, ExportOptions{})
	srv2 := redistest.Start(t)
	c2 := dial(t, srv2)
	if _, err := c2.Do("ACL", "SETUSER", "default", "-@scripting"); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Do("EVAL", "return 1", "0"); err == nil {
		t.Fatal("EVAL still allowed")
	}
	st := export(t, c2, fx.index, ExportOptions{})
	if st.NewDupes != 5 {
		t.Errorf("new alldupes entries %d, want 5", st.NewDupes)
	}
	compareDumps(t, dump(t, c2, keyExported, keySeq), dump(t, c, keyExported, keySeq))
}
