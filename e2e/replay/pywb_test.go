package replay

import (
	"bytes"
	"fmt"
	"testing"

	"warcdedup/internal/cdxj"
	"warcdedup/internal/replaytest"
)

// index indexes the WARC files of dir ("before" or "after") of the
// collection with warcio.js, lines named by archiveName. Files warcio.js
// cannot read are left out and returned.
func (c *collection) index(t *testing.T, cli, dir string) (lines []cdxj.Line, archives []replaytest.Archive, unreadable []string) {
	t.Helper()
	for _, f := range c.files {
		if isWARC(f) {
			a := replaytest.Archive{Name: archiveName(f), Path: c.before(f)}
			if dir == "after" {
				a.Path = c.after(f)
			}
			archives = append(archives, a)
		}
	}
	lines, err := replaytest.Index(cli, archives)
	if err == nil {
		return lines, archives, nil
	}
	// Some file is unreadable: index them one by one.
	var readable []replaytest.Archive
	lines = nil
	for _, a := range archives {
		ls, err := replaytest.Index(cli, []replaytest.Archive{a})
		if err != nil {
			t.Logf("%s: left out of the index: %v", a.Path, err)
			unreadable = append(unreadable, a.Path)
			continue
		}
		lines = append(lines, ls...)
		readable = append(readable, a)
	}
	cdxj.Sort(lines)
	return lines, readable, unreadable
}

// pywbReport counts how pywb's rule resolved the revisits written.
type pywbReport struct {
	checked, arcOriginals int
	by                    map[cdxj.Lookup]int
	// wrongDigestOriginals: the original was found by Refers-To URI and
	// date, but its WARC-Payload-Digest, which indexers copy, is not its
	// payload's (jwat's invalid-warcfile-digest-fields.warc): no lookup by
	// digest finds it. Known while there is no replay policy.
	wrongDigestOriginals int
	failures             []string
}

// checkPywb resolves every revisit the deduplication wrote over the CDXJ
// index of the collection after the run, as pywb 2.x does, and checks
// that the record resolved to has the payload the revisit's response had.
// A revisit whose original is an ARC record is counted, not checked:
// warcio.js indexes no ARC.
func checkPywb(t *testing.T, c *collection, after []cdxj.Line) pywbReport {
	t.Helper()
	rep := pywbReport{by: map[cdxj.Lookup]int{}}
	fileOf := map[string]string{}
	for _, f := range c.files {
		fileOf[archiveName(f)] = f
	}
	ix := cdxj.NewIndex(after)
	for _, r := range c.revisits(t, after) {
		if r.line == nil {
			rep.failures = append(rep.failures, fmt.Sprintf("%s: not in warcio.js's index", r))
			continue
		}
		if r.original == nil && !isWARC(r.originalFile(c)) {
			rep.arcOriginals++
			continue
		}
		rep.checked++
		got, how, err := ix.ResolvePywb(r.line, r.rec.refURI, r.rec.refDate)
		if err != nil && r.original != nil && cdxj.NormDigest(r.original.Digest) != cdxj.NormDigest(r.line.Digest) {
			rep.wrongDigestOriginals++
			msg := fmt.Sprintf("%s: pywb finds no original: its original %s %s in %s is indexed with digest %s, the payload's is %s",
				r, r.original.URL, r.original.Timestamp, r.original.Filename, r.original.Digest, r.line.Digest)
			if strict() {
				rep.failures = append(rep.failures, msg)
			} else {
				t.Logf("KNOWN %s", msg)
			}
			continue
		}
		if err != nil {
			rep.failures = append(rep.failures, fmt.Sprintf("%s: pywb finds no original: %v", r, err))
			continue
		}
		rep.by[how]++
		var payload []byte
		switch how {
		case cdxj.OwnEmptyPayload, cdxj.Redirect:
			payload = r.rec.payload
		default:
			rec, err := readRecord(c.after(fileOf[got.Filename]), got.Offset)
			if err != nil {
				t.Fatal(err)
			}
			payload = rec.payload
		}
		if !bytes.Equal(payload, r.was.payload) && !(how == cdxj.Redirect && len(r.was.payload) == 0) {
			rep.failures = append(rep.failures, fmt.Sprintf("%s: pywb resolves it (%s) to %s %s in %s at %d, whose payload of %d bytes is not the %d bytes it had",
				r, how, got.URL, got.Timestamp, got.Filename, got.Offset, len(payload), len(r.was.payload)))
		}
	}
	return rep
}

// originalFile is the file of the collection holding the revisit's
// original, by its Refers-To URI and date, from the manifest kept by the
// run; "" when unknown. Only needed for originals warcio.js does not index.
func (r *revisit) originalFile(c *collection) string {
	if r.original != nil {
		return r.original.Filename
	}
	return c.originalFiles[r.rec.refURI+" "+r.rec.refDate]
}

// TestPywbResolution applies pywb's revisit resolution to a CDXJ index of
// each deduplicated collection: every revisit written must resolve to a
// record with its response's payload.
func TestPywbResolution(t *testing.T) {
	cli := replaytest.WarcioCLI(t)
	for _, cc := range collections {
		t.Run(cc.name, func(t *testing.T) {
			c := prepare(t, cc.name, cc.fill)
			after, _, unreadable := c.index(t, cli, "after")
			rep := checkPywb(t, c, after)
			t.Logf("%d revisits written: %d checked (%v), %d known failures (original's WARC-Payload-Digest wrong), %d with an ARC original (not indexed by warcio.js); %d files warcio.js cannot read: %v",
				len(c.rewrites), rep.checked, rep.by, rep.wrongDigestOriginals, rep.arcOriginals, len(unreadable), unreadable)
			for _, f := range rep.failures {
				t.Error(f)
			}
			if rep.checked == 0 {
				t.Error("no revisit checked")
			}
		})
	}
}
