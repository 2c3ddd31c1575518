package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"warcdedup/manifest"
	"warcdedup/show"
)

// warcdedup show as an archivist uses it: a file's records listed, a
// revisit (this toolchain's and another tool's) with its original and
// what undo gives back, a response with the revisits that point at it.

// listing is one line of warcdedup show FILE.
type listing struct {
	offset, length              int64
	typ, date, digest, uri, raw string
}

func showListing(t *testing.T, dir, file string) []listing {
	t.Helper()
	out, stderr, code := sh(t, dir, "warcdedup show "+file)
	if code != 0 || stderr != "" {
		t.Fatalf("show %s: exit %d, stderr %q", file, code, stderr)
	}
	var ls []listing
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 6 {
			t.Fatalf("show %s: line %q: %d fields, want 6 separated by tabs", file, l, len(f))
		}
		off, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("show %s: line %q", file, l)
		}
		ls = append(ls, listing{off, n, f[2], f[3], f[4], f[5], l})
	}
	return ls
}

func showJSON(t *testing.T, dir, args string, wantCode int) *show.Record {
	t.Helper()
	out, stderr, code := sh(t, dir, "warcdedup show --json "+args)
	if code != wantCode {
		t.Fatalf("show %s: exit %d, want %d; stderr %q", args, code, wantCode, stderr)
	}
	var r show.Record
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("show --json %s: %v\n%s", args, err, out)
	}
	return &r
}

// logEntry is a revisit line of the rewrite log.
type logEntry struct {
	file             string
	newOff           int64
	digest, uri, day string
}

func readLogRevisits(t *testing.T, name string) []logEntry {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []logEntry
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		// 9 fields, or 10 with the original gzip member (rewritelog).
		if (len(f) != 9 && len(f) != 10) || strings.HasPrefix(l, "#") || f[5] != "revisit" {
			continue
		}
		off, _ := strconv.ParseInt(f[3], 10, 64)
		out = append(out, logEntry{f[0], off, f[6], f[7], f[8]})
	}
	return out
}

// cdxjScript writes a CDXJ index of a collection as it is now, from its
// warcsum listing: what the access system would have.
const cdxjScript = `warcsum -r COLL | awk '{d=$5; gsub(/[^0-9]/, "", d); m = (NF == 10 && $7 == -1) ? "warc/revisit" : "text/html"; printf "x %s {\"url\": \"%s\", \"mime\": \"%s\", \"status\": \"200\", \"digest\": \"%s\", \"length\": \"%s\", \"offset\": \"%s\", \"filename\": \"%s\"}\n", d, $4, m, $6, $3, $2, $1}'`

// TestShow runs warcdedup show on a deduplicated generated collection
// (whose files also hold other tools' revisits, as the generator writes
// them) and checks each answer against the job's own records: the
// listings against warcsum's, originals and inbound revisits against the
// manifests and the rewrite log, what undo would give back against what
// undo gives back.
func TestShow(t *testing.T) {
	dir := t.TempDir()
	coll := smallCollection(t, dir, "coll")
	// --keep-work: show finds originals and copy numbers in the numbered
	// manifest, which a run removes once complete (show then falls back
	// on the revisit's own file, without copy numbers).
	if _, stderr, code := sh(t, dir, "warcdedup run -q -j 2 --keep-work coll"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	after := readManifestFile(t, filepath.Join(dir, "coll.warcdedup", "after.manifest"))

	// Every file listed: records back to back to the end of the file,
	// every record warcsum lists there with its offset, length, type,
	// URI, date and (revisits) digest.
	files, _ := filepath.Glob(filepath.Join(coll, "*"))
	for _, p := range files {
		name := filepath.Base(p)
		ls := showListing(t, dir, "coll/"+name)
		fi, _ := os.Stat(p)
		for i, l := range ls {
			end := fi.Size()
			if i+1 < len(ls) {
				end = ls[i+1].offset
			}
			if l.offset+l.length != end {
				t.Errorf("%s: %q ends at %d, the next record starts at %d", name, l.raw, l.offset+l.length, end)
			}
		}
		at := map[int64]listing{}
		for _, l := range ls {
			at[l.offset] = l
		}
		for _, m := range after {
			if m.File != name {
				continue
			}
			l, ok := at[m.Offset]
			typ := map[bool]string{true: "revisit", false: "response"}[m.IsRevisit()]
			if !ok || l.length != m.Length || l.typ != typ || manifest.EscapeField(l.uri) != m.URI || manifest.EscapeField(l.date) != m.Date || (m.IsRevisit() && l.digest != m.Digest) {
				t.Errorf("%s: warcsum lists %q, show lists %q", name, m.String(), l.raw)
			}
		}
		out, _, code := sh(t, dir, "warcdedup show --json coll/"+name)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != len(ls) {
			t.Errorf("show --json %s: exit %d, %d lines, want %d", name, code, len(lines), len(ls))
		} else {
			var e show.Entry
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil || e.Offset != ls[len(ls)-1].offset {
				t.Errorf("show --json %s: last line %q (%v)", name, lines[len(lines)-1], err)
			}
		}
	}

	// A revisit this toolchain wrote, in a plain file (its length is the
	// restored record's, uncompressed).
	logRevisits := readLogRevisits(t, filepath.Join(dir, "coll.warcdedup", "rewrite.log"))
	ours := map[string]bool{}
	var rev logEntry
	for _, e := range logRevisits {
		ours[e.file+" "+strconv.FormatInt(e.newOff, 10)] = true
		if rev.file == "" && strings.HasSuffix(e.file, ".warc") {
			rev = e
		}
	}
	if rev.file == "" {
		t.Fatalf("no revisit written in a plain WARC file: %v", logRevisits)
	}
	target := "coll/" + rev.file + ":" + strconv.FormatInt(rev.newOff, 10)
	r := showJSON(t, dir, target, 0)
	v := r.Revisit
	if r.Type != "revisit" || v == nil || v.Written == nil || !v.Resolves || v.Original == nil || v.Undo == nil || v.Undo.Command != "warcdedup undo" || v.Undo.Problem != "" {
		t.Fatalf("show %s: %+v, revisit %+v", target, r, v)
	}
	// Its original is the response warcsum lists now with its Refers-To
	// URI, date and digest.
	var orig *manifest.Line
	for i, m := range after {
		if !m.IsRevisit() && m.URI == rev.uri && m.Date == rev.day && m.Digest == rev.digest {
			orig = &after[i]
		}
	}
	if orig == nil || v.Original.File != filepath.Join(coll, orig.File) || v.Original.Offset != orig.Offset {
		t.Errorf("show %s: original %+v; warcsum lists %v", target, v.Original, orig)
	}
	text, _, code := sh(t, dir, "warcdedup show "+target)
	for _, want := range []string{"WARC-Type: revisit", "written by this toolchain", "resolves: yes", "warcdedup undo would give back a response of"} {
		if code != 0 || !strings.Contains(text, want) {
			t.Errorf("show %s: exit %d, no %q in\n%s", target, code, want, text)
		}
	}
	// Through a CDXJ index of the collection, as the access system finds it.
	if _, stderr, code := sh(t, dir, strings.ReplaceAll(cdxjScript, "COLL", "coll")+" > coll.cdxj"); code != 0 {
		t.Fatal(stderr)
	}
	rc := showJSON(t, dir, "--cdx coll.cdxj "+target, 0)
	if rc.Revisit == nil || !rc.Revisit.Resolves || rc.Revisit.Original == nil || rc.Revisit.Original.Offset != orig.Offset || !strings.Contains(rc.Revisit.Original.Found, "pywb's rule") {
		t.Errorf("show --cdx %s: %+v", target, rc.Revisit)
	}

	// Its original: a response, copy 1, and the revisits pointing at it are
	// those warcsum lists with its URI, date and digest.
	origTarget := "coll/" + orig.File + ":" + strconv.FormatInt(orig.Offset, 10)
	ro := showJSON(t, dir, origTarget, 0)
	var want, got []string
	for _, m := range after {
		if m.IsRevisit() && m.Digest == orig.Digest && m.RefURI == orig.URI && (m.RefDate == orig.Date || m.RefDate == "*") {
			want = append(want, filepath.Join(coll, m.File)+" "+strconv.FormatInt(m.Offset, 10))
		}
	}
	if ro.Response != nil {
		for _, p := range ro.Response.Revisits {
			got = append(got, p.File+" "+strconv.FormatInt(p.Offset, 10))
			if !strings.HasPrefix(p.Now, "a revisit") {
				t.Errorf("show %s: %+v is no revisit now", origTarget, p)
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if ro.Type != "response" || ro.Response == nil || ro.Response.Copy != 1 || len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("show %s: %+v; revisits %q, warcsum lists %q", origTarget, ro.Response, got, want)
	}
	if ro.PayloadDigest != orig.Digest {
		t.Errorf("show %s: payload %s, warcsum %s", origTarget, ro.PayloadDigest, orig.Digest)
	}

	// Another tool's revisit (the generator writes them): not in the log,
	// resolves, and undo --all would restore it.
	var foreign *manifest.Line
	for i, m := range after {
		if m.IsRevisit() && !ours[m.File+" "+strconv.FormatInt(m.Offset, 10)] {
			foreign = &after[i]
			break
		}
	}
	if foreign == nil {
		t.Fatal("the generator wrote no revisit")
	}
	ft := "coll/" + foreign.File + ":" + strconv.FormatInt(foreign.Offset, 10)
	rf := showJSON(t, dir, ft, 0)
	if rf.Revisit == nil || rf.Revisit.Written != nil || !rf.Revisit.Resolves || rf.Revisit.Undo.Command != "warcdedup undo --all" {
		t.Errorf("show %s: %+v", ft, rf.Revisit)
	}
	if text, _, _ := sh(t, dir, "warcdedup show "+ft); !strings.Contains(text, "written by another tool") {
		t.Errorf("show %s:\n%s", ft, text)
	}

	// What undo would give back is what it gives back: the record with the
	// revisit's URI and date, after undo, has the header shown and the
	// length (uncompressed file).
	if _, stderr, code := sh(t, dir, "warcdedup undo -q -j 2 coll"); code != 0 {
		t.Fatalf("undo: exit %d\n%s", code, stderr)
	}
	var restored *listing
	for _, l := range showListing(t, dir, "coll/"+rev.file) {
		if l.typ == "response" && manifest.EscapeField(l.uri) == r.URI && l.date == r.Date {
			restored = &l
		}
	}
	if restored == nil {
		t.Fatalf("no response of %s at %s in %s after undo", r.URI, r.Date, rev.file)
	}
	back := showJSON(t, dir, "coll/"+rev.file+":"+strconv.FormatInt(restored.offset, 10), 0)
	if back.Length != v.Undo.Length || len(back.Header)+1 != len(v.Undo.Header) {
		t.Errorf("undo gave back %d bytes, %d fields; show said %d bytes, %v", back.Length, len(back.Header), v.Undo.Length, v.Undo.Header)
	} else {
		for i, f := range back.Header {
			if f != v.Undo.Header[i+1] {
				t.Errorf("restored field %d: %+v, show said %+v", i, f, v.Undo.Header[i+1])
			}
		}
	}
	if back.PayloadDigest != rev.digest || back.PayloadLength != v.Undo.PayloadLength {
		t.Errorf("restored payload %s (%d bytes), the revisit's %s (%d)", back.PayloadDigest, back.PayloadLength, rev.digest, v.Undo.PayloadLength)
	}
}

// TestShowAlone looks at files outside any job: a revisit's original is
// looked for in its own file, a changed original does not resolve (exit
// status 1), and damage in a listing is named with its offset.
func TestShowAlone(t *testing.T) {
	dir := t.TempDir()
	smallCollection(t, dir, "gen")
	os.MkdirAll(filepath.Join(dir, "alone"), 0o755)
	copyFile(t, filepath.Join(dir, "gen", "gen-00001.warc"), filepath.Join(dir, "alone", "a.warc"))
	ls := showListing(t, dir, "alone/a.warc")
	var rev, resp *listing
	for i, l := range ls {
		if l.typ == "revisit" && rev == nil {
			rev = &ls[i]
		}
	}
	if rev == nil {
		t.Fatal("no revisit in alone/a.warc")
	}
	target := "alone/a.warc:" + strconv.FormatInt(rev.offset, 10)
	r := showJSON(t, dir, target, 0)
	if r.Job != nil || r.Revisit == nil || !r.Revisit.Resolves || r.Revisit.Original == nil || !strings.Contains(r.Revisit.Original.Found, "own file") || len(r.Notes) == 0 {
		t.Fatalf("show %s: %+v, revisit %+v", target, r, r.Revisit)
	}
	for i, l := range ls {
		if l.offset == r.Revisit.Original.Offset {
			resp = &ls[i]
		}
	}
	rr := showJSON(t, dir, "alone/a.warc:"+strconv.FormatInt(resp.offset, 10), 0)
	if rr.Response == nil || len(rr.Response.Revisits) == 0 || !slices.ContainsFunc(rr.Response.Revisits, func(p *show.Place) bool { return p.Offset == rev.offset }) {
		t.Errorf("show of its original: %+v", rr.Response)
	}

	// The original's payload changed (its last byte before the record end):
	// the revisit no longer resolves.
	data, _ := os.ReadFile(filepath.Join(dir, "alone", "a.warc"))
	at := resp.offset + resp.length - 5
	data[at] ^= 0x20
	os.WriteFile(filepath.Join(dir, "alone", "a.warc"), data, 0o644)
	out, stderr, code := sh(t, dir, "warcdedup show "+target)
	if code != 1 || !strings.Contains(out, "resolves: no") || !strings.Contains(stderr, "does not resolve") || !strings.Contains(stderr, "hashes to") {
		t.Errorf("show %s with its original changed: exit %d, stdout\n%s\nstderr %q", target, code, out, stderr)
	}

	// No record there, and damage.
	if _, stderr, code := sh(t, dir, "warcdedup show alone/a.warc:"+strconv.FormatInt(rev.offset+3, 10)); code != 2 || !strings.Contains(stderr, "alone/a.warc") {
		t.Errorf("show at an offset inside a record: exit %d, %q", code, stderr)
	}
	gz, _ := os.ReadFile(filepath.Join(dir, "gen", "gen-00000.warc.gz"))
	os.WriteFile(filepath.Join(dir, "alone", "cut.warc.gz"), gz[:len(gz)/2], 0o644)
	out, stderr, code = sh(t, dir, "warcdedup show alone/cut.warc.gz")
	if code != 1 || !strings.Contains(stderr, "alone/cut.warc.gz: offset ") || strings.Count(out, "\n") < 10 {
		t.Errorf("show of a cut file: exit %d, %d lines, stderr %q", code, strings.Count(out, "\n"), stderr)
	}
	if _, stderr, code := sh(t, dir, "warcdedup show alone/a.warc:x"); code != 2 || !strings.Contains(stderr, "FILE:OFFSET") {
		t.Errorf("show FILE:x: exit %d, %q", code, stderr)
	}
}

// TestShowCorpus shows pywb's sample revisit, written by another tool,
// found in its own file and through pywb's own CDXJ index.
func TestShowCorpus(t *testing.T) {
	needCorpus(t)
	dir := t.TempDir()
	src := filepath.Join(corpusDir, "webrecorder+pywb", "sample_archive")
	copyFile(t, filepath.Join(src, "warcs", "example.warc.gz"), filepath.Join(dir, "example.warc.gz"))
	copyFile(t, filepath.Join(src, "cdxj", "example.cdxj"), filepath.Join(dir, "example.cdxj"))
	var rev *listing
	for _, l := range showListing(t, dir, "example.warc.gz") {
		if l.typ == "revisit" {
			rev = &l
		}
	}
	if rev == nil {
		t.Fatal("no revisit listed in pywb's example.warc.gz")
	}
	target := "example.warc.gz:" + strconv.FormatInt(rev.offset, 10)
	for _, args := range []string{target, "--cdx example.cdxj " + target} {
		r := showJSON(t, dir, args, 0)
		if r.Revisit == nil || !r.Revisit.Resolves || r.Revisit.Written != nil || r.Revisit.Undo.Command != "warcdedup undo --all" || r.Revisit.Undo.Length == 0 {
			t.Errorf("show %s: %+v", args, r.Revisit)
		}
	}
}
