package wacz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
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
			CrawlID string      `json:"crawlId"`
		}
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("%s: resource %d: %v", name, i+1, err)
		}
		e.Name, e.Path, e.Hash, e.CrawlID, size = fields.Name, fields.Path, fields.Hash, fields.CrawlID, fields.Size
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
