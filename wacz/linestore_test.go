package wacz

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
)

// linesWARC is a gzip WARC of what warcindex reads with care: POST and
// PUT requests whose bodies make queries (before and after their
// responses), records it skips (warcinfo, a request alone, warc-fields
// metadata), a resource, a response that is no HTTP, and a revisit.
func linesWARC() []byte {
	const date = "2024-01-02T03:04:05Z"
	resp := func(uri, body string) string {
		return warctest.Record("response", uri, date,
			"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "+fmt.Sprint(len(body))+"\r\n\r\n"+body,
			"WARC-Payload-Digest: sha1:"+sha1Base32(body))
	}
	post := "POST /form HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\na=1&b=2"
	put := "PUT /api HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"k\":\"value\"}"
	return warctest.Gzip(
		warctest.Record("warcinfo", "", date, "software: test\r\n", "Content-Type: application/warc-fields"),
		warctest.Record("request", "http://example.com/form", date, post),
		resp("http://example.com/form", "<html>posted</html>"),
		resp("http://example.com/api", "<html>put</html>"),
		warctest.Record("request", "http://example.com/api", date, put),
		warctest.Record("request", "http://example.com/alone", date, "GET /alone HTTP/1.1\r\n\r\n"),
		warctest.Record("metadata", "http://example.com/form", date, "via: x\r\n", "Content-Type: application/warc-fields"),
		warctest.Record("resource", "http://example.com/r.txt", date, "plain text", "Content-Type: text/plain"),
		warctest.Record("response", "http://example.com/nothttp", date, "no HTTP here\r\n\r\nbody"),
		warctest.Record("revisit", "http://example.com/again", date, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
			"WARC-Payload-Digest: sha1:"+sha1Base32("<html>posted</html>")),
		resp("http://example.com/last", "<html>last</html>"),
	)
}

// plainWARC is an uncompressed WARC: lengths without the CRLF CRLF.
func plainWARC() []byte {
	return []byte(warctest.Response("http://example.com/plain", "2024-01-02T03:04:06Z", "plain body") +
		warctest.Record("metadata", "http://example.com/plain", "2024-01-02T03:04:06Z", "{}", "Content-Type: application/json"))
}

// indexMembers are index members of the lines (sorted) in the forms
// named: "cdxj" (indexes/index.cdxj), "zipnum" (indexes/index.cdx.gz and
// .idx, two lines a block).
func indexMembersOf(lines []string, forms ...string) []testMember {
	var out []testMember
	for _, form := range forms {
		switch form {
		case "cdxj":
			out = append(out, testMember{name: "indexes/index.cdxj", data: strings.Join(lines, "\n") + "\n"})
		case "zipnum":
			var blocks bytes.Buffer
			idx := `!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}` + "\n"
			for i := 0; i < len(lines); i += 2 {
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				zw.Write([]byte(strings.Join(lines[i:min(i+2, len(lines))], "\n") + "\n"))
				zw.Close()
				sum := sha256.Sum256(b.Bytes())
				idx += fmt.Sprintf("%s {\"offset\":%d,\"length\":%d,\"digest\":\"sha256:%x\",\"filename\":\"index.cdx.gz\"}\n", lineKey([]byte(lines[i])), blocks.Len(), b.Len(), sum)
				blocks.Write(b.Bytes())
			}
			out = append(out, testMember{name: "indexes/index.cdx.gz", data: blocks.String()}, testMember{name: "indexes/index.idx", data: idx})
		}
	}
	return out
}

// storeLines lists every WARC member of the package at path through
// warcsum with a LineStore's writers, as the hash stage does.
func storeLines(t *testing.T, store *LineStore, path string, p *Package) {
	t.Helper()
	var inputs []warcsum.Input
	for _, m := range p.WARCs() {
		inputs = append(inputs, warcsum.Input{Path: path, Name: JoinName("x.wacz", m.Name), Size: m.Size, Offset: m.DataOffset, Stamp: stampOf(m)})
	}
	var writers []*LinesWriter
	r := warcsum.Runner{Jobs: 1, Index: func(in warcsum.Input) warcsum.FileIndex {
		w, err := store.Writer(in.Name, in.Stamp)
		if err != nil {
			t.Error(err)
			return nil
		}
		writers = append(writers, w)
		return w
	}}
	if _, err := r.Run(inputs, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, w := range writers {
		if w.Err != nil {
			t.Errorf("lines not kept: %v", w.Err)
		}
	}
}

func stampOf(m *Member) string { return MemberStamp(m) }

// rewriteCopy stages a copy of a member's bytes at dir/name and replaces
// it with the rewritten bytes as the rewrite does (a new file renamed
// over it): the Replacement the rewrite hands over.
func rewriteCopy(t *testing.T, dir, name, member string, old, new []byte, entries []rewritelog.Entry) rewritelog.Replacement {
	t.Helper()
	p := writeTemp(t, dir, name, old)
	oldFi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	tmp := writeTemp(t, dir, name+".tmp", new)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	newFi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return rewritelog.Replacement{Name: member, Path: p, Old: oldFi, New: newFi, Entries: entries}
}

// knownLinesOf is a rebuild's KnownLines from the store: derived lines
// for the replaced members (copied: their copies as staged), the
// members' own for the others.
func knownLinesOf(store *LineStore, p *Package, replace map[string]Replacement, copied map[string]os.FileInfo) func(string) *os.File {
	return func(member string) *os.File {
		m := p.Member(member)
		name := JoinName("x.wacz", member)
		if r, ok := replace[member]; ok {
			fi, err := os.Stat(r.Path)
			if err != nil {
				return nil
			}
			return store.ReadDerived(name, stampOf(m), copied[member], fi)
		}
		return store.Read(name, stampOf(m))
	}
}

// indexBytes are the package's index members' stored bytes, by name.
func indexBytes(t *testing.T, p *Package) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, m := range p.Members {
		if strings.HasPrefix(m.Name, "indexes/") {
			b, err := io.ReadAll(p.Raw(m))
			if err != nil {
				t.Fatal(err)
			}
			out[m.Name] = b
		}
	}
	return out
}

// TestKnownLinesRebuild proves that a fresh index made from the hash
// stage's lines (LineStore: lines of the members as read, derived for the
// rewritten ones) is, byte for byte, the one made by reading the new
// members, and warcindex's lines of them, in every form; and that the
// members are not read for it.
func TestKnownLinesRebuild(t *testing.T) {
	type warcMember struct {
		name     string
		data     []byte
		revisits []int // indexes among its responses made revisits; nil: not replaced
	}
	cases := []struct {
		name    string
		members []warcMember
		forms   []string
	}{
		{"revisits, plain CDXJ", []warcMember{{"archive/data.warc.gz", testWARC(), []int{1, 2}}}, []string{"cdxj"}},
		{"revisits, ZipNum", []warcMember{{"archive/data.warc.gz", testWARC(), []int{0, 3}}}, []string{"zipnum"}},
		{"POST and PUT bodies, records warcindex skips", []warcMember{{"archive/posts.warc.gz", linesWARC(), []int{0, 1, 3}}}, []string{"cdxj"}},
		{"a member not replaced beside a replaced one", []warcMember{
			{"archive/a.warc.gz", linesWARC(), []int{1}},
			{"archive/b.warc", plainWARC(), nil},
			{"archive/c.warc.gz", testWARC(), nil},
		}, []string{"zipnum"}},
		{"two indexes", []warcMember{
			{"archive/a.warc.gz", testWARC(), []int{2}},
			{"archive/b.warc.gz", linesWARC(), []int{0}},
		}, []string{"cdxj", "zipnum"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var members []testMember
			var oldLines []string
			for _, wm := range c.members {
				members = append(members, testMember{name: wm.name, data: string(wm.data)})
				oldLines = append(oldLines, freshLinesOf(t, IndexName(wm.name), wm.data)...)
			}
			slices.Sort(oldLines)
			members = append(members, indexMembersOf(oldLines, c.forms...)...)
			path := writeTemp(t, dir, "x.wacz", packageBytes(members))
			old := openFile(t, path)
			store := &LineStore{Dir: filepath.Join(dir, "lines")}
			storeLines(t, store, path, old)

			replace := map[string]Replacement{}
			copied := map[string]os.FileInfo{}
			var newLines []string
			for _, wm := range c.members {
				if wm.revisits == nil {
					newLines = append(newLines, freshLinesOf(t, IndexName(wm.name), wm.data)...)
					continue
				}
				offsets := responseOffsets(t, wm.data)
				var at []int64
				for _, i := range wm.revisits {
					at = append(at, offsets[i])
				}
				rw := revisitsOf(t, wm.data, JoinName("x.wacz", wm.name), at...)
				rp := rewriteCopy(t, dir, filepath.Base(wm.name)+".copy", JoinName("x.wacz", wm.name), wm.data, rw.data, rw.entries)
				if err := store.Derive(rp, stampOf(old.Member(wm.name))); err != nil {
					t.Fatal(err)
				}
				replace[wm.name] = Replacement{Path: rp.Path}
				copied[wm.name] = rp.Old
				newLines = append(newLines, freshLinesOf(t, IndexName(wm.name), rw.data)...)
			}
			slices.Sort(newLines)

			known, kres := rebuildTo(t, &Rebuild{Source: old, Replace: replace, FreshIndex: true, KnownLines: knownLinesOf(store, old, replace, copied)}, dir, "known.wacz")
			fresh, fres := rebuildTo(t, &Rebuild{Source: old, Replace: replace, FreshIndex: true}, dir, "fresh.wacz")
			if len(c.forms) == 1 {
				// (A fresh index writes every member's lines into each
				// index, which the check of two indexes finds twice.)
				checkClean(t, known)
			}
			if kres.IndexedMembers || !fres.IndexedMembers {
				t.Errorf("members read for the index: from known lines %v, fresh %v; want false, true", kres.IndexedMembers, fres.IndexedMembers)
			}
			kb, fb := indexBytes(t, known), indexBytes(t, fresh)
			if len(kb) != len(fb) || len(kb) == 0 {
				t.Errorf("index members %d, fresh %d", len(kb), len(fb))
			}
			for name, b := range fb {
				if !bytes.Equal(kb[name], b) {
					t.Errorf("%s differs from the fresh index's", name)
				}
			}
			want := newLines
			if len(c.forms) == 2 {
				want = append(slices.Clone(newLines), newLines...)
			}
			if got := indexLines(t, known); !slices.Equal(got, want) {
				t.Errorf("index:\n%s\nwarcindex of the new members:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestKnownLinesFallback proves that lines missing, of another version
// of a member or of its copy, or cut short, are not used: the index is
// made by reading the members, and is right.
func TestKnownLinesFallback(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(t *testing.T, store *LineStore, replaced, kept string)
		// derive: whether Derive should succeed after spoil.
		derive bool
	}{
		{"lines of a member not replaced missing", func(t *testing.T, s *LineStore, _, kept string) {
			os.Remove(s.path(kept, false))
		}, true},
		{"lines of the member rewritten missing", func(t *testing.T, s *LineStore, replaced, _ string) {
			os.Remove(s.path(replaced, false))
		}, false},
		{"lines of another version of a member", func(t *testing.T, s *LineStore, _, kept string) {
			b, _ := os.ReadFile(s.path(kept, false))
			os.WriteFile(s.path(kept, false), bytes.Replace(b, []byte("wacz-member"), []byte("wacz-member 0"), 1), 0o644)
		}, true},
		{"lines of the member as it was before a kill, cut short", func(t *testing.T, s *LineStore, _, kept string) {
			b, _ := os.ReadFile(s.path(kept, false))
			os.WriteFile(s.path(kept, false), b[:len(b)-10], 0o644)
		}, true},
		{"the copy changed after its lines were derived", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := testWARC(), linesWARC()
			var lines []string
			lines = append(freshLinesOf(t, "a.warc.gz", a), freshLinesOf(t, "b.warc.gz", b)...)
			slices.Sort(lines)
			members := append([]testMember{{name: "archive/a.warc.gz", data: string(a)}, {name: "archive/b.warc.gz", data: string(b)}}, indexMembersOf(lines, "cdxj")...)
			path := writeTemp(t, dir, "x.wacz", packageBytes(members))
			old := openFile(t, path)
			store := &LineStore{Dir: filepath.Join(dir, "lines")}
			storeLines(t, store, path, old)
			replaced, kept := JoinName("x.wacz", "archive/a.warc.gz"), JoinName("x.wacz", "archive/b.warc.gz")
			if c.spoil != nil {
				c.spoil(t, store, replaced, kept)
			}
			rw := revisitsOf(t, a, replaced, responseOffsets(t, a)[1])
			rp := rewriteCopy(t, dir, "a.warc.gz.copy", replaced, a, rw.data, rw.entries)
			err := store.Derive(rp, stampOf(old.Member("archive/a.warc.gz")))
			if (err == nil) != c.derive {
				t.Fatalf("Derive: %v, want success %v", err, c.derive)
			}
			if c.spoil == nil {
				// Rewritten again, as a rerun would: another version.
				rw = revisitsOf(t, a, replaced, responseOffsets(t, a)[1], responseOffsets(t, a)[2])
				tmp := writeTemp(t, dir, "again.tmp", rw.data)
				if err := os.Rename(tmp, rp.Path); err != nil {
					t.Fatal(err)
				}
			}
			replace := map[string]Replacement{"archive/a.warc.gz": {Path: rp.Path}}
			copied := map[string]os.FileInfo{"archive/a.warc.gz": rp.Old}
			p, res := rebuildTo(t, &Rebuild{Source: old, Replace: replace, FreshIndex: true, KnownLines: knownLinesOf(store, old, replace, copied)}, dir, "new.wacz")
			checkClean(t, p)
			if !res.IndexedMembers {
				t.Errorf("the index was made from lines that are not the members'")
			}
			want := append(freshLinesOf(t, "a.warc.gz", rw.data), freshLinesOf(t, "b.warc.gz", b)...)
			slices.Sort(want)
			if got := indexLines(t, p); !slices.Equal(got, want) {
				t.Errorf("index:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
