package wacz

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// CollectionEntry is a WACZ file of a multi-WACZ collection, as the
// Browsertrix crawler's indexer reads one ({"resources": [...]}) and the
// Browsertrix backend exports one (replay.json): name, path (a file path
// or URL), and optionally its SHA-256 (hex), size and crawl.
type CollectionEntry struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Hash    string `json:"hash,omitempty"`
	Size    int64  `json:"size,omitempty"`
	CrawlID string `json:"crawlId,omitempty"`
}

// ReadCollection reads a multi-WACZ JSON file: an object whose
// "resources" list the packages (other keys, and other fields of an
// entry, are ignored, as Browsertrix's indexer ignores them). A
// resource without a path, or two of the same path, is an error naming
// it.
func ReadCollection(r io.Reader, name string) ([]CollectionEntry, error) {
	b, err := io.ReadAll(io.LimitReader(r, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var doc struct {
		Resources *[]json.RawMessage `json:"resources"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: not a multi-WACZ JSON file: %v", name, err)
	}
	if doc.Resources == nil {
		return nil, fmt.Errorf("%s: not a multi-WACZ JSON file: no \"resources\" list", name)
	}
	var out []CollectionEntry
	seen := map[string]bool{}
	for i, raw := range *doc.Resources {
		var e CollectionEntry
		var size json.Number
		var fields struct {
			Name    string      `json:"name"`
			Path    string      `json:"path"`
			Hash    string      `json:"hash"`
			Size    json.Number `json:"size"`
			Bytes   json.Number `json:"bytes"`
			CrawlID string      `json:"crawlId"`
		}
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("%s: resource %d: %v", name, i+1, err)
		}
		e.Name, e.Path, e.Hash, e.CrawlID, size = fields.Name, fields.Path, fields.Hash, fields.CrawlID, fields.Size
		if size == "" {
			size = fields.Bytes // as datapackage.json spells it
		}
		if e.Path == "" {
			return nil, fmt.Errorf("%s: resource %d has no path", name, i+1)
		}
		if seen[e.Path] {
			return nil, fmt.Errorf("%s: resource %d: path %q listed twice", name, i+1, e.Path)
		}
		seen[e.Path] = true
		if size != "" {
			n, err := size.Int64()
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s: resource %d: size %q is not a count of bytes", name, i+1, size)
			}
			e.Size = n
		}
		if e.Name == "" {
			e.Name = pathBase(e.Path)
		}
		out = append(out, e)
	}
	return out, nil
}

// WriteCollection writes a multi-WACZ JSON file of the entries.
func WriteCollection(w io.Writer, entries []CollectionEntry) error {
	doc := struct {
		Resources []CollectionEntry `json:"resources"`
	}{entries}
	if doc.Resources == nil {
		doc.Resources = []CollectionEntry{}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// LocalPath is where an entry's package is on disk: its path, relative
// to the directory of the JSON file at jsonPath when not absolute. A URL
// (http:, https:, s3:, ...) is no local path: ok is false.
func (e CollectionEntry) LocalPath(jsonPath string) (string, bool) {
	p := e.Path
	if i := strings.Index(p, "://"); i > 0 && !strings.ContainsAny(p[:i], "/\\") {
		if !strings.HasPrefix(p, "file://") {
			return "", false
		}
		p = strings.TrimPrefix(p, "file://")
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), true
	}
	return filepath.Join(filepath.Dir(jsonPath), filepath.FromSlash(p)), true
}

func pathBase(p string) string {
	if i := strings.LastIndexAny(p, "/\\"); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	return p
}

// SHA256 is the entry's hash as lower-case hex ("" for none): Browsertrix
// writes it bare, datapackage.json's form "sha256:..." is taken too; any
// other algorithm is an error.
func (e CollectionEntry) SHA256() (string, error) {
	h := strings.TrimSpace(e.Hash)
	if h == "" {
		return "", nil
	}
	sum := parseSHA256(h, "")
	if sum == nil {
		return "", fmt.Errorf("hash %q: not a SHA-256", e.Hash)
	}
	return hex.EncodeToString(sum), nil
}

// CollectionUpdate is a package's hash and size as they now are.
type CollectionUpdate struct {
	SHA256 []byte
	Size   int64
}

// UpdateCollection rewrites the multi-WACZ JSON b with the hash and size
// of each resource whose path (as written) updates names: the fields it
// has ("hash" in the form it had, "size" and "bytes") take the new
// values; everything else, the layout included, is kept as it was. A
// path of updates that no resource has is an error.
func UpdateCollection(b []byte, updates map[string]CollectionUpdate) ([]byte, error) {
	root, st, err := parseJSON(b)
	if err != nil {
		return nil, err
	}
	res := root.get("resources")
	if res == nil || res.kind != '[' {
		return nil, errors.New("not a multi-WACZ JSON file: no \"resources\" list")
	}
	done := map[string]bool{}
	for _, r := range res.vals {
		p, _ := r.get("path").str()
		u, ok := updates[p]
		if !ok || done[p] {
			continue
		}
		done[p] = true
		if h, ok := r.get("hash").str(); ok {
			v := hex.EncodeToString(u.SHA256)
			if algo, _, ok := strings.Cut(h, ":"); ok {
				v = algo + ":" + v
			}
			r.set("hash", strNode(v), "")
		}
		for _, k := range []string{"size", "bytes"} {
			if n := r.get(k); n != nil {
				if _, quoted := n.str(); quoted {
					r.set(k, strNode(strconv.FormatInt(u.Size, 10)), "")
				} else {
					r.set(k, intNode(u.Size), "")
				}
			}
		}
	}
	for p := range updates {
		if !done[p] {
			return nil, fmt.Errorf("no resource has the path %q", p)
		}
	}
	return root.encode(st), nil
}
