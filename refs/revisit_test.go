package refs

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"flag"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/digest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/record"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenPayload is the payload of every golden case: random bytes, so that
// the revisit is smaller than the record in a .warc.gz too.
var goldenPayload = func() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 3000)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

func sumOf(h hash.Hash, b ...[]byte) []byte {
	for _, p := range b {
		h.Write(p)
	}
	return h.Sum(nil)
}

func b32(b []byte) string { return base32.StdEncoding.EncodeToString(b) }

// goldenCase is a response record built from its header lines, with
// {placeholders} for digests of its payload and block.
type goldenCase struct {
	name    string
	golden  string // file name under testdata/golden
	version string // the version line
	lf      bool   // the WARC header's lines end in LF alone
	fields  []string
	head    string           // the HTTP head
	algo    digest.Algorithm // of the manifest line
	refURI  string           // manifest field 9 (field 10 is always the same)
	// What the revisit must hold: the WARC-Payload-Digest (placeholders
	// allowed), the algorithm of WARC-Block-Digest (0: none), and its
	// field names in order.
	wantPayloadDigest string
	wantBlockAlgo     digest.Algorithm
	wantOrder         []string
	// keepsHeader: undo's rule would not give the record back byte for
	// byte, so the revisit keeps its header in Warcdedup-Original-Header
	// (after WARC-Truncated, left out of wantOrder).
	keepsHeader bool
	// addsPayloadDigest: the revisit names the WARC-Payload-Digest it
	// added in Warcdedup-Added-Fields (left out of wantOrder too).
	addsPayloadDigest bool
}

const (
	goldenRefDate = "2024-06-01T08:00:00Z"
	crlfHead      = "HTTP/1.1 200 OK\r\nDate: Tue, 04 Jun 2024 10:15:02 GMT\r\nServer: ECS (nyb/1D13)\r\nContent-Type: image/png\r\nContent-Length: 3000\r\nConnection: close\r\n\r\n"
	lfHead        = "HTTP/1.0 200 OK\nDate: Sun, 06 Jul 2008 12:00:00 GMT\nServer: Apache/2.2.8\nContent-Type: application/octet-stream\nContent-Length: 3000\n\n"
)

var goldenCases = []goldenCase{
	{
		name: "WARC/1.0, own sha1 digest right, sha1 block digest, Content-Type", golden: "warc10-own-sha1-right.warc",
		version: "WARC/1.0",
		fields: []string{
			"WARC-Type: response",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Payload-Digest: {sha1}",
			"WARC-IP-Address: 93.184.216.34",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0a>",
			"WARC-Block-Digest: {block-sha1}",
			"Content-Type: application/http; msgtype=response",
		},
		head: crlfHead, algo: digest.SHA1, refURI: "http://example.com/img/logo.png",
		wantPayloadDigest: "{sha1}", wantBlockAlgo: digest.SHA1,
		wantOrder: []string{"WARC-Type", "WARC-Target-URI", "WARC-Date", "WARC-Payload-Digest", "WARC-IP-Address",
			"WARC-Record-ID", "WARC-Block-Digest", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date",
			"WARC-Truncated", "Content-Type", "Content-Length"},
	},
	{
		name: "WARC/1.1, own sha1 digest wrong, sha1 block digest", golden: "warc11-own-sha1-wrong.warc", keepsHeader: true,
		version: "WARC/1.1",
		fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0a>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-IP-Address: 93.184.216.34",
			"Content-Type: application/http; msgtype=response",
			"WARC-Payload-Digest: sha1:2ZD2IYWV3YOKUTLTUXTLIZNLKESMDTO4",
			"WARC-Block-Digest: {block-sha1}",
		},
		head: crlfHead, algo: digest.SHA1, refURI: "http://example.com/img/logo.png",
		wantPayloadDigest: "{sha1}", wantBlockAlgo: digest.SHA1,
		wantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-IP-Address",
			"WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Payload-Digest", "WARC-Block-Digest", "Content-Length"},
	},
	{
		name: "WARC/1.1, no payload or block digest, no Content-Type, refers to its own URI", golden: "warc11-no-digests.warc", addsPayloadDigest: true,
		version: "WARC/1.1",
		fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:9e1f8c1a-3b2d-4c5e-8f70-112233445566>",
			"WARC-Warcinfo-ID: <urn:uuid:00000000-1111-4222-8333-444444444444>",
			"WARC-Concurrent-To: <urn:uuid:55555555-6666-4777-8888-999999999999>",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-IP-Address: 2001:db8::1",
		},
		head: crlfHead, algo: digest.SHA1, refURI: "http://www.example.com/static/logo.png",
		wantPayloadDigest: "{sha1}",
		wantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Warcinfo-ID", "WARC-Concurrent-To", "WARC-Target-URI",
			"WARC-Date", "WARC-IP-Address", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date",
			"WARC-Payload-Digest", "WARC-Truncated", "Content-Length"},
	},
	{
		name: "WARC/0.17, own md5 base16 digest right, md5 block digest", golden: "warc017-own-md5-base16.warc",
		version: "WARC/0.17",
		fields: []string{
			"WARC-Type: response",
			"WARC-Target-URI: http://archive.example.org/2008/file.bin",
			"WARC-Date: 2008-07-06T12:00:00Z",
			"WARC-Payload-Digest: md5:{md5hex}",
			"WARC-IP-Address: 192.0.2.7",
			"WARC-Record-ID: <urn:uuid:1a2b3c4d-0000-4000-8000-00000000abcd>",
			"Content-Type: application/http; msgtype=response",
			"WARC-Block-Digest: md5:{block-md5hex}",
		},
		head: crlfHead, algo: digest.SHA1, refURI: "http://archive.example.org/2008/old.bin",
		wantPayloadDigest: "md5:{md5hex}", wantBlockAlgo: digest.MD5,
		wantOrder: []string{"WARC-Type", "WARC-Target-URI", "WARC-Date", "WARC-Payload-Digest", "WARC-IP-Address",
			"WARC-Record-ID", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Block-Digest", "Content-Length"},
	},
	{
		name: "WARC/0.18 with LF line ends, own sha1 base16 digest right, LF HTTP head", golden: "warc018-lf-own-sha1-base16.warc", keepsHeader: true,
		version: "WARC/0.18", lf: true,
		fields: []string{
			"WARC-Type: response",
			"WARC-Target-URI: http://archive.example.org/2008/file.bin",
			"WARC-Date: 2008-07-06T12:00:00Z",
			"WARC-Payload-Digest: sha1:{sha1hex}",
			"WARC-IP-Address: 192.0.2.7",
			"WARC-Record-ID: <urn:uuid:1a2b3c4d-0000-4000-8000-00000000abce>",
			"Content-Type: application/http; msgtype=response",
			"WARC-Block-Digest: sha1:{block-sha1hex}",
		},
		head: lfHead, algo: digest.SHA1, refURI: "http://archive.example.org/2008/old.bin",
		wantPayloadDigest: "sha1:{sha1hex}", wantBlockAlgo: digest.SHA1,
		wantOrder: []string{"WARC-Type", "WARC-Target-URI", "WARC-Date", "WARC-Payload-Digest", "WARC-IP-Address",
			"WARC-Record-ID", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Block-Digest", "Content-Length"},
	},
	{
		name:   "WARC/1.0, own md5 digest wrong, sha256 block digest, extension field, Content-Length before Content-Type",
		golden: "warc10-own-md5-wrong-sha256-block.warc", keepsHeader: true, version: "WARC/1.0",
		fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:77777777-8888-4999-aaaa-bbbbbbbbbbbb>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-IP-Address: 93.184.216.34",
			"X-Crawler-Note: fetched twice",
			"WARC-Payload-Digest: md5:0123456789abcdef0123456789abcdef",
			"WARC-Block-Digest: sha256:{block-sha256hex}",
			"Content-Length: {length}",
			"Content-Type: application/http; msgtype=response",
		},
		head: crlfHead, algo: digest.SHA1, refURI: "http://example.com/img/logo.png",
		wantPayloadDigest: "{sha1}", wantBlockAlgo: digest.SHA256,
		wantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-IP-Address",
			"X-Crawler-Note", "WARC-Payload-Digest", "WARC-Block-Digest", "WARC-Profile", "WARC-Refers-To-Target-URI",
			"WARC-Refers-To-Date", "WARC-Truncated", "Content-Length", "Content-Type"},
	},
	{
		name: "WARC/1.1, sha256 manifest, own SHA-1 digest right in lower-case base32", golden: "warc11-sha256-manifest-own-sha1.warc",
		version: "WARC/1.1",
		fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0b>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"Content-Type: application/http; msgtype=response",
			"WARC-Payload-Digest: SHA-1:{sha1lower}",
		},
		head: crlfHead, algo: digest.SHA256, refURI: "http://example.com/img/logo.png",
		wantPayloadDigest: "SHA-1:{sha1lower}",
		wantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
			"WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Payload-Digest", "Content-Length"},
	},
	{
		name: "WARC/1.0, md5 manifest, own sha1 digest wrong", golden: "warc10-md5-manifest-own-sha1-wrong.warc", keepsHeader: true,
		version: "WARC/1.0",
		fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0c>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
			"WARC-Block-Digest: {block-sha1}",
			"Content-Type: application/http; msgtype=response",
		},
		head: crlfHead, algo: digest.MD5, refURI: "http://example.com/img/logo.png",
		wantPayloadDigest: "md5:{md5hex}", wantBlockAlgo: digest.SHA1,
		wantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-Payload-Digest",
			"WARC-Block-Digest", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "Content-Length"},
	},
	{
		name: "WARC/1.1, malformed sha256 block digest", golden: "warc11-malformed-sha256-block.warc", keepsHeader: true,
		version: "WARC/1.1",
		fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0d>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"Content-Type: application/http; msgtype=response",
			"WARC-Block-Digest: sha256:not-a-digest",
			"WARC-Payload-Digest: {sha1}",
		},
		head: crlfHead, algo: digest.SHA1, refURI: "http://example.com/img/logo.png",
		wantPayloadDigest: "{sha1}", wantBlockAlgo: digest.SHA256,
		wantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
			"WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Block-Digest", "WARC-Payload-Digest", "Content-Length"},
	},
	{
		name: "WARC/1.0, block digest of an unknown algorithm", golden: "warc10-unknown-block-algorithm.warc", keepsHeader: true,
		version: "WARC/1.0",
		fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0e>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-Block-Digest: crc32:deadbeef",
			"Content-Type: application/http; msgtype=response",
		},
		head: crlfHead, algo: digest.SHA1, refURI: "http://example.com/img/logo.png",
		wantPayloadDigest: "{sha1}", wantBlockAlgo: digest.SHA1,
		wantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-Block-Digest",
			"WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Payload-Digest", "WARC-Truncated",
			"Content-Type", "Content-Length"},
	},
}

// placeholders returns the replacer of a case's {placeholders}.
func (tc *goldenCase) placeholders() *strings.Replacer {
	p, block := goldenPayload, append([]byte(tc.head), goldenPayload...)
	return strings.NewReplacer(
		"{sha1}", "sha1:"+b32(sumOf(sha1.New(), p)),
		"{sha1hex}", strings.ToUpper(hex.EncodeToString(sumOf(sha1.New(), p))),
		"{sha1lower}", strings.ToLower(b32(sumOf(sha1.New(), p))),
		"{md5hex}", hex.EncodeToString(sumOf(md5.New(), p)),
		"{block-sha1}", "sha1:"+b32(sumOf(sha1.New(), block)),
		"{block-sha1hex}", hex.EncodeToString(sumOf(sha1.New(), block)),
		"{block-md5hex}", hex.EncodeToString(sumOf(md5.New(), block)),
		"{block-sha256hex}", hex.EncodeToString(sumOf(sha256.New(), block)),
		"{length}", strconv.Itoa(len(block)),
	)
}

// record returns the response record of the case.
func (tc *goldenCase) record() []byte {
	nl := "\r\n"
	if tc.lf {
		nl = "\n"
	}
	rep := tc.placeholders()
	var b bytes.Buffer
	b.WriteString(tc.version + nl)
	hasLength := false
	for _, f := range tc.fields {
		hasLength = hasLength || strings.HasPrefix(f, "Content-Length:")
		b.WriteString(rep.Replace(f) + nl)
	}
	if !hasLength {
		b.WriteString(rep.Replace("Content-Length: {length}") + nl)
	}
	b.WriteString(nl)
	b.WriteString(tc.head)
	b.Write(goldenPayload)
	b.WriteString("\r\n\r\n")
	return b.Bytes()
}

func (tc *goldenCase) field(name string) (string, bool) {
	for _, f := range tc.fields {
		n, v, _ := strings.Cut(f, ":")
		if strings.EqualFold(n, name) {
			return tc.placeholders().Replace(strings.TrimSpace(v)), true
		}
	}
	return "", false
}

// formatDigest writes a digest as the manifest does (sha1 in base32, the
// others in hex), computed with the standard library.
func formatDigest(a digest.Algorithm, b []byte) string {
	switch a {
	case digest.MD5:
		return "md5:" + hex.EncodeToString(sumOf(md5.New(), b))
	case digest.SHA1:
		return "sha1:" + b32(sumOf(sha1.New(), b))
	case digest.SHA256:
		return "sha256:" + hex.EncodeToString(sumOf(sha256.New(), b))
	}
	panic("formatDigest: " + a.String())
}

// TestRevisitGolden rewrites one response of each case, in a .warc and a
// .warc.gz file, and checks the revisit field by field against records.md
// section 2 and byte for byte against its golden file (go test -update
// rewrites them; check a rewritten one by hand against records.md).
func TestRevisitGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.record()
			dir, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
			warctest.WriteFile(t, dir, "r.warc", rec)
			warctest.WriteFile(t, dir, "r.warc.gz", warctest.Gzip(string(rec)))
			uri, _ := tc.field("WARC-Target-URI")
			date, _ := tc.field("WARC-Date")
			// The original, served the same way, in a file of its own.
			// It shares the record's WARC version: the replay policy keeps
			// pre-standard WARC/0.x files a container of their own.
			orig := strings.Replace(warctest.Record("response", tc.refURI, goldenRefDate, tc.head+string(goldenPayload)),
				"WARC/1.0", tc.version, 1)
			warctest.WriteFile(t, dir, "o.warc", []byte(orig))
			d := formatDigest(tc.algo, goldenPayload)
			lines := []manifest.Line{{File: "o.warc", Offset: 0, Length: int64(len(orig)), URI: tc.refURI, Date: goldenRefDate,
				Digest: d, Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}}
			for _, name := range []string{"r.warc", "r.warc.gz"} {
				st, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, manifest.Line{File: name, Offset: 0, Length: st.Size(), URI: manifest.URIField(&record.Record{URI: uri}), Date: date,
					Digest: d, Copy: 2, RefURI: tc.refURI, RefDate: goldenRefDate, Fields: 10})
			}
			o := mustRun(t, Rewriter{Roots: []string{dir}, OutputDir: out}, lines)
			if o.stats.Revisits != 2 {
				t.Fatalf("stats %+v, want 2 revisits", o.stats)
			}
			got, err := os.ReadFile(filepath.Join(out, "r.warc"))
			if err != nil {
				t.Fatal(err)
			}
			checkRevisitFields(t, &tc, got)

			gz, err := os.ReadFile(filepath.Join(out, "r.warc.gz"))
			if err != nil {
				t.Fatal(err)
			}
			br := bytes.NewReader(gz)
			zr, err := gzip.NewReader(br)
			if err != nil {
				t.Fatal(err)
			}
			zr.Multistream(false)
			member, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(member, got) {
				t.Errorf("the .warc.gz revisit decompresses to other bytes than the .warc one:\n%s", member)
			}
			if br.Len() != 0 {
				t.Errorf("the .warc.gz revisit is not one gzip member: %d bytes follow the first", br.Len())
			}

			golden := filepath.Join("testdata", "golden", tc.golden)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the revisit differs from %s:\n%s\nwant\n%s", golden, got, want)
			}
		})
	}
}

// checkRevisitFields checks a revisit against records.md section 2 without
// the record package: the header is split by hand.
func checkRevisitFields(t *testing.T, tc *goldenCase, got []byte) {
	t.Helper()
	end := bytes.Index(got, []byte("\r\n\r\n"))
	if end < 0 {
		t.Fatalf("no blank line ends the header:\n%q", got)
	}
	header, block := got[:end+2], got[end+4:]
	for i, c := range header {
		if c == '\n' && (i == 0 || header[i-1] != '\r') || c == '\r' && (i+1 == len(header) || header[i+1] != '\n') {
			t.Errorf("the header has a bare CR or LF at byte %d", i)
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(header), "\r\n"), "\r\n")
	if lines[0] != tc.version {
		t.Errorf("version line %q, want %q", lines[0], tc.version)
	}
	var names []string
	values := map[string]string{}
	for _, l := range lines[1:] {
		n, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Errorf("header line %q is not \"Name: value\"", l)
			continue
		}
		if _, dup := values[n]; dup {
			t.Errorf("field %s twice", n)
		}
		if n != fieldOriginalHeader && n != fieldAddedFields {
			names = append(names, n)
		} else if names[len(names)-1] != "WARC-Truncated" {
			t.Errorf("%s follows %s, want WARC-Truncated", n, names[len(names)-1])
		}
		values[n] = v
	}
	kept, keeps := values[fieldOriginalHeader]
	switch {
	case keeps != tc.keepsHeader:
		t.Errorf("%s present: %v, want %v", fieldOriginalHeader, keeps, tc.keepsHeader)
	case keeps:
		rec := tc.record()
		header := rec[:bytes.Index(rec, []byte(tc.head))]
		if got, err := unescapePercent(kept); err != nil || !bytes.Equal(got, header) {
			t.Errorf("%s holds\n%q (%v)\nwant the record's header\n%q", fieldOriginalHeader, got, err, header)
		}
	}
	if added, ok := values[fieldAddedFields]; ok != tc.addsPayloadDigest || ok && added != "WARC-Payload-Digest" {
		t.Errorf("%s: %q (present: %v), want it to name WARC-Payload-Digest: %v", fieldAddedFields, added, ok, tc.addsPayloadDigest)
	}
	if v, ok := values[fieldOriginalTrailer]; ok {
		t.Errorf("%s: %q, but the record ended in CRLF CRLF", fieldOriginalTrailer, v)
	}
	if strings.Join(names, "\n") != strings.Join(tc.wantOrder, "\n") {
		t.Errorf("fields\n  %s\nwant\n  %s", strings.Join(names, "\n  "), strings.Join(tc.wantOrder, "\n  "))
	}
	rep := tc.placeholders()
	want := map[string]string{
		"WARC-Type":                 "revisit",
		"WARC-Profile":              "http://netpreserve.org/warc/" + strings.TrimPrefix(tc.version, "WARC/") + "/revisit/identical-payload-digest",
		"WARC-Refers-To-Target-URI": tc.refURI,
		"WARC-Refers-To-Date":       goldenRefDate,
		"WARC-Payload-Digest":       rep.Replace(tc.wantPayloadDigest),
		"WARC-Truncated":            "length",
		"Content-Length":            strconv.Itoa(len(tc.head)),
	}
	if tc.wantBlockAlgo != 0 {
		want["WARC-Block-Digest"] = formatDigest(tc.wantBlockAlgo, []byte(tc.head))
	} else if v, ok := values["WARC-Block-Digest"]; ok {
		t.Errorf("WARC-Block-Digest %q, the response had none", v)
	}
	for _, f := range tc.fields { // every other field unchanged
		n, _, _ := strings.Cut(f, ":")
		if _, changed := want[n]; !changed && n != "WARC-Block-Digest" {
			want[n], _ = tc.field(n)
		}
	}
	for n, w := range want {
		if g, ok := values[n]; !ok || g != w {
			t.Errorf("%s: %q, want %q", n, g, w)
		}
	}
	if string(block) != tc.head+"\r\n\r\n" {
		t.Errorf("block and record end\n%q\nwant the HTTP head byte for byte and CRLF CRLF\n%q", block, tc.head+"\r\n\r\n")
	}
}

// The fields in which a revisit keeps what undo needs (revisit.Kept).
const (
	fieldAddedFields     = "Warcdedup-Added-Fields"
	fieldOriginalHeader  = "Warcdedup-Original-Header"
	fieldOriginalTrailer = "Warcdedup-Original-Trailer"
)

// unescapePercent decodes a field value whose bytes outside printable
// ASCII, and '%', are written %XX.
func unescapePercent(s string) ([]byte, error) {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return nil, fmt.Errorf("%q ends inside an escape", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return nil, err
		}
		b = append(b, byte(n))
		i += 2
	}
	return b, nil
}
