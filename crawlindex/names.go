package crawlindex

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// File names and locations are bytes, and a JSON string can hold only
// UTF-8: encoding/json writes U+FFFD for each other byte, after which the
// file is not found under the name recorded. A value that is UTF-8 is
// written as the JSON string it always was (indexes written before read
// the same); any other as an object holding its bytes in base64,
// {"base64": "..."}, which an older warcdedup refuses to read rather than
// taking another name.
//
// The registry and the crawls' lists of files are written and read
// through the types below, each the index's type with those fields as
// such values, decoded in one pass: JSON methods on the index's own types
// would have every list of millions of files scanned once more per level.

type textBytes struct {
	Base64 []byte `json:"base64"`
}

// jsonText is a string as the index's JSON holds it.
func jsonText(s string) any {
	if utf8.ValidString(s) {
		return s
	}
	return textBytes{[]byte(s)}
}

// textOf reads what jsonText wrote, as encoding/json decodes it into an
// interface (nil: the field was not there).
func textOf(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case map[string]any:
		if b, ok := v["base64"].(string); ok && len(v) == 1 {
			data, err := base64.StdEncoding.DecodeString(b)
			return string(data), err
		}
	}
	return "", fmt.Errorf("a name is %v: neither a string nor {\"base64\": ...}", v)
}

// fileJSON is a FileInfo in the index's JSON.
type fileJSON struct {
	Name   any    `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	Stamp  string `json:"stamp,omitempty"`
	// Requires is FileInfo.Requires when known (an empty list for none),
	// absent when not.
	Requires *[]string `json:"requires,omitempty"`
}

func filesJSON(files []FileInfo) []fileJSON {
	if files == nil {
		return nil
	}
	out := make([]fileJSON, len(files))
	for i, f := range files {
		out[i] = fileJSON{Name: jsonText(f.Name), Size: f.Size, SHA256: f.SHA256, Stamp: f.Stamp}
		if f.RequiresKnown {
			reqs := f.RequiredNames()
			if reqs == nil {
				reqs = []string{}
			}
			out[i].Requires = &reqs
		}
	}
	return out
}

func filesOf(files []fileJSON) ([]FileInfo, error) {
	if files == nil {
		return nil, nil
	}
	out := make([]FileInfo, len(files))
	for i, f := range files {
		name, err := textOf(f.Name)
		if err != nil {
			return nil, err
		}
		out[i] = FileInfo{Name: name, Size: f.Size, SHA256: f.SHA256, Stamp: f.Stamp}
		if f.Requires != nil {
			out[i].Requires, out[i].RequiresKnown = RequiresOf(*f.Requires)
		}
	}
	return out, nil
}

// crawlFilesJSON is CrawlFiles as crawls/NAME.json holds it.
type crawlFilesJSON struct {
	Crawl string     `json:"crawl"`
	Files []fileJSON `json:"files"`
}

func marshalCrawlFiles(c *CrawlFiles) ([]byte, error) {
	return json.MarshalIndent(&crawlFilesJSON{c.Crawl, filesJSON(c.Files)}, "", " ")
}

func unmarshalCrawlFiles(data []byte) (*CrawlFiles, error) {
	var v crawlFilesJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	files, err := filesOf(v.Files)
	if err != nil {
		return nil, err
	}
	return &CrawlFiles{Crawl: v.Crawl, Files: files}, nil
}

type (
	needFields     Need
	crawlFields    Crawl
	registryFields Registry
)

// needJSON is a Need in the index's JSON.
type needJSON struct {
	needFields
	Files []fileJSON `json:"files"`
}

// crawlJSON is a Crawl in the index's JSON.
type crawlJSON struct {
	crawlFields
	Location any        `json:"location"`
	Log      any        `json:"log,omitempty"`
	Requires []needJSON `json:"requires,omitempty"`
}

// registryJSON is a Registry in the index's JSON.
type registryJSON struct {
	registryFields
	Crawls  []*crawlJSON `json:"crawls"`
	Removed []*crawlJSON `json:"removed,omitempty"`
}

func needJSONOf(n *Need) needJSON { return needJSON{needFields(*n), filesJSON(n.Files)} }

func crawlJSONOf(c *Crawl) *crawlJSON {
	if c == nil {
		return nil
	}
	v := &crawlJSON{crawlFields: crawlFields(*c), Location: jsonText(c.Location)}
	if c.Log != "" {
		v.Log = jsonText(c.Log)
	}
	for i := range c.Requires {
		v.Requires = append(v.Requires, needJSONOf(&c.Requires[i]))
	}
	return v
}

func (v *needJSON) need() (Need, error) {
	n := Need(v.needFields)
	var err error
	n.Files, err = filesOf(v.Files)
	return n, err
}

func (v *crawlJSON) crawl() (*Crawl, error) {
	if v == nil {
		return nil, nil // Registry.check names it
	}
	c := Crawl(v.crawlFields)
	var err error
	if c.Location, err = textOf(v.Location); err != nil {
		return nil, err
	}
	if c.Log, err = textOf(v.Log); err != nil {
		return nil, err
	}
	c.Requires = nil
	for i := range v.Requires {
		n, err := v.Requires[i].need()
		if err != nil {
			return nil, err
		}
		c.Requires = append(c.Requires, n)
	}
	return &c, nil
}

func marshalRegistry(r *Registry) ([]byte, error) {
	v := registryJSON{registryFields: registryFields(*r)}
	for _, c := range r.Crawls {
		v.Crawls = append(v.Crawls, crawlJSONOf(c))
	}
	for _, c := range r.Removed {
		v.Removed = append(v.Removed, crawlJSONOf(c))
	}
	return json.MarshalIndent(&v, "", "  ")
}

func unmarshalRegistry(data []byte, r *Registry) error {
	var v registryJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*r = Registry(v.registryFields)
	r.Crawls, r.Removed = nil, nil
	for _, list := range []struct {
		from []*crawlJSON
		to   *[]*Crawl
	}{{v.Crawls, &r.Crawls}, {v.Removed, &r.Removed}} {
		for _, cj := range list.from {
			c, err := cj.crawl()
			if err != nil {
				return err
			}
			*list.to = append(*list.to, c)
		}
	}
	return nil
}

// MarshalJSON writes the crawl as the index holds it (names as the bytes
// they are), for what prints crawls (warcdedup index stats).
func (c *Crawl) MarshalJSON() ([]byte, error) { return json.Marshal(crawlJSONOf(c)) }

// MarshalJSON writes what a crawl needs as the index holds it (names as
// the bytes they are), for what prints it (warcdedup index deps).
func (n Need) MarshalJSON() ([]byte, error) { return json.Marshal(needJSONOf(&n)) }
