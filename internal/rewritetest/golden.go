package rewritetest

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"hash"
	"math/rand/v2"
	"strconv"
	"strings"
	"warcdedup/digest"
)

// GoldenPayload is the payload of every golden case: random bytes, so that
// the revisit is smaller than the record in a .warc.gz too.
var GoldenPayload = func() []byte {
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

// GoldenCase is a response record built from its header lines, with
// {placeholders} for digests of its payload and block: one of the cases
// whose revisit (and, undone, the record again) is checked byte for byte
// (refs.TestRevisitGolden, restore.TestUndoGolden).
type GoldenCase struct {
	Name    string
	Golden  string // file name under testdata/golden
	Version string // the version line
	LF      bool   // the WARC header's lines end in LF alone
	Fields  []string
	Head    string           // the HTTP head
	Algo    digest.Algorithm // of the manifest line
	RefURI  string           // manifest field 9 (field 10 is always the same)
	// What the revisit must hold: the WARC-Payload-Digest (placeholders
	// allowed), the algorithm of WARC-Block-Digest (0: none), and its
	// field names in order.
	WantPayloadDigest string
	WantBlockAlgo     digest.Algorithm
	WantOrder         []string
	// KeepsHeader: undo's rule would not give the record back byte for
	// byte, so the revisit keeps its header in Warcdedup-Original-Header
	// (after WARC-Truncated, left out of WantOrder).
	KeepsHeader bool
	// AddsPayloadDigest: the revisit names the WARC-Payload-Digest it
	// added in Warcdedup-Added-Fields (left out of WantOrder too).
	AddsPayloadDigest bool
}

// GoldenRefDate is the date of every golden case's original.
const GoldenRefDate = "2024-06-01T08:00:00Z"

const (
	crlfHead = "HTTP/1.1 200 OK\r\nDate: Tue, 04 Jun 2024 10:15:02 GMT\r\nServer: ECS (nyb/1D13)\r\nContent-Type: image/png\r\nContent-Length: 3000\r\nConnection: close\r\n\r\n"
	lfHead   = "HTTP/1.0 200 OK\nDate: Sun, 06 Jul 2008 12:00:00 GMT\nServer: Apache/2.2.8\nContent-Type: application/octet-stream\nContent-Length: 3000\n\n"
)

// GoldenCases are the cases of records.md section 2: versions, line
// ends, right, wrong, missing and unknown digests, an extension field.
var GoldenCases = []GoldenCase{
	{
		Name: "WARC/1.0, own sha1 digest right, sha1 block digest, Content-Type", Golden: "warc10-own-sha1-right.warc",
		Version: "WARC/1.0",
		Fields: []string{
			"WARC-Type: response",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Payload-Digest: {sha1}",
			"WARC-IP-Address: 93.184.216.34",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0a>",
			"WARC-Block-Digest: {block-sha1}",
			"Content-Type: application/http; msgtype=response",
		},
		Head: crlfHead, Algo: digest.SHA1, RefURI: "http://example.com/img/logo.png",
		WantPayloadDigest: "{sha1}", WantBlockAlgo: digest.SHA1,
		WantOrder: []string{"WARC-Type", "WARC-Target-URI", "WARC-Date", "WARC-Payload-Digest", "WARC-IP-Address",
			"WARC-Record-ID", "WARC-Block-Digest", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date",
			"WARC-Truncated", "Content-Type", "Content-Length"},
	},
	{
		Name: "WARC/1.1, own sha1 digest wrong, sha1 block digest", Golden: "warc11-own-sha1-wrong.warc", KeepsHeader: true,
		Version: "WARC/1.1",
		Fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0a>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-IP-Address: 93.184.216.34",
			"Content-Type: application/http; msgtype=response",
			"WARC-Payload-Digest: sha1:2ZD2IYWV3YOKUTLTUXTLIZNLKESMDTO4",
			"WARC-Block-Digest: {block-sha1}",
		},
		Head: crlfHead, Algo: digest.SHA1, RefURI: "http://example.com/img/logo.png",
		WantPayloadDigest: "{sha1}", WantBlockAlgo: digest.SHA1,
		WantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-IP-Address",
			"WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Payload-Digest", "WARC-Block-Digest", "Content-Length"},
	},
	{
		Name: "WARC/1.1, no payload or block digest, no Content-Type, refers to its own URI", Golden: "warc11-no-digests.warc", AddsPayloadDigest: true,
		Version: "WARC/1.1",
		Fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:9e1f8c1a-3b2d-4c5e-8f70-112233445566>",
			"WARC-Warcinfo-ID: <urn:uuid:00000000-1111-4222-8333-444444444444>",
			"WARC-Concurrent-To: <urn:uuid:55555555-6666-4777-8888-999999999999>",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-IP-Address: 2001:db8::1",
		},
		Head: crlfHead, Algo: digest.SHA1, RefURI: "http://www.example.com/static/logo.png",
		WantPayloadDigest: "{sha1}",
		WantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Warcinfo-ID", "WARC-Concurrent-To", "WARC-Target-URI",
			"WARC-Date", "WARC-IP-Address", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date",
			"WARC-Payload-Digest", "WARC-Truncated", "Content-Length"},
	},
	{
		Name: "WARC/0.17, own md5 base16 digest right, md5 block digest", Golden: "warc017-own-md5-base16.warc",
		Version: "WARC/0.17",
		Fields: []string{
			"WARC-Type: response",
			"WARC-Target-URI: http://archive.example.org/2008/file.bin",
			"WARC-Date: 2008-07-06T12:00:00Z",
			"WARC-Payload-Digest: md5:{md5hex}",
			"WARC-IP-Address: 192.0.2.7",
			"WARC-Record-ID: <urn:uuid:1a2b3c4d-0000-4000-8000-00000000abcd>",
			"Content-Type: application/http; msgtype=response",
			"WARC-Block-Digest: md5:{block-md5hex}",
		},
		Head: crlfHead, Algo: digest.SHA1, RefURI: "http://archive.example.org/2008/old.bin",
		WantPayloadDigest: "md5:{md5hex}", WantBlockAlgo: digest.MD5,
		WantOrder: []string{"WARC-Type", "WARC-Target-URI", "WARC-Date", "WARC-Payload-Digest", "WARC-IP-Address",
			"WARC-Record-ID", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Block-Digest", "Content-Length"},
	},
	{
		Name: "WARC/0.18 with LF line ends, own sha1 base16 digest right, LF HTTP head", Golden: "warc018-lf-own-sha1-base16.warc", KeepsHeader: true,
		Version: "WARC/0.18", LF: true,
		Fields: []string{
			"WARC-Type: response",
			"WARC-Target-URI: http://archive.example.org/2008/file.bin",
			"WARC-Date: 2008-07-06T12:00:00Z",
			"WARC-Payload-Digest: sha1:{sha1hex}",
			"WARC-IP-Address: 192.0.2.7",
			"WARC-Record-ID: <urn:uuid:1a2b3c4d-0000-4000-8000-00000000abce>",
			"Content-Type: application/http; msgtype=response",
			"WARC-Block-Digest: sha1:{block-sha1hex}",
		},
		Head: lfHead, Algo: digest.SHA1, RefURI: "http://archive.example.org/2008/old.bin",
		WantPayloadDigest: "sha1:{sha1hex}", WantBlockAlgo: digest.SHA1,
		WantOrder: []string{"WARC-Type", "WARC-Target-URI", "WARC-Date", "WARC-Payload-Digest", "WARC-IP-Address",
			"WARC-Record-ID", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Block-Digest", "Content-Length"},
	},
	{
		Name:   "WARC/1.0, own md5 digest wrong, sha256 block digest, extension field, Content-Length before Content-Type",
		Golden: "warc10-own-md5-wrong-sha256-block.warc", KeepsHeader: true, Version: "WARC/1.0",
		Fields: []string{
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
		Head: crlfHead, Algo: digest.SHA1, RefURI: "http://example.com/img/logo.png",
		WantPayloadDigest: "{sha1}", WantBlockAlgo: digest.SHA256,
		WantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-IP-Address",
			"X-Crawler-Note", "WARC-Payload-Digest", "WARC-Block-Digest", "WARC-Profile", "WARC-Refers-To-Target-URI",
			"WARC-Refers-To-Date", "WARC-Truncated", "Content-Length", "Content-Type"},
	},
	{
		Name: "WARC/1.1, sha256 manifest, own SHA-1 digest right in lower-case base32", Golden: "warc11-sha256-manifest-own-sha1.warc",
		Version: "WARC/1.1",
		Fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0b>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"Content-Type: application/http; msgtype=response",
			"WARC-Payload-Digest: SHA-1:{sha1lower}",
		},
		Head: crlfHead, Algo: digest.SHA256, RefURI: "http://example.com/img/logo.png",
		WantPayloadDigest: "SHA-1:{sha1lower}",
		WantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
			"WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Payload-Digest", "Content-Length"},
	},
	{
		Name: "WARC/1.0, md5 manifest, own sha1 digest wrong", Golden: "warc10-md5-manifest-own-sha1-wrong.warc", KeepsHeader: true,
		Version: "WARC/1.0",
		Fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0c>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
			"WARC-Block-Digest: {block-sha1}",
			"Content-Type: application/http; msgtype=response",
		},
		Head: crlfHead, Algo: digest.MD5, RefURI: "http://example.com/img/logo.png",
		WantPayloadDigest: "md5:{md5hex}", WantBlockAlgo: digest.SHA1,
		WantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-Payload-Digest",
			"WARC-Block-Digest", "WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "Content-Length"},
	},
	{
		Name: "WARC/1.1, malformed sha256 block digest", Golden: "warc11-malformed-sha256-block.warc", KeepsHeader: true,
		Version: "WARC/1.1",
		Fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0d>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"Content-Type: application/http; msgtype=response",
			"WARC-Block-Digest: sha256:not-a-digest",
			"WARC-Payload-Digest: {sha1}",
		},
		Head: crlfHead, Algo: digest.SHA1, RefURI: "http://example.com/img/logo.png",
		WantPayloadDigest: "{sha1}", WantBlockAlgo: digest.SHA256,
		WantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
			"WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated",
			"Content-Type", "WARC-Block-Digest", "WARC-Payload-Digest", "Content-Length"},
	},
	{
		Name: "WARC/1.0, block digest of an unknown algorithm", Golden: "warc10-unknown-block-algorithm.warc", KeepsHeader: true,
		Version: "WARC/1.0",
		Fields: []string{
			"WARC-Type: response",
			"WARC-Record-ID: <urn:uuid:0c7f3a52-9d1b-4e8e-b0a4-5f6e7d8c9b0e>",
			"WARC-Date: 2024-06-04T10:15:02Z",
			"WARC-Target-URI: http://www.example.com/static/logo.png",
			"WARC-Block-Digest: crc32:deadbeef",
			"Content-Type: application/http; msgtype=response",
		},
		Head: crlfHead, Algo: digest.SHA1, RefURI: "http://example.com/img/logo.png",
		WantPayloadDigest: "{sha1}", WantBlockAlgo: digest.SHA1,
		WantOrder: []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "WARC-Block-Digest",
			"WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Payload-Digest", "WARC-Truncated",
			"Content-Type", "Content-Length"},
	},
}

// Placeholders returns the replacer of a case's {placeholders}.
func (tc *GoldenCase) Placeholders() *strings.Replacer {
	p, block := GoldenPayload, append([]byte(tc.Head), GoldenPayload...)
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

// Record returns the response record of the case.
func (tc *GoldenCase) Record() []byte {
	nl := "\r\n"
	if tc.LF {
		nl = "\n"
	}
	rep := tc.Placeholders()
	var b bytes.Buffer
	b.WriteString(tc.Version + nl)
	hasLength := false
	for _, f := range tc.Fields {
		hasLength = hasLength || strings.HasPrefix(f, "Content-Length:")
		b.WriteString(rep.Replace(f) + nl)
	}
	if !hasLength {
		b.WriteString(rep.Replace("Content-Length: {length}") + nl)
	}
	b.WriteString(nl)
	b.WriteString(tc.Head)
	b.Write(GoldenPayload)
	b.WriteString("\r\n\r\n")
	return b.Bytes()
}

// Field returns the value of a field of the case's record.
func (tc *GoldenCase) Field(name string) (string, bool) {
	for _, f := range tc.Fields {
		n, v, _ := strings.Cut(f, ":")
		if strings.EqualFold(n, name) {
			return tc.Placeholders().Replace(strings.TrimSpace(v)), true
		}
	}
	return "", false
}

// FormatDigest writes a digest as the manifest does (sha1 in base32, the
// others in hex), computed with the standard library.
func FormatDigest(a digest.Algorithm, b []byte) string {
	switch a {
	case digest.MD5:
		return "md5:" + hex.EncodeToString(sumOf(md5.New(), b))
	case digest.SHA1:
		return "sha1:" + b32(sumOf(sha1.New(), b))
	case digest.SHA256:
		return "sha256:" + hex.EncodeToString(sumOf(sha256.New(), b))
	}
	panic("FormatDigest: " + a.String())
}
