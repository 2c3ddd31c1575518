package gen

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"warcdedup/digest"
	"warcdedup/internal/corpustest"
	"warcdedup/manifest"
	"warcdedup/policy"
)

const collisionDir = "../../../shared/collisions"

// write runs Write into a fresh temporary directory.
func write(t *testing.T, cfg Config) (string, *Result) {
	t.Helper()
	dir := t.TempDir()
	res, err := Write(dir, cfg)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return dir, res
}

// independentDigest hashes b with the standard library alone, in the
// manifest's form, so the generator's digest code is not checked by itself.
func independentDigest(a digest.Algorithm, b []byte) string {
	var h hash.Hash
	switch a {
	case digest.MD5:
		h = md5.New()
	case digest.SHA1:
		h = sha1.New()
	case digest.SHA256:
		h = sha256.New()
	case digest.SHA512:
		h = sha512.New()
	}
	h.Write(b)
	if a == digest.SHA1 {
		return "sha1:" + base32.StdEncoding.EncodeToString(h.Sum(nil))
	}
	return a.String() + ":" + hex.EncodeToString(h.Sum(nil))
}

func TestDeterministic(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"warc.gz only", Config{Files: 3, Records: 200, DupRate: 0.3, Seed: 7, Formats: []Format{WARC10Gz}}},
		{"all formats, everything on", Config{Files: 6, Records: 300, DupRate: 0.4, Seed: 42, Chunked: 0.2,
			NonCandidates: true, Quirks: true, Huge: 600 << 10, MeanPayload: 8 << 10}},
		{"md5, plain files", Config{Files: 4, Records: 150, DupRate: 0.2, Seed: -3, Algorithm: digest.MD5,
			Formats: []Format{WARC10, WARC11, ARC}, NonCandidates: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir1, r1 := write(t, tt.cfg)
			dir2, r2 := write(t, tt.cfg)
			if !reflect.DeepEqual(r1, r2) {
				t.Fatalf("two runs gave different results:\n%s\n%s", r1.Summary(), r2.Summary())
			}
			if len(r1.Names) != tt.cfg.Files {
				t.Fatalf("wrote %d files, want %d", len(r1.Names), tt.cfg.Files)
			}
			for _, name := range r1.Names {
				b1, err1 := os.ReadFile(filepath.Join(dir1, name))
				b2, err2 := os.ReadFile(filepath.Join(dir2, name))
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !bytes.Equal(b1, b2) {
					t.Errorf("%s differs between two runs with seed %d", name, tt.cfg.Seed)
				}
			}
			other := tt.cfg
			other.Seed++
			_, r3 := write(t, other)
			if reflect.DeepEqual(r1.Expected, r3.Expected) {
				t.Errorf("seeds %d and %d gave the same manifest", tt.cfg.Seed, other.Seed)
			}
		})
	}
}

// rec is one record found by walking a file.
type rec struct {
	offset, length int64
	raw            []byte // decompressed for .gz
}

// walk splits a file into its records by its own framing (gzip members,
// Content-Length, ARC length), independently of the generator.
func walk(t *testing.T, path string) []rec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []rec
	if strings.HasSuffix(path, ".gz") {
		br := bytes.NewReader(data)
		for br.Len() > 0 {
			off := int64(len(data) - br.Len())
			zr, err := gzip.NewReader(br)
			if err != nil {
				t.Fatalf("%s@%d: %v", path, off, err)
			}
			zr.Multistream(false)
			raw, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s@%d: %v", path, off, err)
			}
			out = append(out, rec{off, int64(len(data)-br.Len()) - off, raw})
		}
		return out
	}
	arc := strings.HasSuffix(path, ".arc")
	for off := 0; off < len(data); {
		var n int
		if arc {
			nl := bytes.IndexByte(data[off:], '\n')
			f := strings.Fields(string(data[off : off+nl]))
			l, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				t.Fatalf("%s@%d: bad ARC record line %q", path, off, data[off:off+nl])
			}
			n = nl + 1 + l
			// One line feed after a record; ARC quirks have none or two.
			for k := 0; k < 3 && off+n < len(data) && data[off+n] == '\n'; k++ {
				n++
			}
		} else {
			end := bytes.Index(data[off:], []byte("\r\n\r\n"))
			h := parseWARCHeader(t, data[off:off+end+4])
			l, err := strconv.Atoi(h["Content-Length"])
			if err != nil {
				t.Fatalf("%s@%d: bad Content-Length", path, off)
			}
			n = end + 4 + l + 4
		}
		if off+n > len(data) {
			t.Fatalf("%s@%d: record of %d bytes overruns the file", path, off, n)
		}
		out = append(out, rec{int64(off), int64(n), data[off : off+n]})
		off += n
	}
	return out
}

func parseWARCHeader(t *testing.T, b []byte) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(b), "\r\n\r\n"), "\r\n")
	if lines[0] != "WARC/1.0" && lines[0] != "WARC/1.1" {
		t.Fatalf("version line %q", lines[0])
	}
	h := map[string]string{"version": lines[0]}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("header line %q", l)
		}
		h[k] = v
	}
	return h
}

// parsed is a record taken apart.
type parsed struct {
	header  map[string]string // WARC header, or for ARC "url", "date", "type"
	block   []byte
	status  int // HTTP status, 0 if the block is not an HTTP response
	payload []byte
}

func parse(t *testing.T, raw []byte, arc bool) parsed {
	t.Helper()
	var p parsed
	if arc {
		nl := bytes.IndexByte(raw, '\n')
		f := strings.Split(string(raw[:nl]), " ")
		n := len(f)
		l, _ := strconv.Atoi(f[n-1])
		p.header = map[string]string{"url": strings.Join(f[:n-4], " "), "ip": f[n-4], "date": f[n-3], "type": f[n-2]}
		if n >= 10 && strings.HasSuffix(f[n-2], ".arc") {
			// v2: URL IP date type result-code checksum location offset filename length
			p.header = map[string]string{"url": strings.Join(f[:n-9], " "), "ip": f[n-9], "date": f[n-8], "type": f[n-7]}
		}
		p.block = raw[nl+1 : nl+1+l]
		if trailer := raw[nl+1+l:]; len(bytes.Trim(trailer, "\n")) > 0 || len(trailer) > 3 {
			t.Fatalf("ARC record of %s is not followed by line feeds only (0 to 3) after its length", p.header["url"])
		}
	} else {
		end := bytes.Index(raw, []byte("\r\n\r\n"))
		p.header = parseWARCHeader(t, raw[:end+4])
		l, _ := strconv.Atoi(p.header["Content-Length"])
		p.block = raw[end+4 : end+4+l]
		if !bytes.Equal(raw[end+4+l:], []byte("\r\n\r\n")) {
			t.Fatalf("WARC record %s does not end with exactly CRLFCRLF after its block", p.header["WARC-Record-ID"])
		}
	}
	if bytes.HasPrefix(p.block, []byte("HTTP/1.1 ")) {
		p.status, _ = strconv.Atoi(string(p.block[9:12]))
		end := bytes.Index(p.block, []byte("\r\n\r\n"))
		p.payload = p.block[end+4:]
	}
	return p
}

func arcToWARCDate(d string) string {
	tm, err := time.Parse("20060102150405", d)
	if err != nil {
		return "bad date " + d
	}
	return tm.Format("2006-01-02T15:04:05Z")
}

// TestExpectedPointsAtRecords re-reads every listed record at its offset and
// length, and walks every file to check that exactly the candidates are listed
// and that every record is well formed.
func TestExpectedPointsAtRecords(t *testing.T) {
	base := Config{Files: 1, Records: 120, DupRate: 0.3, Seed: 11, NonCandidates: true, Chunked: 0.25, MeanPayload: 6 << 10}
	with := func(f func(*Config)) Config { c := base; f(&c); return c }
	tests := []struct {
		name string
		cfg  Config
	}{
		{"warc.gz", with(func(c *Config) { c.Formats = []Format{WARC10Gz} })},
		{"warc", with(func(c *Config) { c.Formats = []Format{WARC10} })},
		{"warc1.1.gz", with(func(c *Config) { c.Formats = []Format{WARC11Gz} })},
		{"warc1.1", with(func(c *Config) { c.Formats = []Format{WARC11} })},
		{"arc.gz", with(func(c *Config) { c.Formats = []Format{ARCGz} })},
		{"arc", with(func(c *Config) { c.Formats = []Format{ARC} })},
		{"arc2.gz", with(func(c *Config) { c.Formats = []Format{ARC2Gz} })},
		{"arc2", with(func(c *Config) { c.Formats = []Format{ARC2} })},
		{"ARC v1 and v2 with ARC quirks", with(func(c *Config) {
			c.Files, c.Records, c.Quirks, c.ARCQuirks, c.Formats = 4, 300, true, true, []Format{ARC, ARC2, ARCGz, ARC2Gz}
		})},
		{"mix with quirks, large payloads, sha256", with(func(c *Config) {
			c.Files, c.Records, c.Quirks, c.Algorithm, c.MeanPayload, c.Huge = 6, 400, true, digest.SHA256, 40<<10, 3<<20
		})},
		{"no non-candidates", with(func(c *Config) { c.Files, c.NonCandidates = 4, false })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, res := write(t, tt.cfg)
			algo := cmpOr(tt.cfg.Algorithm, digest.SHA1)
			files := map[string][]byte{}
			for i := range res.Expected {
				l := &res.Expected[i]
				data, ok := files[l.File]
				if !ok {
					var err error
					if data, err = os.ReadFile(filepath.Join(dir, l.File)); err != nil {
						t.Fatal(err)
					}
					files[l.File] = data
				}
				if l.Offset+l.Length > int64(len(data)) {
					t.Fatalf("%s: offset %d length %d past the end (%d)", l, l.Offset, l.Length, len(data))
				}
				raw := data[l.Offset : l.Offset+l.Length]
				if strings.HasSuffix(l.File, ".gz") {
					br := bytes.NewReader(raw)
					zr, err := gzip.NewReader(br)
					if err != nil {
						t.Fatalf("%s: %v", l, err)
					}
					zr.Multistream(false)
					if raw, err = io.ReadAll(zr); err != nil {
						t.Fatalf("%s: %v", l, err)
					}
					if br.Len() != 0 {
						t.Fatalf("%s: the gzip member ends %d bytes before the stated length", l, br.Len())
					}
				}
				arc := strings.Contains(l.File, ".arc")
				p := parse(t, raw, arc)
				if l.IsRevisit() {
					if p.header["WARC-Type"] != "revisit" || manifest.EscapeField(p.header["WARC-Refers-To-Target-URI"]) != l.RefURI ||
						p.header["WARC-Refers-To-Date"] != l.RefDate || p.header["WARC-Date"] != l.Date {
						t.Errorf("%s: the revisit line does not describe %v", l, p.header)
					}
					continue
				}
				var uri, date string
				if arc {
					uri, date = p.header["url"], arcToWARCDate(p.header["date"])
					if !bytes.HasPrefix(raw, []byte(uri+" ")) {
						t.Fatalf("%s: record does not start with its URL", l)
					}
				} else {
					if !bytes.HasPrefix(raw, []byte("WARC/")) {
						t.Fatalf("%s: record does not start with WARC/", l)
					}
					uri, date = p.header["WARC-Target-URI"], p.header["WARC-Date"]
					uri = strings.TrimSuffix(strings.TrimPrefix(uri, "<"), ">")
					if p.header["WARC-Type"] != "response" {
						t.Errorf("%s: listed record of type %s", l, p.header["WARC-Type"])
					}
				}
				if !bytes.Contains(raw, []byte(uri)) || manifest.EscapeField(uri) != l.URI || date != l.Date {
					t.Errorf("%s: record has URI %q, date %q", l, uri, date)
				}
				if p.status != 200 {
					t.Errorf("%s: status %d", l, p.status)
				}
				if got := independentDigest(algo, p.payload); got != l.Digest {
					t.Errorf("%s: payload as stored hashes to %s", l, got)
				}
				if want := res.Payloads[i]; int64(len(p.payload)) != want.StoredSize() ||
					(len(p.payload) < 1<<20 && !bytes.Equal(p.payload, want.Bytes())) {
					t.Errorf("%s: stored payload differs from the regenerated one", l)
				}
			}
			checkCandidates(t, dir, res, tt.cfg)
		})
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// checkCandidates walks every file, checks each record's framing and
// digests, and that the listed set is exactly the candidate responses.
func checkCandidates(t *testing.T, dir string, res *Result, cfg Config) {
	t.Helper()
	type key struct {
		file   string
		offset int64
	}
	listed := map[key]int64{}
	for _, l := range res.Expected {
		listed[key{l.File, l.Offset}] = l.Length
	}
	kinds := map[string]int{}
	responses := 0
	var total int64
	for _, name := range res.Names {
		arc := strings.Contains(name, ".arc")
		recs := walk(t, filepath.Join(dir, name))
		st, _ := os.Stat(filepath.Join(dir, name))
		total += st.Size()
		for i, r := range recs {
			p := parse(t, r.raw, arc)
			candidate := false
			kind := ""
			if arc {
				kind = "arc " + strings.SplitN(p.header["url"], ":", 2)[0]
				if i == 0 && !strings.HasPrefix(p.header["url"], "filedesc://") {
					t.Errorf("%s: first ARC record is %s", name, p.header["url"])
				}
				if p.status > 0 {
					responses++
					kind += " " + strconv.Itoa(p.status)
				}
				candidate = p.status >= 200 && p.status < 300 && p.status != 206
			} else {
				h := p.header
				kind = h["WARC-Type"]
				if i == 0 && cfg.NonCandidates && kind != "warcinfo" {
					t.Errorf("%s: first WARC record is %s", name, kind)
				}
				if bd := h["WARC-Block-Digest"]; bd != "" && bd != independentDigest(digest.SHA1, p.block) {
					t.Errorf("%s@%d: wrong WARC-Block-Digest", name, r.offset)
				}
				if kind == "response" || kind == "revisit" {
					kind += " " + strconv.Itoa(p.status)
				}
				switch h["WARC-Type"] {
				case "response":
					responses++
					if h["WARC-Payload-Digest"] != independentDigest(digest.SHA1, p.payload) {
						t.Errorf("%s@%d: wrong WARC-Payload-Digest", name, r.offset)
					}
					if h["Content-Type"] != "application/http; msgtype=response" {
						t.Errorf("%s@%d: Content-Type %q", name, r.offset, h["Content-Type"])
					}
					if _, ok := h["WARC-Truncated"]; ok {
						kind += " truncated"
					}
					candidate = p.status >= 200 && p.status < 300 && p.status != 206 && h["WARC-Truncated"] == ""
				case "request":
					if i+1 >= len(recs) || !bytes.Contains(recs[i+1].raw, []byte("WARC-Record-ID: "+h["WARC-Concurrent-To"]+"\r\n")) {
						t.Errorf("%s@%d: request is not followed by the response it is concurrent to", name, r.offset)
					}
				case "revisit":
					candidate = true // listed as a revisit line
					if h["WARC-Refers-To-Target-URI"] == "" || h["WARC-Refers-To-Date"] == "" ||
						h["WARC-Profile"] != "http://netpreserve.org/warc/"+h["version"][5:]+"/revisit/identical-payload-digest" {
						t.Errorf("%s@%d: bad revisit header %v", name, r.offset, h)
					}
				}
			}
			kinds[kind]++
			length, ok := listed[key{name, r.offset}]
			switch {
			case candidate && !ok:
				t.Errorf("%s@%d: candidate %s not listed", name, r.offset, kind)
			case !candidate && ok:
				t.Errorf("%s@%d: non-candidate %s listed", name, r.offset, kind)
			case ok && length != r.length:
				t.Errorf("%s@%d: listed with length %d, record is %d", name, r.offset, length, r.length)
			}
			delete(listed, key{name, r.offset})
		}
	}
	for k := range listed {
		t.Errorf("%s@%d listed but no record starts there", k.file, k.offset)
	}
	if responses != res.Responses || total != res.TotalBytes {
		t.Errorf("found %d responses, %d bytes; Result says %d, %d", responses, total, res.Responses, res.TotalBytes)
	}
	if cfg.NonCandidates {
		var want []string
		for _, f := range cfg.Formats {
			if f.IsARC() {
				want = append(want, "arc filedesc", "arc dns", "arc http 404", "arc http 301")
			} else {
				want = append(want, "warcinfo", "request", "metadata", "resource", "revisit 200",
					"response 404", "response 301", "response 206", "response 200 truncated")
			}
		}
		for _, k := range want {
			if kinds[strings.Replace(k, "arc http", "arc https", 1)]+kinds[k] == 0 {
				t.Errorf("no %q record written; found %v", k, kinds)
			}
		}
	}
}

// TestExpectedIsConsistent checks the resolution rules on the Expected lines
// against the regenerated payload bytes and the records' HTTP heads, read
// back from the files: within a digest, each class (ext) is one byte
// string and one policy key, numbered 0, 1, ... in order of its first
// capture; within a class the first capture is kept, as are the later ones
// a revisit line refers to or that have its URI and date, and every other
// one names it.
func TestExpectedIsConsistent(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"sha1 mix, replay policy", Config{Files: 5, Records: 600, DupRate: 0.35, Seed: 5, NonCandidates: true, Chunked: 0.1, MeanPayload: 4 << 10, ReplayVariants: 0.2}},
		{"sha1 mix, payload policy", Config{Files: 5, Records: 600, DupRate: 0.35, Seed: 5, NonCandidates: true, Chunked: 0.1, MeanPayload: 4 << 10, ReplayVariants: 0.2, Policy: policy.Payload}},
		{"sha1 mix, uri policy", Config{Files: 5, Records: 600, DupRate: 0.35, Seed: 5, NonCandidates: true, MeanPayload: 4 << 10, Policy: policy.URI}},
		{"md5 with collisions", Config{Files: 3, Records: 300, DupRate: 0.3, Seed: 6, Algorithm: digest.MD5, MeanPayload: 4 << 10,
			Collisions: true, CollisionDir: collisionDir}},
		{"sha512, one file, revisit lines without digest", Config{Files: 1, Records: 200, DupRate: 0.5, Seed: 8, Algorithm: digest.SHA512, MeanPayload: 4 << 10, NonCandidates: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.Collisions {
				skipWithoutCollisions(t)
			}
			dir, res := write(t, tt.cfg)
			exp := res.Expected
			if !slices.IsSortedFunc(exp, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) }) {
				t.Fatal("Expected is not sorted by class")
			}
			// Each record's bytes and replay identity, read independently.
			ids := make([][32]byte, len(exp))
			keys := make([]string, len(exp))
			var global []manifest.Line
			for i := range exp {
				l := &exp[i]
				if _, err := manifest.Parse(bytes.TrimSuffix(l.Append(nil), []byte("\n"))); err != nil || l.Fields != 10 {
					t.Fatalf("%s: not a valid 10-field line: %v", l, err)
				}
				if l.IsRevisit() {
					if l.Digest == manifest.NoDigest {
						global = append(global, *l)
					}
					continue
				}
				b := res.Payloads[i].Bytes()
				ids[i] = sha256.Sum256(b)
				if got := independentDigest(cmpOr(tt.cfg.Algorithm, digest.SHA1), b); got != l.Digest {
					t.Errorf("%s: regenerated payload hashes to %s", l, got)
				}
				keys[i] = replayIdentity(t, dir, l, tt.cfg.Policy)
			}
			pinnedBy := func(revisits []manifest.Line, l *manifest.Line) bool {
				for _, r := range revisits {
					if r.RefURI == l.URI && (r.RefDate == l.Date || r.RefDate == "*") {
						return true
					}
				}
				return false
			}
			dups, collisions, split := 0, 0, 0
			var dupBytes int64
			for i := 0; i < len(exp); {
				j := i + 1
				for j < len(exp) && exp[j].Digest == exp[i].Digest {
					j++
				}
				type class struct {
					id    [32]byte
					key   string
					first manifest.Line
					last  int // copy number of its last duplicate
				}
				var classes []class
				var revisits []manifest.Line
				for k := i; k < j; k++ {
					l := exp[k]
					if l.IsRevisit() {
						revisits = append(revisits, l)
						continue
					}
					if l.Class < len(classes) {
						c := &classes[l.Class]
						if c.id != ids[k] || c.key != keys[k] {
							t.Errorf("%s: bytes or replay identity differ within a class", &l)
						}
						kept := pinnedBy(revisits, &l) || pinnedBy(global, &l) || (l.URI == c.first.URI && l.Date == c.first.Date)
						switch {
						case kept && (l.Copy != 1 || l.RefURI != "-"):
							t.Errorf("%s: a capture that must stay a response is numbered as a duplicate of %s", &l, &c.first)
						case !kept && (l.Copy != c.last+1 || l.RefURI != c.first.URI || l.RefDate != c.first.Date):
							t.Errorf("%s: after copy %d in a class whose first is %s", &l, c.last, &c.first)
						case !kept:
							c.last = l.Copy
							dups++
							dupBytes += res.Payloads[k].StoredSize()
						}
						continue
					}
					if l.Class != len(classes) {
						t.Fatalf("%s: ext out of sequence", &l)
					}
					newBytes := true
					for _, c := range classes {
						if c.id == ids[k] && c.key == keys[k] {
							t.Errorf("%s: same bytes and replay identity as ext %d", &l, c.first.Class)
						}
						if c.id == ids[k] {
							newBytes = false
						}
					}
					if len(classes) > 0 {
						if newBytes {
							collisions++
						} else {
							split++
						}
					}
					if l.Copy != 1 || l.RefURI != "-" || l.RefDate != "-" {
						t.Errorf("%s: first of its class is not copy 1", &l)
					}
					classes = append(classes, class{id: ids[k], key: keys[k], first: l, last: 1})
				}
				i = j
			}
			if dups != res.Duplicates || dupBytes != res.DuplicateBytes || collisions != res.Collisions || split != res.Split || len(exp) != res.Listed {
				t.Errorf("counted %d duplicates, %d bytes, %d collisions, %d split, %d lines; Result: %s", dups, dupBytes, collisions, split, len(exp), res.Summary())
			}
			if tt.cfg.ReplayVariants > 0 && tt.cfg.Policy == policy.Replay && split == 0 {
				t.Error("no class was split by the replay policy: the test proves nothing")
			}
		})
	}
}

// replayIdentity reads the record l lists and spells what the policy
// compares, independently of package policy: format, status and the
// headers that change how a browser takes the body; the URI for the uri
// policy; nothing for the payload policy.
func replayIdentity(t *testing.T, dir string, l *manifest.Line, pol policy.Policy) string {
	t.Helper()
	switch pol {
	case policy.Payload:
		return ""
	case policy.URI:
		return l.URI
	}
	f, err := os.Open(filepath.Join(dir, l.File))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw := make([]byte, l.Length)
	if _, err := f.ReadAt(raw, l.Offset); err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(l.File, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	arc := strings.Contains(l.File, ".arc")
	p := parse(t, raw, arc)
	head := string(p.block[:len(p.block)-len(p.payload)])
	id := fmt.Sprintf("arc=%v status=%d", arc, p.status)
	for _, line := range strings.Split(head, "\r\n")[1:] {
		name, value, _ := strings.Cut(line, ":")
		switch strings.ToLower(name) {
		case "content-type", "content-encoding", "transfer-encoding", "content-disposition", "location":
			id += " " + strings.ToLower(name) + "=" + strings.ToLower(strings.TrimSpace(value))
		}
	}
	return id
}

func skipWithoutCollisions(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(collisionDir); err != nil {
		corpustest.Missing(t, "no collision pairs: %v", err)
	}
}

func TestCollisions(t *testing.T) {
	skipWithoutCollisions(t)
	tests := []struct {
		name string
		algo digest.Algorithm
	}{
		{"md5 manifest", digest.MD5},
		{"sha1 manifest", digest.SHA1},
		{"sha256 manifest", digest.SHA256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Files: 4, Records: 200, DupRate: 0.3, Seed: 3, Algorithm: tt.algo, MeanPayload: 8 << 10,
				Collisions: true, CollisionDir: collisionDir, NonCandidates: true, Formats: AllFormats[:4]}
			_, res := write(t, cfg)
			if len(res.Pairs) != len(knownPairs) {
				t.Fatalf("%d pairs included, want %d", len(res.Pairs), len(knownPairs))
			}
			wantCollisions := 0
			for _, pair := range res.Pairs {
				a, b := pair.Payloads[0].Bytes(), pair.Payloads[1].Bytes()
				if bytes.Equal(a, b) {
					t.Fatalf("%s: the two payloads are equal", pair.Name)
				}
				if independentDigest(pair.Algorithm, a) != independentDigest(pair.Algorithm, b) {
					t.Fatalf("%s: the payloads do not collide in %s", pair.Name, pair.Algorithm)
				}
				var lines [2][]manifest.Line
				for i, p := range res.Payloads {
					for m := range 2 {
						if p == pair.Payloads[m] {
							lines[m] = append(lines[m], res.Expected[i])
						}
					}
				}
				if len(lines[0]) == 0 || len(lines[1]) == 0 {
					t.Fatalf("%s: a member is not listed (%d, %d lines)", pair.Name, len(lines[0]), len(lines[1]))
				}
				if len(lines[0])+len(lines[1]) < 3 {
					t.Errorf("%s: no member is repeated", pair.Name)
				}
				for m := range 2 {
					for _, l := range lines[m] {
						if l.Digest != lines[m][0].Digest || l.Class != lines[m][0].Class {
							t.Errorf("%s: copies of one member in different classes: %s, %s", pair.Name, &l, &lines[m][0])
						}
					}
				}
				l0, l1 := lines[0][0], lines[1][0]
				if pair.Algorithm == tt.algo {
					wantCollisions++
					if l0.Digest != l1.Digest || l0.Class == l1.Class {
						t.Errorf("%s: want the same digest and different ext: %s, %s", pair.Name, &l0, &l1)
					}
				} else if l0.Digest == l1.Digest {
					t.Errorf("%s: same %s digest for payloads that only collide in %s", pair.Name, tt.algo, pair.Algorithm)
				}
			}
			if res.Collisions != wantCollisions {
				t.Errorf("Result.Collisions %d, want %d", res.Collisions, wantCollisions)
			}
		})
	}
}

func TestDupRate(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		files int
	}{
		{"10% over 8 files", 0.1, 8},
		{"30% over 8 files", 0.3, 8},
		{"50% over 3 files", 0.5, 3},
		{"none", 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The payload policy: the rate is planned over payload bytes;
			// the replay policy keeps ARC and WARC captures apart.
			cfg := Config{Files: tt.files, Records: 2000, DupRate: tt.rate, Seed: 99, MeanPayload: 2 << 10, Chunked: 0.1,
				Formats: []Format{WARC10Gz, ARC}, Policy: policy.Payload}
			_, res := write(t, cfg)
			got := float64(res.Duplicates) / float64(res.Listed)
			if diff := got - tt.rate; diff > 0.1*tt.rate || -diff > 0.1*tt.rate {
				t.Fatalf("duplicate rate %.4f, want %.2f ± 10%%", got, tt.rate)
			}
			if tt.rate == 0 {
				return
			}
			// Every kind of duplicate the dedup chain must handle is present.
			var sameURL, otherURL, crossFile, sameFile, laterFileFirst int
			firsts := map[string]manifest.Line{}
			for _, l := range res.Expected {
				k := l.Digest + " " + strconv.Itoa(l.Class)
				if l.Copy == 1 {
					firsts[k] = l
					continue
				}
				f := firsts[k]
				if l.URI == f.URI {
					sameURL++
					if l.Date == f.Date {
						t.Errorf("%s: same URL and date as its original", &l)
					}
				} else {
					otherURL++
				}
				if l.File == f.File {
					sameFile++
				} else {
					crossFile++
				}
				if l.File < f.File {
					laterFileFirst++ // the original is in a later file than this copy
				}
			}
			for name, n := range map[string]int{"same URL": sameURL, "other URL": otherURL, "cross-file": crossFile,
				"same-file": sameFile, "original in a later file": laterFileFirst} {
				if n == 0 {
					t.Errorf("no %s duplicates", name)
				}
			}
			t.Logf("%s; same URL %d, other URL %d, cross-file %d, same file %d, original later in file order %d",
				res.Summary(), sameURL, otherURL, crossFile, sameFile, laterFileFirst)
		})
	}
}

func TestPayloadStreams(t *testing.T) {
	tests := []struct {
		name string
		p    Payload
	}{
		{"empty", Payload{Kind: KindEmpty}},
		{"html", Payload{Kind: KindHTML, Seed: 1, Size: 20000}},
		{"tiny html", Payload{Kind: KindHTML, Seed: 1, Size: 10}},
		{"text chunked", Payload{Kind: KindText, Seed: 2, Size: 100000, Chunked: true}},
		{"binary", Payload{Kind: KindBinary, Seed: 3, Size: 70001}},
		{"empty chunked", Payload{Kind: KindText, Seed: 4, Chunked: true}},
		{"collision", Payload{Kind: KindCollision, Seed: 5, Size: 1000, Prefix: strings.Repeat("x", 64)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.p.Bytes()
			if int64(len(b)) != tt.p.StoredSize() {
				t.Fatalf("%d bytes, StoredSize %d", len(b), tt.p.StoredSize())
			}
			// Odd buffer sizes must give the same stream.
			var sw sliceWriter
			if _, err := tt.p.write(&sw, make([]byte, 7)); err != nil || !bytes.Equal(sw.b, b) {
				t.Fatalf("stream differs with a 7-byte buffer")
			}
			if tt.p.Chunked {
				if !bytes.HasSuffix(b, []byte("0\r\n\r\n")) {
					t.Errorf("chunked payload does not end with the last chunk")
				}
				var content []byte
				for rest := b; ; {
					line, after, _ := bytes.Cut(rest, []byte("\r\n"))
					n, err := strconv.ParseInt(string(line), 16, 64)
					if err != nil {
						t.Fatalf("bad chunk size %q", line)
					}
					if n == 0 {
						break
					}
					content = append(content, after[:n]...)
					rest = after[n+2:]
				}
				if int64(len(content)) != tt.p.Size {
					t.Errorf("chunks hold %d bytes, want %d", len(content), tt.p.Size)
				}
			} else if int64(len(b)) != tt.p.Size {
				t.Errorf("%d bytes, want %d", len(b), tt.p.Size)
			}
		})
	}
}

func TestParseFormats(t *testing.T) {
	tests := []struct {
		in      string
		want    []Format
		wantErr bool
	}{
		{"warc.gz,warc,arc,arc.gz,warc1.1", []Format{WARC10Gz, WARC10, ARC, ARCGz, WARC11}, false},
		{" warc1.1.gz , WARC1.0.gz", []Format{WARC11Gz, WARC10Gz}, false},
		{"all", AllFormats, false},
		{"zip", nil, true},
		{"", nil, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			got, err := ParseFormats(tt.in)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("ParseFormats(%q) = %v, %v", tt.in, got, err)
			}
		})
	}
}
