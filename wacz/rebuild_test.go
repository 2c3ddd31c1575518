package wacz

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"warcdedup/record"
	"warcdedup/rewritelog"
)

var rebuildTime = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// rewrite is a test's stand-in for warcrefs: records of a gzip WARC
// member made revisits, and the log entries that say so.
type rewrite struct {
	data    []byte
	entries []rewritelog.Entry
}

// revisitsOf rewrites the responses at the given offsets of a gzip WARC
// as revisits (WARC header kept but for type, length and the revisit
// fields; the HTTP head as block), named file in the log.
func revisitsOf(t *testing.T, warc []byte, file string, offsets ...int64) rewrite {
	t.Helper()
	rr, err := record.NewReader(bytes.NewReader(warc), "test")
	if err != nil {
		t.Fatal(err)
	}
	rr.KeepHeaders(true)
	var out rewrite
	var pos int64
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		off := rec.Offset
		if !slices.Contains(offsets, off) {
			if err := rr.Finish(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		header := string(rr.RawHeader())
		uri, date, digest := rec.TargetURI(), rec.Date, rec.Header.Get("WARC-Payload-Digest")
		head, err := rr.ReadHTTPHead()
		if err != nil {
			t.Fatal(err)
		}
		block := string(head.Raw)
		if err := rr.Finish(); err != nil {
			t.Fatal(err)
		}
		length := rec.Length
		var h strings.Builder
		for _, l := range strings.Split(strings.TrimSuffix(header, "\r\n\r\n"), "\r\n") {
			name, _, _ := strings.Cut(l, ":")
			switch strings.ToLower(name) {
			case "warc-type":
				l = "WARC-Type: revisit"
			case "content-length":
				continue
			}
			h.WriteString(l + "\r\n")
		}
		fmt.Fprintf(&h, "WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest\r\nWARC-Refers-To-Target-URI: %s\r\nWARC-Refers-To-Date: %s\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", uri, date, len(block), block)
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write([]byte(h.String()))
		zw.Close()
		out.data = append(out.data, warc[pos:off]...)
		newOff := int64(len(out.data))
		out.data = append(out.data, z.Bytes()...)
		out.entries = append(out.entries, rewritelog.Entry{File: file, OldOffset: off, OldLength: length, NewOffset: newOff, NewLength: int64(z.Len()),
			Kind: rewritelog.Revisit, PayloadDigest: digest, RefersToURI: uri, RefersTo: date})
		pos = off + length
	}
	out.data = append(out.data, warc[pos:]...)
	return out
}

// logOf is the text of a rewrite log of one run with the entries.
func logOf(runs ...[]rewritelog.Entry) string {
	var b []byte
	for i, entries := range runs {
		b = append(rewritelog.AppendRun(b, rebuildTime.Add(time.Duration(i)*time.Hour)), '\n')
		for _, e := range entries {
			b = append(e.AppendTo(b), '\n')
		}
	}
	return string(b)
}

// logUpdate is the LogUpdate of a package's entries in a log.
func logUpdate(t *testing.T, pkg, log string) *LogUpdate {
	t.Helper()
	moves, err := PackageMoves(rewritelog.NewReader(strings.NewReader(log), "rewrite.log"), pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return NewLogUpdate(moves)
}

// rebuildTo writes b's package to a file in dir and opens it.
func rebuildTo(t *testing.T, b *Rebuild, dir, name string) (*Package, *Result) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if b.Now.IsZero() {
		b.Now = rebuildTime
	}
	b.TempDir = dir
	res, err := b.Write(f)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return openFile(t, f.Name()), res
}

// sameMembers checks that every member of old but those in changed is in
// new with the same name, method, attributes and stored bytes, in the
// same order.
func sameMembers(t *testing.T, old, new *Package, changed ...string) {
	t.Helper()
	var on, nn []string
	for _, m := range old.Members {
		on = append(on, m.Name)
	}
	for _, m := range new.Members {
		nn = append(nn, m.Name)
	}
	if !slices.Equal(on, nn) {
		t.Errorf("members %v, were %v", nn, on)
	}
	for _, om := range old.Members {
		nm := new.Member(om.Name)
		if nm == nil || slices.Contains(changed, om.Name) {
			continue
		}
		ob, _ := io.ReadAll(old.Raw(om))
		nb, _ := io.ReadAll(new.Raw(nm))
		if !bytes.Equal(ob, nb) || om.Method != nm.Method || om.CRC32 != nm.CRC32 || om.ModifiedDate != nm.ModifiedDate ||
			om.ModifiedTime != nm.ModifiedTime || om.ExternalAttrs != nm.ExternalAttrs {
			t.Errorf("%s: not copied as it was", om.Name)
		}
	}
}

// copyMembers writes each WARC member of p to a file in dir and returns
// them as replacements (the same bytes).
func copyMembers(t *testing.T, p *Package, dir string) map[string]Replacement {
	t.Helper()
	out := map[string]Replacement{}
	for _, m := range p.WARCs() {
		sec, err := p.Section(m)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(sec)
		out[m.Name] = Replacement{Path: writeTemp(t, dir, filepath.Base(m.Name), b)}
	}
	return out
}

// TestRebuildCorpusUnchanged rebuilds each corpus package with its WARC
// members replaced by themselves: the new package checks clean, its index
// is the old one line for line, every other member is copied as it was,
// datapackage.json differs only in "modified" (and, for a signed package,
// the record of the removed signature).
func TestRebuildCorpusUnchanged(t *testing.T) {
	needCorpus(t)
	for _, c := range corpusPackages {
		t.Run(c.path, func(t *testing.T) {
			dir := t.TempDir()
			old := openFile(t, corpusDir+"/"+c.path)
			b := &Rebuild{Source: old, Replace: copyMembers(t, old, dir), Index: logUpdate(t, "x.wacz", "")}
			if c.signed {
				if _, err := b.Write(&memFile{}); !errors.Is(err, ErrSigned) {
					t.Fatalf("a signed package rebuilt without DropSignature: %v", err)
				}
				b.DropSignature = &SignatureRemoval{Reason: "deduplicated", Software: "warcdedup test", When: rebuildTime}
			}
			p, res := rebuildTo(t, b, dir, "new.wacz")
			checkClean(t, p)
			if got, want := indexLines(t, p), indexLines(t, old); !slices.Equal(got, want) {
				t.Errorf("index differs:\n%s\nwas\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			var changed []string
			for n := range b.Replace {
				changed = append(changed, n)
			}
			ixs, _ := old.Indexes()
			for _, ix := range ixs {
				changed = append(changed, ix.CDX.Name)
				if ix.Idx != nil {
					changed = append(changed, ix.Idx.Name)
				}
			}
			sameMembers(t, old, p, append(changed, DatapackageName, DigestName)...)
			for _, m := range old.WARCs() {
				ob, _ := io.ReadAll(old.Raw(m))
				nb, _ := io.ReadAll(p.Raw(p.Member(m.Name)))
				if !bytes.Equal(ob, nb) || p.Member(m.Name).Method != Store {
					t.Errorf("%s: not stored as it was", m.Name)
				}
			}
			compareDatapackages(t, old, p, c.signed)
			if p.Signed() || res.RemovedSignature != c.signed {
				t.Errorf("signed after the rebuild: %v; removed: %v", p.Signed(), res.RemovedSignature)
			}
		})
	}
}

// compareDatapackages checks that new's datapackage.json is old's with
// "modified" set (and a removed signature recorded when signed).
func compareDatapackages(t *testing.T, old, new *Package, signed bool) {
	t.Helper()
	var o, n map[string]any
	if err := json.Unmarshal(old.DatapackageRaw, &o); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(new.DatapackageRaw, &n); err != nil {
		t.Fatal(err)
	}
	if m, _ := n["modified"].(string); !strings.HasPrefix(m, "2025-03-04T05:06:07") {
		t.Errorf("modified %q", n["modified"])
	}
	delete(o, "modified")
	delete(n, "modified")
	if signed {
		rs, _ := n[RemovedSignaturesKey].([]any)
		if len(rs) != 1 {
			t.Fatalf("removed signatures %v", n[RemovedSignaturesKey])
		}
		r := rs[0].(map[string]any)
		var od map[string]any
		json.Unmarshal(old.DigestRaw, &od)
		if r["reason"] != "deduplicated" || r["software"] != "warcdedup test" || r["removed"] != "2025-03-04T05:06:07Z" ||
			r["datapackageHash"] != od["hash"] || fmt.Sprint(r["signedData"]) != fmt.Sprint(od["signedData"]) {
			t.Errorf("removed signature recorded as %v", r)
		}
		delete(n, RemovedSignaturesKey)
	}
	if fmt.Sprint(o) != fmt.Sprint(n) {
		t.Errorf("datapackage.json:\n%s\nwas\n%s", new.DatapackageRaw, old.DatapackageRaw)
	}
	// Keys in their order, the layout kept.
	ok, nk := topKeys(t, old.DatapackageRaw), topKeys(t, new.DatapackageRaw)
	nk = slices.DeleteFunc(nk, func(k string) bool {
		return k == RemovedSignaturesKey || k == "modified" && !slices.Contains(ok, "modified")
	})
	if !slices.Equal(ok, nk) {
		t.Errorf("keys %v, were %v", nk, ok)
	}
}

func topKeys(t *testing.T, b []byte) []string {
	n, _, err := parseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return n.keys
}

// TestRebuildRevisits rewrites records of a package's WARC member as
// revisits, as warcrefs does, and rebuilds the package from the rewrite
// log, for each index form: the package checks clean, and its index is
// what warcindex (warcio.js's lines) gives for the new member, line for
// line, in the same form: the same lines per ZipNum block, the same
// !meta line, the same .idx fields.
func TestRebuildRevisits(t *testing.T) {
	forms := []struct {
		name    string
		members func(t *testing.T) []testMember
	}{
		{"plain CDXJ", validMembers},
		{"ZipNum, 2 lines a block, no final line feed, py-wacz .idx", func(t *testing.T) []testMember {
			return zipNumMembers(t, 2, false, nil, func(idx string) string {
				// py-wacz's spelling: spaces, no digest or filename.
				var out []string
				for _, l := range strings.Split(strings.TrimSuffix(idx, "\n"), "\n") {
					if i := strings.Index(l, ` {"offset"`); i >= 0 {
						var v struct{ Offset, Length int }
						json.Unmarshal([]byte(l[i+1:]), &v)
						l = fmt.Sprintf(`%s {"offset": %d, "length": %d}`, l[:i], v.Offset, v.Length)
					} else {
						l = `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}`
					}
					out = append(out, l)
				}
				return strings.Join(out, "\n") + "\n"
			})
		}},
		{"ZipNum, 3 lines a block, Browsertrix .idx", func(t *testing.T) []testMember { return zipNumMembers(t, 3, true, nil, nil) }},
	}
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			dir := t.TempDir()
			members := form.members(t)
			old, _ := packageOf(t, members)
			warc := []byte(members[0].data)
			offsets := responseOffsets(t, warc)
			rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", offsets[1], offsets[2])
			b := &Rebuild{Source: old, Replace: map[string]Replacement{"archive/data.warc.gz": {Path: writeTemp(t, dir, "data.warc.gz", rw.data)}},
				Index: logUpdate(t, "x.wacz", logOf(rw.entries))}
			p, res := rebuildTo(t, b, dir, "new.wacz")
			checkClean(t, p)
			want := freshLinesOf(t, "data.warc.gz", rw.data)
			if got := indexLines(t, p); !slices.Equal(got, want) {
				t.Errorf("index:\n%s\nwarcindex of the new member:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if res.Changed != 3 || res.Lines != int64(len(want)) {
				t.Errorf("%d lines, %d changed; want %d, 3 (2 revisits, 1 moved)", res.Lines, res.Changed, len(want))
			}
			sameMembers(t, old, p, "archive/data.warc.gz", "indexes/index.cdxj", "indexes/index.cdx.gz", "indexes/index.idx", DatapackageName, DigestName)
			if ix := findIndex(t, old); ix.Kind == ZipNumIndex {
				ol, _ := old.zipNumLayout(ix)
				nl, _ := p.zipNumLayout(findIndex(t, p))
				if ol.linesPerBlock != nl.linesPerBlock || ol.finalNewline != nl.finalNewline || !bytes.Equal(ol.style.meta, nl.style.meta) ||
					!slices.Equal(ol.style.keys, nl.style.keys) || ol.style.colon != nl.style.colon || ol.style.comma != nl.style.comma {
					t.Errorf("ZipNum layout %+v, was %+v", nl, ol)
				}
			}
			// The same package from a fresh index has the same index.
			fb := &Rebuild{Source: old, Replace: b.Replace, FreshIndex: true}
			fp, _ := rebuildTo(t, fb, dir, "fresh.wacz")
			checkClean(t, fp)
			if got := indexLines(t, fp); !slices.Equal(got, want) {
				t.Errorf("fresh index:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func findIndex(t *testing.T, p *Package) *Index {
	t.Helper()
	ixs, err := p.Indexes()
	if err != nil || len(ixs) != 1 {
		t.Fatalf("indexes %v, %v", ixs, err)
	}
	return ixs[0]
}

// responseOffsets lists the offsets of a WARC's response records.
func responseOffsets(t *testing.T, warc []byte) []int64 {
	t.Helper()
	rr, err := record.NewReader(bytes.NewReader(warc), "test")
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Type == "response" {
			out = append(out, rec.Offset)
		}
	}
}

// TestRebuildCorpusRevisit rewrites a response of each corpus package as
// a revisit and rebuilds the package: it checks clean (index lines against
// records, ZipNum blocks, hashes), and every index line keeps the
// spelling of the indexer that wrote it: ArchiveWeb.page's 17-digit
// timestamps, "sha-256:" digests, unquoted numbers and recordDigest (set
// to the revisit's new bytes); cdxj-indexer's ", " separators and quoted
// numbers; py-wacz's deflated index.idx and WACZ 1.0.0 "stats".
func TestRebuildCorpusRevisit(t *testing.T) {
	needCorpus(t)
	for _, c := range corpusPackages {
		t.Run(c.path, func(t *testing.T) {
			dir := t.TempDir()
			old := openFile(t, corpusDir+"/"+c.path)
			wm := old.WARCs()[0]
			sec, _ := old.Section(wm)
			warc, _ := io.ReadAll(sec)
			offsets := responseOffsets(t, warc)
			rw := revisitsOf(t, warc, "dir/x.wacz#"+wm.Name, offsets[len(offsets)/2])
			b := &Rebuild{Source: old, Replace: map[string]Replacement{wm.Name: {Path: writeTemp(t, dir, "member", rw.data)}},
				Index: logUpdate(t, "dir/x.wacz", logOf(rw.entries))}
			if c.signed {
				b.DropSignature = &SignatureRemoval{Reason: "test", When: rebuildTime}
			}
			p, res := rebuildTo(t, b, dir, "new.wacz")
			checkClean(t, p)
			oldLines, newLines := indexLines(t, old), indexLines(t, p)
			if len(oldLines) != len(newLines) || res.Changed == 0 {
				t.Fatalf("%d lines (%d changed), were %d", len(newLines), res.Changed, len(oldLines))
			}
			e := rw.entries[0]
			revisits := 0
			for i, l := range newLines {
				if lineKey([]byte(l)) != lineKey([]byte(oldLines[i])) {
					t.Errorf("line %d: key %q, was %q", i+1, lineKey([]byte(l)), lineKey([]byte(oldLines[i])))
				}
				if !strings.Contains(l, "warc/revisit") {
					continue
				}
				revisits++
				want := []string{fmt.Sprint(e.NewLength), fmt.Sprint(e.NewOffset)}
				switch c.kind {
				case PlainIndex: // ArchiveWeb.page
					want = append(want, `"digest":"sha-256:`, `"offset":`+fmt.Sprint(e.NewOffset)+",", `"recordDigest":"sha256:`)
				case ZipNumIndex: // py-wacz's cdxj-indexer
					want = append(want, `"length": "`+fmt.Sprint(e.NewLength)+`"`, `"mime": "warc/revisit"`)
				}
				for _, w := range want {
					if !strings.Contains(l, w) {
						t.Errorf("revisit line %s\nlacks %s; was %s", l, w, oldLines[i])
					}
				}
			}
			if revisits != 1 {
				t.Errorf("%d revisit lines, want 1", revisits)
			}
			for _, ix := range mustIndexes(t, p) {
				if oix := old.Member(ix.CDX.Name); oix.Method != ix.CDX.Method || ix.Idx != nil && old.Member(ix.Idx.Name).Method != ix.Idx.Method {
					t.Errorf("%s: compression method not kept", ix.Name())
				}
			}
		})
	}
}

func mustIndexes(t *testing.T, p *Package) []*Index {
	t.Helper()
	ixs, err := p.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	return ixs
}

// TestRebuildSignature: a signed package is refused without
// DropSignature (ErrSigned, naming the package); with it the signature
// goes and what was removed, when and why is in datapackage.json.
func TestRebuildSignature(t *testing.T) {
	members := validMembers(t)
	dp := datapackageFor(members)
	digest := strings.TrimSuffix(digestFor(dp), "\n}") + `,
  "signedData": {
    "hash": "` + strings.Split(strings.Split(digestFor(dp), `"hash": "`)[1], `"`)[0] + `",
    "signature": "c2lnbmF0dXJl",
    "publicKey": "a2V5",
    "created": "2024-01-02T03:04:05Z",
    "software": "test"
  }
}`
	b := buildZip(t, append(members, testMember{name: DatapackageName, data: dp}, testMember{name: DigestName, data: digest}))
	old, err := NewPackage(bytes.NewReader(b), int64(len(b)), "signed.wacz")
	if err != nil {
		t.Fatal(err)
	}
	if !old.Signed() {
		t.Fatal("not seen as signed")
	}
	checkClean(t, old)
	dir := t.TempDir()
	rb := &Rebuild{Source: old, Replace: copyMembers(t, old, dir), Index: logUpdate(t, "signed.wacz", "")}
	_, err = rb.Write(&memFile{})
	wantKind(t, err, ErrSigned, "signed.wacz", "invalidates the signature")
	rb.DropSignature = &SignatureRemoval{Reason: "deduplication rewrote WARC records", Software: "warcdedup", When: rebuildTime}
	p, _ := rebuildTo(t, rb, dir, "new.wacz")
	checkClean(t, p)
	if p.Signed() || strings.Contains(string(p.DigestRaw), "signedData") {
		t.Errorf("still signed:\n%s", p.DigestRaw)
	}
	want := `  "removedSignatures": [
    {
      "removed": "2025-03-04T05:06:07Z",
      "reason": "deduplication rewrote WARC records",
      "software": "warcdedup",
      "datapackageHash": "sha256:`
	if !strings.Contains(string(p.DatapackageRaw), want) || !strings.Contains(string(p.DatapackageRaw), `"signature": "c2lnbmF0dXJl"`) {
		t.Errorf("datapackage.json:\n%s", p.DatapackageRaw)
	}
}

// TestRebuildMetadata: an undo that gives every member back puts the old
// datapackage.json and digest back byte for byte (a signature with
// them); metadata whose hashes do not match what is written is refused.
func TestRebuildMetadata(t *testing.T) {
	dir := t.TempDir()
	members := validMembers(t)
	orig, _ := packageOf(t, members)
	warc := []byte(members[0].data)
	rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", responseOffsets(t, warc)[2])
	deduped, _ := rebuildTo(t, &Rebuild{Source: orig, Replace: map[string]Replacement{"archive/data.warc.gz": {Path: writeTemp(t, dir, "d.warc.gz", rw.data)}},
		Index: logUpdate(t, "x.wacz", logOf(rw.entries))}, dir, "deduped.wacz")
	// Undo: the original member back, the entries as restored ones.
	var undo []rewritelog.Entry
	for _, e := range rw.entries {
		undo = append(undo, rewritelog.Entry{File: e.File, OldOffset: e.NewOffset, OldLength: e.NewLength, NewOffset: e.OldOffset, NewLength: e.OldLength, Kind: rewritelog.Restored})
	}
	meta := &Metadata{Datapackage: orig.DatapackageRaw, Digest: orig.DigestRaw}
	back, res := rebuildTo(t, &Rebuild{Source: deduped, Replace: map[string]Replacement{"archive/data.warc.gz": {Path: writeTemp(t, dir, "o.warc.gz", warc)}},
		Index: logUpdate(t, "x.wacz", logOf(undo)), Metadata: meta}, dir, "back.wacz")
	checkClean(t, back)
	if !res.MetadataRestored || !bytes.Equal(back.DatapackageRaw, orig.DatapackageRaw) || !bytes.Equal(back.DigestRaw, orig.DigestRaw) {
		t.Error("the original metadata was not put back")
	}
	if got, want := indexLines(t, back), indexLines(t, orig); !slices.Equal(got, want) {
		t.Errorf("index after undo:\n%s\nbefore:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The same undo with a member that differs: refused.
	other := bytes.Clone(warc)
	f, _ := os.Create(filepath.Join(dir, "bad.wacz"))
	defer f.Close()
	_, err := (&Rebuild{Source: deduped, Replace: map[string]Replacement{"archive/data.warc.gz": {Path: writeTemp(t, dir, "x.warc.gz", append(other, '\n'))}},
		Index: logUpdate(t, "x.wacz", logOf(undo)), Metadata: meta, TempDir: dir}).Write(f)
	wantKind(t, err, ErrHash, "archive/data.warc.gz", "to put back")
}

// TestRebuildRequires adds and updates relation.requires entries in
// Browsertrix's form, and removes them.
func TestRebuildRequires(t *testing.T) {
	dir := t.TempDir()
	old, _ := packageOf(t, validMembers(t))
	p, _ := rebuildTo(t, &Rebuild{Source: old, Require: []Requirement{
		{Filename: "a.wacz", Hash: "aa", Size: 10, CrawlID: "crawl-a"},
		{Filename: "b.wacz", Size: -1, CrawlID: "crawl-b"},
		{Filename: "a.wacz", Hash: "a2", Size: 12},
	}}, dir, "req.wacz")
	checkClean(t, p)
	want := `  "relation": {
    "requires": [
      {
        "filename": "a.wacz",
        "hash": "a2",
        "size": 12,
        "crawlId": "crawl-a"
      },
      {
        "filename": "b.wacz",
        "crawlId": "crawl-b"
      }
    ]
  }
}`
	if !strings.HasSuffix(string(p.DatapackageRaw), want) {
		t.Errorf("datapackage.json:\n%s", p.DatapackageRaw)
	}
	reqs, _ := p.Datapackage.Requires()
	if len(reqs) != 2 || reqs[1].Size != -1 || reqs[1].Hash != "" {
		t.Errorf("requires %+v", reqs)
	}
	q, _ := rebuildTo(t, &Rebuild{Source: p, Unrequire: []string{"a.wacz", "b.wacz"}}, dir, "unreq.wacz")
	if strings.Contains(string(q.DatapackageRaw), "relation") {
		t.Errorf("relation left:\n%s", q.DatapackageRaw)
	}
}

// TestRebuildRefusals: a rebuild that cannot be right stops with an
// error before it writes anything usable.
func TestRebuildRefusals(t *testing.T) {
	dir := t.TempDir()
	members := validMembers(t)
	old, _ := packageOf(t, members)
	warc := []byte(members[0].data)
	rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", responseOffsets(t, warc)[1])
	repl := map[string]Replacement{"archive/data.warc.gz": {Path: writeTemp(t, dir, "d.warc.gz", rw.data)}}
	for _, c := range []struct {
		name string
		b    *Rebuild
		want string
	}{
		{"no index update", &Rebuild{Source: old, Replace: repl}, "no index update"},
		{"not a WARC member", &Rebuild{Source: old, Replace: map[string]Replacement{"pages/pages.jsonl": {Path: repl["archive/data.warc.gz"].Path}}, FreshIndex: true}, "no WARC member"},
		{"a log of another package", &Rebuild{Source: old, Replace: repl, Index: logUpdate(t, "y.wacz", logOf(rw.entries))}, "index"},
		{"a log entry the index has no line for", &Rebuild{Source: old, Replace: repl, Index: logUpdate(t, "x.wacz", logOf([]rewritelog.Entry{
			{File: "x.wacz#archive/data.warc.gz", OldOffset: 1, OldLength: 5, NewOffset: 1, NewLength: 4, Kind: rewritelog.Revisit,
				PayloadDigest: "sha1:AAAA", RefersToURI: "http://example.com/", RefersTo: "2024-01-02T03:04:05Z"}}))}, "no line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.b.Write(&memFile{})
			if c.name == "a log of another package" {
				// The index update finds nothing to change: the rebuild
				// writes a package whose index is stale, which Check finds.
				f := &memFile{}
				if _, err := c.b.Write(f); err != nil {
					t.Fatal(err)
				}
				p, err := NewPackage(f, int64(len(f.b)), "stale.wacz")
				if err != nil {
					t.Fatal(err)
				}
				r, _ := Check(p, CheckOptions{Records: true})
				wantKind(t, r.Err(), ErrIndex, "stale.wacz", "no record starts there")
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestStoreRead: a replacement is copied in with the size and CRC-32 its
// fresh index read it with, and refused when its bytes are not those
// (changed after it was indexed), as storeFile refuses a file that
// changed after its first read.
func TestStoreRead(t *testing.T) {
	content := []byte("WARC/1.1\r\nWARC-Type: warcinfo\r\n\r\n")
	for _, tc := range []struct {
		name    string
		written []byte // the file's bytes when copied
		wantErr bool
	}{
		{"the bytes indexed", content, false},
		{"a byte changed", append([]byte("X"), content[1:]...), true},
		{"grown", append(append([]byte(nil), content...), '!'), true},
		{"shrunk", content[:len(content)-1], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "member")
			if err := os.WriteFile(path, tc.written, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			out := &memFile{}
			z := newZipWriter(out, false)
			m := &Member{Name: "archive/data.warc.gz"}
			digest, err := z.storeRead(m, f, rawSum{size: int64(len(content)), crc: crc32.ChecksumIEEE(content)})
			if tc.wantErr {
				if err == nil {
					t.Fatal("copied bytes other than those indexed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := sha256.Sum256(content); !bytes.Equal(digest, want[:]) {
				t.Errorf("SHA-256 %x, want %x", digest, want)
			}
			if err := z.close(nil); err != nil {
				t.Fatal(err)
			}
			d, err := readDir(&memFile{b: out.b}, int64(len(out.b)), "p.zip")
			if err != nil {
				t.Fatal(err)
			}
			got := d.members[0]
			if got.Method != Store || got.Size != int64(len(content)) || got.CRC32 != crc32.ChecksumIEEE(content) {
				t.Errorf("member %+v", got)
			}
			if data := out.b[got.DataOffset : got.DataOffset+got.Size]; !bytes.Equal(data, content) {
				t.Errorf("data %q", data)
			}
		})
	}
}

// TestRebuildRequiresLate: Rebuild.Requires is asked once, when every
// member but the metadata is written (a package waits there for the
// hash of the packages it requires, not before its work); its entries
// follow Require's; its error stops the rebuild.
func TestRebuildRequiresLate(t *testing.T) {
	// Members larger than the writer's buffer, that some of their bytes
	// are in the file when Requires is asked.
	members := append(validMembers(t), testMember{name: "pages/extra.jsonl", data: strings.Repeat(`{"url": "http://example.com/"}`+"\n", 3*copyBufferSize/31)})
	old, _ := packageOf(t, members)
	var metaStart int64 // where the source's first metadata member starts
	for _, m := range old.Members {
		if m.Name == DatapackageName || m.Name == DigestName {
			metaStart = m.HeaderOffset
			break
		}
	}
	if metaStart == 0 {
		t.Fatal("the package has no metadata member after the others")
	}
	stop := errors.New("the required package was not written")
	for _, tc := range []struct {
		name string
		err  error
	}{{"entries", nil}, {"error", stop}} {
		t.Run(tc.name, func(t *testing.T) {
			out := &memFile{}
			calls := 0
			b := &Rebuild{Source: old, Now: rebuildTime, TempDir: t.TempDir(),
				Require: []Requirement{{Filename: "a.wacz", Hash: "aa", Size: 10}}}
			b.Requires = func() ([]Requirement, error) {
				calls++
				// Buffered writes: all but the last buffer's worth.
				if got := int64(len(out.b)); got < metaStart-copyBufferSize {
					t.Errorf("asked with %d bytes written, the members end at %d", got, metaStart)
				}
				return []Requirement{{Filename: "b.wacz", Hash: "bb", Size: 20}}, tc.err
			}
			_, err := b.Write(out)
			if calls != 1 {
				t.Errorf("Requires called %d times", calls)
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPackage(&memFile{b: out.b}, int64(len(out.b)), "late.wacz")
			if err != nil {
				t.Fatal(err)
			}
			reqs, _ := p.Datapackage.Requires()
			if len(reqs) != 2 || reqs[0].Filename != "a.wacz" || reqs[1].Filename != "b.wacz" || reqs[1].Hash != "bb" {
				t.Errorf("requires %+v", reqs)
			}
		})
	}
}
