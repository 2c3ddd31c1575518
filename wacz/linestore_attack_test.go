package wacz

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/rewritelog"
)

// TestDeriveCopyOfAnotherVersion: the collisions pass rewrites again the
// members the first pass rewrote, copied from the packages it wrote
// anew, and the run hands Derive the stamp of the member the hash stage
// read (before the first pass). Those lines do not describe the copy:
// Derive must say so (ErrOtherVersion, which the run passes over
// quietly: the rebuild reads the member) and write nothing, not apply
// the entries of the second rewrite to lines of the first version (which
// either fails with a message about log lines and ranges or describes
// the records where they are not).
func TestDeriveCopyOfAnotherVersion(t *testing.T) {
	a := testWARC()
	name := JoinName("x.wacz", "archive/a.warc.gz")
	first := revisitsOf(t, a, name, responseOffsets(t, a)[2])
	cases := []struct {
		name   string
		copied []byte // the copy as staged
		// other: Derive must find the copy of another version.
		other bool
	}{
		{"a copy of the member the hash stage read", a, false},
		{"a copy of the member after a first rewrite", first.data, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lines := freshLinesOf(t, "a.warc.gz", a)
			slices.Sort(lines)
			path := writeTemp(t, dir, "x.wacz", packageBytes(append([]testMember{{name: "archive/a.warc.gz", data: string(a)}}, indexMembersOf(lines, "cdxj")...)))
			old := openFile(t, path)
			store := &LineStore{Dir: filepath.Join(dir, "lines")}
			storeLines(t, store, path, old)
			// The second rewrite makes the next response a revisit.
			second := revisitsOf(t, c.copied, name, responseOffsets(t, c.copied)[1])
			rp := rewriteCopy(t, dir, "a.warc.gz.copy", name, c.copied, second.data, second.entries)
			err := store.Derive(rp, stampOf(old.Member("archive/a.warc.gz")))
			if got := errors.Is(err, ErrOtherVersion); got != c.other {
				t.Fatalf("Derive: %v; of another version: %v, want %v", err, got, c.other)
			}
			_, serr := os.Stat(store.path(name, true))
			if written := !errors.Is(serr, fs.ErrNotExist); written == c.other {
				t.Errorf("derived lines written: %v, want %v", written, !c.other)
			}
		})
	}
}

// TestDeriveUncompressedTrailers: in an uncompressed member warcindex's
// length is the record's header and block, without the line ends after
// it; the rewrite's entries give whole records, and a revisit ends with
// CR LF CR LF whatever the response it replaces ended with. Lines
// derived for the copy must be warcindex's of it, or none (the rebuild
// reads the copy): not the response's length moved by the difference of
// the records' lengths, which is off by what its line ends lacked.
func TestDeriveUncompressedTrailers(t *testing.T) {
	const date = "2024-01-02T03:04:05Z"
	body := strings.Repeat("a payload worth a revisit ", 20)
	http := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n"
	response := warctest.Record("response", "http://example.com/dup", date, http+body, "WARC-Payload-Digest: sha1:"+sha1Base32(body))
	revisit := warctest.Record("revisit", "http://example.com/dup", date, http,
		"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
		"WARC-Refers-To-Target-URI: http://example.com/orig", "WARC-Refers-To-Date: "+date,
		"WARC-Payload-Digest: sha1:"+sha1Base32(body))
	after := warctest.Record("metadata", "http://example.com/dup", date, "{}", "Content-Type: application/json")
	for _, trailer := range []string{"\r\n\r\n", "\r\n", "\n", ""} {
		t.Run(fmt.Sprintf("response ending %q", trailer), func(t *testing.T) {
			old := strings.TrimSuffix(response, "\r\n\r\n") + trailer + after
			entries := []rewritelog.Entry{{OldOffset: 0, OldLength: int64(len(old) - len(after)), NewOffset: 0, NewLength: int64(len(revisit)),
				Kind: rewritelog.Revisit, PayloadDigest: "sha1:" + sha1Base32(body), RefersToURI: "http://example.com/orig", RefersTo: date}}
			checkDerived(t, "archive/a.warc", []byte(old), []byte(revisit+after), entries, trailer == "\r\n\r\n")
		})
	}
}

// TestDeriveDigestSpelling: warcindex writes a line's digest as the
// record's WARC-Payload-Digest after its first colon. A LogUpdate spells
// a revisit's digest, where the response had none, as the member's
// first line with a digest does: labelled when that one's value had two
// colons ("urn:sha1:..."). Lines derived so are not warcindex's.
func TestDeriveDigestSpelling(t *testing.T) {
	const date = "2024-01-02T03:04:05Z"
	body := strings.Repeat("a payload worth a revisit ", 20)
	http := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n"
	first := warctest.Record("resource", "urn:x:first", date, "first", "Content-Type: text/plain", "WARC-Payload-Digest: urn:sha1:AAAA")
	response := warctest.Record("response", "http://example.com/dup", date, http+body) // no WARC-Payload-Digest
	revisit := warctest.Record("revisit", "http://example.com/dup", date, http,
		"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
		"WARC-Refers-To-Target-URI: http://example.com/orig", "WARC-Refers-To-Date: "+date,
		"WARC-Payload-Digest: sha1:"+sha1Base32(body))
	old, rewritten := warctest.Gzip(first, response), warctest.Gzip(first, revisit)
	at := int64(len(warctest.Gzip(first)))
	entries := []rewritelog.Entry{{OldOffset: at, OldLength: int64(len(old)) - at, NewOffset: at, NewLength: int64(len(rewritten)) - at,
		Kind: rewritelog.Revisit, PayloadDigest: "sha1:" + sha1Base32(body), RefersToURI: "http://example.com/orig", RefersTo: date}}
	checkDerived(t, "archive/a.warc.gz", old, rewritten, entries, false)
}

// checkDerived stores the lines of a package's member old, derives
// those of its copy rewritten (the entries' File set) and checks they
// are warcindex's of the copy, or that none were derived (must: some
// must be).
func checkDerived(t *testing.T, member string, old, rewritten []byte, entries []rewritelog.Entry, must bool) {
	t.Helper()
	dir := t.TempDir()
	name := JoinName("x.wacz", member)
	file := IndexName(member)
	for i := range entries {
		entries[i].File = name
	}
	lines := freshLinesOf(t, file, old)
	path := writeTemp(t, dir, "x.wacz", packageBytes(append([]testMember{{name: member, data: string(old)}}, indexMembersOf(lines, "cdxj")...)))
	pkg := openFile(t, path)
	store := &LineStore{Dir: filepath.Join(dir, "lines")}
	storeLines(t, store, path, pkg)
	rp := rewriteCopy(t, dir, "copy", name, old, rewritten, entries)
	stamp := stampOf(pkg.Member(member))
	err := store.Derive(rp, stamp)
	f := store.ReadDerived(name, stamp, rp.Old, rp.New)
	if err != nil || f == nil {
		if must {
			t.Fatalf("Derive: %v (lines: %v)", err, f != nil)
		}
		return // the rebuild reads the copy
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Sort(got)
	if want := freshLinesOf(t, file, rewritten); !slices.Equal(got, want) {
		t.Errorf("derived lines:\n%s\nwarcindex of the copy:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
