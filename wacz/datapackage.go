package wacz

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// The package's metadata files.
const (
	DatapackageName = "datapackage.json"
	DigestName      = "datapackage-digest.json"
)

// Datapackage is a package's datapackage.json, read so that writing it
// back keeps everything it holds: keys in their order, values it does
// not know, its layout (indent, separators).
type Datapackage struct {
	root  *node
	style style
}

// Resource is an entry of datapackage.json's "resources": a member with
// its SHA-256 and size. WACZ 1.1.1 spells them "hash": "sha256:HEX" and
// "bytes": N; WACZ 1.0.0 (py-wacz before 0.3) "stats": {"hash": "HEX",
// "bytes": N} with "hashing": "sha256".
type Resource struct {
	Name, Path string
	// SHA256 is the hash it gives, nil when it gives none in SHA-256
	// (Hash is then what it gives, if anything).
	SHA256 []byte
	Hash   string
	// Bytes is the size it gives, -1 when none.
	Bytes int64
	node  *node
}

// ParseDatapackage reads datapackage.json.
func ParseDatapackage(b []byte) (*Datapackage, error) {
	root, st, err := parseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDatapackage, err)
	}
	if root.kind != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrDatapackage)
	}
	d := &Datapackage{root: root, style: st}
	if _, err := d.Resources(); err != nil {
		return nil, err
	}
	if v := root.get("wacz_version"); v != nil {
		if _, ok := v.str(); !ok {
			return nil, fmt.Errorf("%w: wacz_version is not a string", ErrDatapackage)
		}
	}
	for _, k := range []string{"created", "modified", "software"} {
		if v := root.get(k); v != nil {
			if _, ok := v.str(); !ok {
				return nil, fmt.Errorf("%w: %q is not a string", ErrDatapackage, k)
			}
		}
	}
	if _, err := d.Requires(); err != nil {
		return nil, err
	}
	return d, nil
}

// Bytes is the file as it would be written now.
func (d *Datapackage) Bytes() []byte { return d.root.encode(d.style) }

// Clone copies d, so that edits leave d as it is.
func (d *Datapackage) Clone() *Datapackage { return &Datapackage{root: d.root.clone(), style: d.style} }

// String returns a top-level string value ("wacz_version", "created",
// "modified", "software", "title", ...), "" if absent.
func (d *Datapackage) String(key string) string {
	s, _ := d.root.get(key).str()
	return s
}

// Version is wacz_version.
func (d *Datapackage) Version() string { return d.String("wacz_version") }

// Resources lists the resources in order.
func (d *Datapackage) Resources() ([]Resource, error) {
	rs := d.root.get("resources")
	if rs == nil {
		return nil, fmt.Errorf("%w: no \"resources\"", ErrDatapackage)
	}
	if rs.kind != '[' {
		return nil, fmt.Errorf("%w: \"resources\" is not a list", ErrDatapackage)
	}
	out := make([]Resource, 0, len(rs.vals))
	seen := map[string]bool{}
	for i, n := range rs.vals {
		if n.kind != '{' {
			return nil, fmt.Errorf("%w: resource %d is not an object", ErrDatapackage, i+1)
		}
		r := Resource{Bytes: -1, node: n}
		var ok bool
		if r.Path, ok = n.get("path").str(); !ok || r.Path == "" {
			return nil, fmt.Errorf("%w: resource %d has no \"path\"", ErrDatapackage, i+1)
		}
		if seen[r.Path] {
			return nil, fmt.Errorf("%w: resource %q listed twice", ErrDatapackage, r.Path)
		}
		seen[r.Path] = true
		r.Name, _ = n.get("name").str()
		hashNode, bytesNode, algo := n.get("hash"), n.get("bytes"), ""
		if st := n.get("stats"); st != nil && hashNode == nil {
			hashNode, bytesNode = st.get("hash"), st.get("bytes")
			algo, _ = n.get("hashing").str()
		}
		if hashNode != nil {
			if r.Hash, ok = hashNode.str(); !ok {
				return nil, fmt.Errorf("%w: resource %q: its hash is not a string", ErrDatapackage, r.Path)
			}
			r.SHA256 = parseSHA256(r.Hash, algo)
		}
		if bytesNode != nil {
			if r.Bytes, ok = bytesNode.int(); !ok {
				return nil, fmt.Errorf("%w: resource %q: its size is not a count of bytes", ErrDatapackage, r.Path)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// parseSHA256 reads "sha256:HEX" (or a bare HEX where hashing says
// sha256, or says nothing).
func parseSHA256(h, algo string) []byte {
	v := h
	if a, rest, ok := strings.Cut(h, ":"); ok {
		if !strings.EqualFold(a, "sha256") && !strings.EqualFold(a, "sha-256") {
			return nil
		}
		v = rest
	} else if algo != "" && !strings.EqualFold(algo, "sha256") && !strings.EqualFold(algo, "sha-256") {
		return nil
	}
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != 32 {
		return nil
	}
	return b
}

// setResource sets the SHA-256 and size of the resource of that path, in
// the form it has.
func (d *Datapackage) setResource(path string, sum []byte, size int64) error {
	rs, err := d.Resources()
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Path != path {
			continue
		}
		n := r.node
		if st := n.get("stats"); st != nil && n.get("hash") == nil {
			st.set("hash", strNode(hex.EncodeToString(sum)), "")
			st.set("bytes", intNode(size), "hash")
			return nil
		}
		n.set("hash", strNode("sha256:"+hex.EncodeToString(sum)), "path")
		n.set("bytes", intNode(size), "hash")
		return nil
	}
	return fmt.Errorf("%w: no resource %q", ErrNotListed, path)
}

// SetModified sets "modified" to t, with milliseconds when "created" or
// the old "modified" has a fraction of a second (ArchiveWeb.page), and
// adds it after "created" when there was none.
func (d *Datapackage) SetModified(t time.Time) {
	layout := "2006-01-02T15:04:05Z"
	for _, k := range []string{"modified", "created"} {
		if s := d.String(k); s != "" {
			if strings.Contains(s, ".") {
				layout = "2006-01-02T15:04:05.000Z"
			}
			break
		}
	}
	d.root.set("modified", strNode(t.UTC().Format(layout)), "created")
}

// Requirement is an entry of "relation": {"requires": [...]}, as the
// Browsertrix crawler writes it: a WACZ file whose records this
// package's revisits refer to, by file name (wabac.js loads it from the
// same multi-WACZ collection), with its SHA-256 (hex, no label) and size
// when known, and its crawl.
type Requirement struct {
	Filename string
	Hash     string // hex SHA-256 of the whole WACZ file, "" if unknown
	Size     int64  // -1 if unknown
	CrawlID  string // "" if none
}

// RequiredByHash are the file names that relation.requires names by
// SHA-256 or size: the entries that go stale when the package named is
// written anew (one naming a file alone never does).
func (d *Datapackage) RequiredByHash() ([]string, error) {
	reqs, err := d.Requires()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range reqs {
		if r.Hash != "" || r.Size >= 0 {
			out = append(out, r.Filename)
		}
	}
	return out, nil
}

// Requires lists relation.requires.
func (d *Datapackage) Requires() ([]Requirement, error) {
	rel := d.root.get("relation")
	if rel == nil {
		return nil, nil
	}
	if rel.kind != '{' {
		return nil, fmt.Errorf("%w: \"relation\" is not an object", ErrDatapackage)
	}
	req := rel.get("requires")
	if req == nil {
		return nil, nil
	}
	if req.kind != '[' {
		return nil, fmt.Errorf("%w: relation.requires is not a list", ErrDatapackage)
	}
	var out []Requirement
	for i, n := range req.vals {
		if n.kind != '{' {
			return nil, fmt.Errorf("%w: relation.requires entry %d is not an object", ErrDatapackage, i+1)
		}
		r := Requirement{Size: -1}
		var ok bool
		if r.Filename, ok = n.get("filename").str(); !ok || r.Filename == "" {
			return nil, fmt.Errorf("%w: relation.requires entry %d has no filename", ErrDatapackage, i+1)
		}
		r.Hash, _ = n.get("hash").str()
		if s := n.get("size"); s != nil {
			if r.Size, ok = s.int(); !ok {
				return nil, fmt.Errorf("%w: relation.requires entry %d: size is not a count of bytes", ErrDatapackage, i+1)
			}
		}
		r.CrawlID, _ = n.get("crawlId").str()
		out = append(out, r)
	}
	return out, nil
}

// Require adds the requirement, or updates the entry of the same file
// name in place (its hash, size and crawl id; values it has and r lacks
// are kept).
func (d *Datapackage) Require(r Requirement) error {
	if _, err := d.Requires(); err != nil {
		return err
	}
	rel := d.root.get("relation")
	if rel == nil {
		rel = &node{kind: '{'}
		d.root.set("relation", rel, "")
	}
	req := rel.get("requires")
	if req == nil {
		req = &node{kind: '['}
		rel.set("requires", req, "")
	}
	var entry *node
	for _, n := range req.vals {
		if f, _ := n.get("filename").str(); f == r.Filename {
			entry = n
		}
	}
	if entry == nil {
		entry = objNode("filename", strNode(r.Filename))
		req.vals = append(req.vals, entry)
	}
	// Browsertrix's order: filename, hash, size, crawlId.
	if r.Hash != "" {
		entry.set("hash", strNode(r.Hash), "filename")
	}
	if r.Size >= 0 {
		entry.set("size", intNode(r.Size), "hash")
	}
	if r.CrawlID != "" {
		entry.set("crawlId", strNode(r.CrawlID), "size")
	}
	return nil
}

// Unrequire removes the entry of that file name and reports whether there
// was one; a "requires" (and a "relation") left empty goes too.
func (d *Datapackage) Unrequire(filename string) bool {
	rel := d.root.get("relation")
	req := rel.get("requires")
	if req == nil || req.kind != '[' {
		return false
	}
	for i, n := range req.vals {
		if f, _ := n.get("filename").str(); f == filename {
			req.vals = append(req.vals[:i], req.vals[i+1:]...)
			if len(req.vals) == 0 {
				rel.remove("requires")
				if len(rel.keys) == 0 {
					d.root.remove("relation")
				}
			}
			return true
		}
	}
	return false
}

// RemovedSignaturesKey is the key of datapackage.json under which a
// removed signature is recorded: a list of objects, one per removal,
// with the signedData removed, the hash of the datapackage.json it
// signed, when, why and by what.
const RemovedSignaturesKey = "removedSignatures"

// SignatureRemoval says why a signature is removed.
type SignatureRemoval struct {
	Reason   string    // why, in words
	Software string    // what removed it ("warcdedup 1.2")
	When     time.Time // when
}

// recordRemoval appends the removed signature to RemovedSignaturesKey.
func (d *Datapackage) recordRemoval(signedData *node, signedHash string, r SignatureRemoval) {
	list := d.root.get(RemovedSignaturesKey)
	if list == nil || list.kind != '[' {
		list = &node{kind: '['}
		d.root.set(RemovedSignaturesKey, list, "")
	}
	list.vals = append(list.vals, objNode(
		"removed", strNode(r.When.UTC().Format(time.RFC3339)),
		"reason", strNode(r.Reason),
		"software", strNode(r.Software),
		"datapackageHash", strNode(signedHash),
		"signedData", signedData,
	))
}

// DigestFile is datapackage-digest.json: the path and SHA-256 of
// datapackage.json, and its signature when the package is signed.
type DigestFile struct {
	Path string
	// SHA256 is the hash it gives, nil if it gives none in SHA-256.
	SHA256 []byte
	Hash   string
	root   *node
	style  style
}

// ParseDigestFile reads datapackage-digest.json.
func ParseDigestFile(b []byte) (*DigestFile, error) {
	root, st, err := parseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDigestFile, err)
	}
	if root.kind != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrDigestFile)
	}
	f := &DigestFile{root: root, style: st}
	var ok bool
	if f.Path, ok = root.get("path").str(); !ok {
		return nil, fmt.Errorf("%w: no \"path\"", ErrDigestFile)
	}
	if f.Hash, ok = root.get("hash").str(); !ok {
		return nil, fmt.Errorf("%w: no \"hash\"", ErrDigestFile)
	}
	f.SHA256 = parseSHA256(f.Hash, "")
	if sd := root.get("signedData"); sd != nil && sd.kind != '{' && string(sd.raw) != "null" {
		return nil, fmt.Errorf("%w: signedData is not an object", ErrDigestFile)
	}
	return f, nil
}

// Signed reports whether the file holds a signature.
func (f *DigestFile) Signed() bool {
	sd := f.root.get("signedData")
	return sd != nil && sd.kind == '{'
}

// signedData is the signature object, nil when unsigned.
func (f *DigestFile) signedData() *node {
	if !f.Signed() {
		return nil
	}
	return f.root.get("signedData")
}

// withHash returns the file's bytes with hash set to sum (and the
// signature left out when drop).
func (f *DigestFile) withHash(sum []byte, drop bool) []byte {
	root := f.root.clone()
	root.set("hash", strNode("sha256:"+hex.EncodeToString(sum)), "path")
	if drop {
		root.remove("signedData")
	}
	return root.encode(f.style)
}

// newDigestFile is the digest file Browsertrix writes, for sum.
func newDigestFile(sum []byte) []byte {
	root := objNode("path", strNode(DatapackageName), "hash", strNode("sha256:"+hex.EncodeToString(sum)))
	return root.encode(defaultStyle)
}
