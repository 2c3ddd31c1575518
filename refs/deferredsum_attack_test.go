package refs

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/originals"
)

// Outcomes of one duplicate in the attacks below.
const (
	becomesRevisit = "revisit"
	keptApart      = "apart"  // ErrPayloadDiffers, given to Apart
	refusedDigest  = "digest" // its file refused with ErrDigestMismatch
	keptSmall      = "kept"   // checked, kept: its revisit would not be smaller
)

// attackDup is one duplicate of the attack collection: its payload, its
// own WARC-Payload-Digest header ("" for none), what must become of it.
type attackDup struct {
	payload string
	own     string
	want    string
}

// attackColl writes an original with payload orig (a.warc) and each
// duplicate in a file of its own (d00.warc, d01.warc, ... read in that
// order with Jobs 1), every duplicate line naming the original under the
// digest lineDigest (the original's, unless the test lies). Three or more
// duplicates keep the original in memory (OpenPlanned's uses).
func attackColl(t *testing.T, dir string, algo digest.Algorithm, orig string, lineDigest string, dups []attackDup) (all, dupLines []manifest.Line) {
	t.Helper()
	const uri, date = "http://example.com/o", "2024-01-02T00:00:00Z"
	rec := warctest.Response(uri, date, orig)
	warctest.WriteFile(t, dir, "a.warc", []byte(rec))
	all = append(all, manifest.Line{File: "a.warc", Length: int64(len(rec)), URI: uri, Date: date, Digest: lineDigest,
		Copy: 1, RefURI: "-", RefDate: "-", Fields: 10})
	for i, d := range dups {
		var extra []string
		if d.own != "" {
			extra = append(extra, "WARC-Payload-Digest: "+d.own)
		}
		duri := fmt.Sprintf("http://example.com/d%02d", i)
		r := warctest.Record("response", duri, date, warctest.HTTP(200, d.payload), extra...)
		name := fmt.Sprintf("d%02d.warc", i)
		warctest.WriteFile(t, dir, name, []byte(r))
		l := manifest.Line{File: name, Length: int64(len(r)), URI: duri, Date: date, Digest: lineDigest,
			Copy: i + 2, RefURI: uri, RefDate: date, Fields: 10}
		all = append(all, l)
		dupLines = append(dupLines, l)
	}
	return all, dupLines
}

// sumIn is the digest of p in algo, in the manifest's form.
func sumIn(algo digest.Algorithm, p string) string {
	h := algo.New()
	io.WriteString(h, p)
	return algo.Format(h.Sum(nil))
}

// checkAttack runs the rewrite on the attack collection and checks each
// duplicate's outcome, and, for a revisit, its WARC-Payload-Digest: its
// own when right for its payload, else the line's.
func checkAttack(t *testing.T, dir string, all, dupLines []manifest.Line, dups []attackDup, jobs int) {
	t.Helper()
	before := map[string][]byte{}
	for _, l := range dupLines {
		b, err := os.ReadFile(filepath.Join(dir, l.File))
		if err != nil {
			t.Fatal(err)
		}
		before[l.File] = b
	}
	var mu sync.Mutex
	apart := map[string]error{}
	rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: jobs, Apart: func(l *manifest.Line, why error) {
		mu.Lock()
		defer mu.Unlock()
		apart[l.File] = why
	}}
	o := runWith(t, rw, all, all)
	if o.err != nil {
		t.Fatalf("Run: %v", o.err)
	}
	for i, l := range dupLines {
		after, err := os.ReadFile(filepath.Join(dir, l.File))
		if err != nil {
			t.Fatal(err)
		}
		changed := !bytes.Equal(before[l.File], after)
		re := o.refusedFor(l.File)
		why := apart[l.File]
		switch dups[i].want {
		case becomesRevisit:
			if re != nil || why != nil || !changed {
				t.Errorf("duplicate %d (%s): refused %v, apart %v, changed %v; want a revisit", i, l.File, re, why, changed)
				continue
			}
			rec, _, err := readRecord(after)
			if err != nil {
				t.Fatalf("%s: %v", l.File, err)
			}
			if rec.Type != "revisit" {
				t.Errorf("%s: a %s record, want a revisit", l.File, rec.Type)
			}
			want := l.Digest
			if own := dups[i].own; own != "" && ownRight(own, dups[i].payload) {
				want = own
			}
			if got := rec.Header.Get("WARC-Payload-Digest"); got != want {
				t.Errorf("%s: WARC-Payload-Digest %q, want %q", l.File, got, want)
			}
		case keptApart:
			if re != nil || !errors.Is(why, ErrPayloadDiffers) || changed {
				t.Errorf("duplicate %d (%s): refused %v, apart %v, changed %v; want kept apart as differing", i, l.File, re, why, changed)
			}
		case keptSmall:
			if re != nil || why != nil || changed {
				t.Errorf("duplicate %d (%s): refused %v, apart %v, changed %v; want kept as it is", i, l.File, re, why, changed)
			}
		case refusedDigest:
			if re == nil || !errors.Is(re, manifest.ErrDigestMismatch) || changed || why != nil {
				t.Errorf("duplicate %d (%s): refused %v, apart %v, changed %v; want refused for its digest", i, l.File, re, why, changed)
			}
		}
	}
}

// ownRight reports whether the WARC-Payload-Digest value own is right for
// payload, in its own algorithm.
func ownRight(own, payload string) bool {
	a, sum, err := digest.ParseHeader(own)
	if err != nil {
		return false
	}
	h := a.New()
	io.WriteString(h, payload)
	return bytes.Equal(h.Sum(nil), sum)
}

// collisionPair reads a published pair (shared/collisions) and appends
// the same suffix to both (a Merkle-Damgard collision of whole blocks
// stays one): payloads large enough for their revisits to be smaller.
func collisionPair(t *testing.T, a, b string, suffix string) (string, string) {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "collisions")
	pa, err := os.ReadFile(filepath.Join(dir, a))
	if err != nil {
		t.Skipf("collision pair: %v", err)
	}
	pb, err := os.ReadFile(filepath.Join(dir, b))
	if err != nil {
		t.Fatal(err)
	}
	return string(pa) + suffix, string(pb) + suffix
}

// TestDeferredSumCollisionsAttack proves that two payloads with the same
// digest (published MD5 and SHA-1 collisions) never become revisits of
// each other when the original is kept in memory and the duplicates equal
// to it are not hashed (deferredSum): whichever is the original, in
// whatever order the duplicates come, before or after the one that marks
// the original (Original.NotePayloadDigest), the other member is kept
// apart as a collision, never refused for its digest (it has it) nor
// rewritten.
func TestDeferredSumCollisionsAttack(t *testing.T) {
	suffix := strings.Repeat("common body after the colliding blocks. ", 60)
	pairs := []struct {
		algo digest.Algorithm
		a, b string
	}{
		{digest.SHA1, "sha-mbles-1.bin", "sha-mbles-2.bin"},
		{digest.MD5, "wang1.bin", "wang2.bin"},
		{digest.MD5, "fastcoll1.bin", "fastcoll2.bin"},
		{digest.MD5, "single-ipc1.bin", "single-ipc2.bin"},
	}
	for _, pair := range pairs {
		a, b := collisionPair(t, pair.a, pair.b, suffix)
		if a == b || sumIn(pair.algo, a) != sumIn(pair.algo, b) {
			t.Fatalf("%s, %s: not a %s collision", pair.a, pair.b, pair.algo)
		}
		R := func(p string) attackDup { return attackDup{payload: p, want: becomesRevisit} }
		X := func(p string) attackDup { return attackDup{payload: p, want: keptApart} }
		orders := []struct {
			name string
			orig string
			dups []attackDup
		}{
			{"the other after the original is marked", a, []attackDup{R(a), R(a), X(b), R(a)}},
			{"the other first, before any mark", a, []attackDup{X(b), R(a), R(a), X(b)}},
			{"the other between the marking duplicate and the next", a, []attackDup{R(a), X(b), R(a), X(b), R(a)}},
			{"only the other", a, []attackDup{X(b), X(b), X(b)}},
			{"the second member as the original", b, []attackDup{R(b), R(b), X(a), R(b), X(a)}},
		}
		for _, ord := range orders {
			t.Run(fmt.Sprintf("%s, %s", pair.a, ord.name), func(t *testing.T) {
				dir := t.TempDir()
				all, dupLines := attackColl(t, dir, pair.algo, ord.orig, sumIn(pair.algo, ord.orig), ord.dups)
				checkAttack(t, dir, all, dupLines, ord.dups, 1)
			})
		}
	}
}

// TestDeferredSumStaleAttack proves the claims of the deferred hash on a
// stale manifest, in every algorithm a manifest may name: a duplicate
// that differs from the marked original in memory (shorter, longer, one
// byte changed at its start, middle or end, empty) is refused for its
// digest, never kept apart as a collision nor rewritten; an original whose
// line's digest is not its payload's is never marked (no duplicate equal
// to it hashes to it), so that every duplicate is refused.
func TestDeferredSumStaleAttack(t *testing.T) {
	orig := strings.Repeat("the original's payload, kept in memory. ", 200)
	flip := func(at int) string {
		b := []byte(orig)
		b[at] ^= 0x20
		return string(b)
	}
	R := attackDup{payload: orig, want: becomesRevisit}
	D := func(p string) attackDup { return attackDup{payload: p, want: refusedDigest} }
	tests := []struct {
		name  string
		orig  string
		lying bool // the lines' digest is another payload's
		dups  []attackDup
	}{
		{"one byte changed at the start", orig, false, []attackDup{R, R, D(flip(0)), R}},
		{"one byte changed in the middle", orig, false, []attackDup{R, R, D(flip(len(orig) / 2)), R}},
		{"one byte changed at the end", orig, false, []attackDup{R, R, D(flip(len(orig) - 1)), R}},
		{"one byte changed at 4096 (a read's edge)", orig, false, []attackDup{R, R, D(flip(4096)), R}},
		{"shorter by one", orig, false, []attackDup{R, R, D(orig[:len(orig)-1]), R}},
		{"half", orig, false, []attackDup{R, R, D(orig[:len(orig)/2])}},
		{"longer by one", orig, false, []attackDup{R, R, D(orig + "x"), R}},
		{"twice as long", orig, false, []attackDup{R, R, D(orig + orig)}},
		{"empty", orig, false, []attackDup{R, R, D("")}},
		// Empty payloads stay (no smaller as revisits), checked all the same.
		{"an empty original, then a payload", "", false, []attackDup{{payload: "", want: keptSmall}, {payload: "", want: keptSmall}, D("x"), {payload: "", want: keptSmall}}},
		{"the lines' digest is another payload's: never marked", orig, true, []attackDup{D(orig), D(orig), D(orig), D(orig + "x")}},
	}
	for _, algo := range []digest.Algorithm{digest.SHA1, digest.MD5, digest.SHA256} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s, %s", algo, tt.name), func(t *testing.T) {
				dir := t.TempDir()
				lineDigest := sumIn(algo, tt.orig)
				if tt.lying {
					lineDigest = sumIn(algo, "another payload")
				}
				all, dupLines := attackColl(t, dir, algo, tt.orig, lineDigest, tt.dups)
				checkAttack(t, dir, all, dupLines, tt.dups, 1)
			})
		}
	}
}

// TestDeferredSumOwnDigestAttack proves that a revisit's
// WARC-Payload-Digest is right when the duplicate was not hashed in the
// manifest's algorithm (deferredSum): the record's own value, in whatever
// algorithm and spelling, when right for its payload; the line's when it
// is wrong or does not parse.
func TestDeferredSumOwnDigestAttack(t *testing.T) {
	orig := strings.Repeat("payload with its own digest header. ", 80)
	s1 := sha1.Sum([]byte(orig))
	s256 := sha256.Sum256([]byte(orig))
	m5 := md5.Sum([]byte(orig))
	wrong := sha1.Sum([]byte("not it"))
	owns := []struct{ name, own string }{
		{"sha1 base32 as the manifest", "sha1:" + base32.StdEncoding.EncodeToString(s1[:])},
		{"sha1 base32 lower case", "sha1:" + strings.ToLower(base32.StdEncoding.EncodeToString(s1[:]))},
		{"SHA-1 hex upper case", "SHA-1:" + strings.ToUpper(hex.EncodeToString(s1[:]))},
		{"sha256 hex", "sha256:" + hex.EncodeToString(s256[:])},
		{"md5 hex", "md5:" + hex.EncodeToString(m5[:])},
		{"sha1 wrong", "sha1:" + base32.StdEncoding.EncodeToString(wrong[:])},
		{"sha256 wrong", "sha256:" + hex.EncodeToString(wrong[:]) + strings.Repeat("0", 24)},
		{"unparsable", "sha1:not-a-digest"},
	}
	for _, algo := range []digest.Algorithm{digest.SHA1, digest.SHA256} {
		for _, o := range owns {
			t.Run(fmt.Sprintf("%s manifest, own %s", algo, o.name), func(t *testing.T) {
				dir := t.TempDir()
				// The first duplicate marks the original; the next ones,
				// with their own header, are not hashed in algo.
				dups := []attackDup{{payload: orig, want: becomesRevisit}, {payload: orig, own: o.own, want: becomesRevisit},
					{payload: orig, own: o.own, want: becomesRevisit}}
				all, dupLines := attackColl(t, dir, algo, orig, sumIn(algo, orig), dups)
				checkAttack(t, dir, all, dupLines, dups, 1)
			})
		}
	}
}

// TestDeferredSumConcurrentAttack runs many duplicates of one original in
// memory, some the other member of a SHA-1 collision, some stale, on
// several workers at once (run it with -race): each gets its own outcome
// whatever worker marked the original first.
func TestDeferredSumConcurrentAttack(t *testing.T) {
	a, b := collisionPair(t, "sha-mbles-1.bin", "sha-mbles-2.bin", strings.Repeat("common body. ", 200))
	stale := []byte(a)
	stale[len(stale)-3] ^= 1
	var dups []attackDup
	for i := range 40 {
		switch i % 5 {
		case 2:
			dups = append(dups, attackDup{payload: b, want: keptApart})
		case 4:
			dups = append(dups, attackDup{payload: string(stale), want: refusedDigest})
		default:
			dups = append(dups, attackDup{payload: a, want: becomesRevisit})
		}
	}
	dir := t.TempDir()
	all, dupLines := attackColl(t, dir, digest.SHA1, a, sumIn(digest.SHA1, a), dups)
	checkAttack(t, dir, all, dupLines, dups, 4)
}

// TestDeferredSumBoundaryAttack proves deferredSum's digest whatever the
// writes' edges are against the first differing byte: a write that ends
// just before it, one that starts with it, ends with it, or one byte at a
// time across it; the original's payload running out at a write's edge;
// and zero-length writes anywhere.
func TestDeferredSumBoundaryAttack(t *testing.T) {
	orig := []byte(strings.Repeat("0123456789abcdef", 64)) // 1024 bytes
	known := sha1.Sum(orig)
	at := 500
	changed := bytes.Clone(orig)
	changed[at] ^= 1
	longer := append(bytes.Clone(orig), "tail"...)
	tests := []struct {
		name    string
		payload []byte
		cuts    []int // write edges (offsets into payload)
	}{
		{"a write ends just before the differing byte", changed, []int{at}},
		{"a write starts with it and ends after", changed, []int{at, at + 1}},
		{"a write ends with it", changed, []int{at + 1}},
		{"writes of one byte across it", changed, []int{at - 1, at, at + 1, at + 2}},
		{"zero-length writes at it", changed, []int{at, at, at, at + 1, at + 1}},
		{"the original runs out at a write's edge, then more", longer, []int{len(orig)}},
		{"the original runs out inside the write", longer, []int{len(orig) - 1}},
		{"equal, zero-length writes at the end", orig, []int{len(orig), len(orig)}},
		{"ends at a write's edge, shorter", orig[:at], []int{at / 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmp := originals.NewComparer(&originals.Original{Payload: orig}, nil, nil)
			d := deferredSum{h: sha1.New(), cmp: cmp, orig: orig, known: known[:]}
			w := io.MultiWriter(cmp, &d)
			prev := 0
			for _, c := range append(tt.cuts, len(tt.payload)) {
				if n, err := w.Write(tt.payload[prev:c]); err != nil || n != c-prev {
					t.Fatalf("write: %d, %v", n, err)
				}
				prev = c
			}
			if got, want := d.sum(), sha1.Sum(tt.payload); !bytes.Equal(got, want[:]) {
				t.Errorf("sum %x, want %x", got, want)
			}
			same, err := cmp.End()
			if err != nil || same != bytes.Equal(tt.payload, orig) {
				t.Errorf("End: %v, %v", same, err)
			}
		})
	}
}

// TestDeferredSumEvictionAttack reads the duplicates of many originals
// in memory (200 kB payloads), each original's duplicates far apart: with
// fewer than the payload cache holds (16 MB), each original stays, marked
// by its first duplicate, until its last read drops it; with more, it is
// evicted and read again between them (a new Original, not marked). In
// every pass, a duplicate equal to its original becomes a revisit, and
// one changed (a stale manifest's) is refused for its digest.
func TestDeferredSumEvictionAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("writes up to 80 MB")
	}
	for _, tc := range []struct {
		name      string
		originals int
	}{
		{"kept until the last read (12 MB)", 60},
		{"evicted and read again (20 MB)", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dups, dupLines, all := evictionColl(t, dir, tc.originals)
			checkAttack(t, dir, all, dupLines, dups, 1)
		})
	}
}

// evictionColl writes n originals of 200 kB (a000.warc, ...) and three
// passes of one duplicate of each (d0-000.warc, ...), every third one of
// the last pass changed by a byte.
func evictionColl(t *testing.T, dir string, n int) (dups []attackDup, dupLines, all []manifest.Line) {
	t.Helper()
	const passes, size, date = 3, 200 << 10, "2024-01-02T00:00:00Z"
	payloadOf := func(i int) string {
		return strings.Repeat(fmt.Sprintf("original %03d's payload. ", i), size/24)
	}
	for i := range n {
		uri := fmt.Sprintf("http://example.com/o%03d", i)
		rec := warctest.Response(uri, date, payloadOf(i))
		name := fmt.Sprintf("a%03d.warc", i)
		warctest.WriteFile(t, dir, name, []byte(rec))
		all = append(all, manifest.Line{File: name, Length: int64(len(rec)), URI: uri, Date: date,
			Digest: sumIn(digest.SHA1, payloadOf(i)), Copy: 1, RefURI: "-", RefDate: "-", Fields: 10})
	}
	for pass := range passes {
		for i := range n {
			p, outcome := payloadOf(i), becomesRevisit
			if pass == passes-1 && i%3 == 0 {
				b := []byte(p)
				b[len(b)/3] ^= 1
				p, outcome = string(b), refusedDigest
			}
			uri := fmt.Sprintf("http://example.com/d%d-%03d", pass, i)
			rec := warctest.Response(uri, date, p)
			name := fmt.Sprintf("d%d-%03d.warc", pass, i)
			warctest.WriteFile(t, dir, name, []byte(rec))
			l := manifest.Line{File: name, Length: int64(len(rec)), URI: uri, Date: date, Digest: all[i].Digest,
				Copy: pass + 2, RefURI: all[i].URI, RefDate: date, Fields: 10}
			all = append(all, l)
			dupLines = append(dupLines, l)
			dups = append(dups, attackDup{want: outcome})
		}
	}
	return dups, dupLines, all
}
