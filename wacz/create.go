package wacz

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"warcdedup/warcindex"
)

// Page is an entry of pages/pages.jsonl.
type Page struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	TS    string `json:"ts"` // RFC 3339
	Title string `json:"title,omitempty"`
}

// CreateOptions describe a new package.
type CreateOptions struct {
	// WARCs are the WARC files to package, as archive/<base name>
	// (stored, in this order); base names must be unique.
	WARCs []string
	// ZipNum writes the index as ZipNum blocks of LinesPerBlock lines
	// (DefaultLinesPerBlock when 0) with index.idx, as the Browsertrix
	// crawler does for larger indexes; otherwise indexes/index.cdxj.
	ZipNum        bool
	LinesPerBlock int
	// Pages are the entry points; nil lists every HTML response with
	// status 200.
	Pages []Page
	// Title, Software and Created go in datapackage.json (Created zero:
	// time.Now).
	Title, Software string
	Created         time.Time
	// Requires is relation.requires.
	Requires []Requirement
	// TempDir holds the index while the package is written.
	TempDir string
}

// Create writes a WACZ 1.1.1 package of WARC files to out, as the
// Browsertrix crawler lays one out: archive/, indexes/ (warcindex's
// lines: warcio.js's), pages/pages.jsonl, datapackage.json (resources
// with name, path, bytes and hash) and datapackage-digest.json.
func Create(out outFile, opt CreateOptions) (*Result, error) {
	created := opt.Created
	if created.IsZero() {
		created = time.Now()
	}
	mtime, mdate := msdosTime(created)
	seen := map[string]bool{}
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var members []*Member
	for _, w := range opt.WARCs {
		name := "archive/" + filepath.Base(w)
		if seen[name] {
			return nil, fmt.Errorf("two WARC files named %s", filepath.Base(w))
		}
		seen[name] = true
		f, err := os.Open(w)
		if err != nil {
			return nil, err
		}
		files[name] = f
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		members = append(members, &Member{Name: name, Method: Store, Size: fi.Size(), CompressedSize: fi.Size(),
			CreatorVersion: 20, ReaderVersion: 20, ModifiedTime: mtime, ModifiedDate: mdate})
	}

	// The index, sorted, and the pages.
	s := newLineSorter(opt.TempDir)
	defer s.close()
	var pages bytes.Buffer
	pages.WriteString(`{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}` + "\n")
	var buf []byte
	for _, m := range members {
		f := files[m.Name]
		err := warcindex.Index(bufio.NewReaderSize(f, 1<<20), IndexName(m.Name), func(e *warcindex.Entry) error {
			if opt.Pages == nil && e.Mime == "text/html" && e.Status == "200" && e.Type == "response" {
				writePage(&pages, Page{URL: e.URL, TS: pageTime(e.Date)})
			}
			buf = e.AppendCDXJ(buf[:0])
			return s.add(buf)
		})
		if err != nil {
			return nil, fmt.Errorf("indexing %s: %w", m.Name, err)
		}
	}
	for _, p := range opt.Pages {
		writePage(&pages, p)
	}
	var cdxOut, idxOut bytes.Buffer
	var lw lineWriter
	cdxName := "indexes/index.cdxj"
	if opt.ZipNum {
		cdxName = "indexes/index.cdx.gz"
		lw = newZipNumWriter(&cdxOut, &idxOut, "index.cdx.gz", opt.LinesPerBlock, true, idxStyle{})
	} else {
		lw = &plainWriter{w: bufio.NewWriter(&cdxOut)}
	}
	if err := s.each(lw.writeLine); err != nil {
		return nil, err
	}
	if err := lw.close(); err != nil {
		return nil, err
	}
	type blob struct {
		name string
		data []byte
	}
	blobs := []blob{{cdxName, cdxOut.Bytes()}}
	if opt.ZipNum {
		blobs = append(blobs, blob{"indexes/index.idx", idxOut.Bytes()})
	}
	blobs = append(blobs, blob{"pages/pages.jsonl", pages.Bytes()})

	zw := newZipWriter(out, true)
	defer zw.sums()
	res := &Result{}
	resources := &node{kind: '['}
	addResource := func(name string, sum []byte, size int64) {
		base := strings.ToLower(filepath.Base(name))
		resources.vals = append(resources.vals, objNode("name", strNode(base), "path", strNode(name),
			"bytes", intNode(size), "hash", strNode("sha256:"+hex.EncodeToString(sum))))
	}
	for _, m := range members {
		sum, err := zw.storeFile(m, files[m.Name])
		if err != nil {
			return nil, err
		}
		addResource(m.Name, sum, m.Size)
		res.Members = append(res.Members, m)
	}
	for _, b := range blobs {
		m := &Member{Name: b.name, Method: Store, CreatorVersion: 20, ReaderVersion: 20, ModifiedTime: mtime, ModifiedDate: mdate}
		if err := zw.writeBytes(m, b.data); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b.data)
		addResource(m.Name, sum[:], m.Size)
		res.Members = append(res.Members, m)
	}
	root := objNode("resources", resources,
		"created", strNode(created.UTC().Format("2006-01-02T15:04:05Z")),
		"wacz_version", strNode("1.1.1"),
		"software", strNode(opt.Software))
	if opt.Title != "" {
		root.set("title", strNode(opt.Title), "")
	}
	dp := &Datapackage{root: root, style: defaultStyle}
	for _, r := range opt.Requires {
		if err := dp.Require(r); err != nil {
			return nil, err
		}
	}
	res.Datapackage = dp.Bytes()
	sum := sha256.Sum256(res.Datapackage)
	res.Digest = newDigestFile(sum[:])
	for _, b := range []blob{{DatapackageName, res.Datapackage}, {DigestName, res.Digest}} {
		m := &Member{Name: b.name, Method: Store, CreatorVersion: 20, ReaderVersion: 20, ModifiedTime: mtime, ModifiedDate: mdate}
		if err := zw.writeBytes(m, b.data); err != nil {
			return nil, err
		}
		res.Members = append(res.Members, m)
	}
	if err := zw.close(nil); err != nil {
		return nil, err
	}
	res.Size = zw.off
	res.SHA256, res.CRC32 = zw.sums()
	return res, nil
}

func writePage(b *bytes.Buffer, p Page) {
	if p.ID == "" {
		sum := sha1.Sum([]byte(p.URL + " " + p.TS))
		p.ID = hex.EncodeToString(sum[:10])
	}
	j, _ := json.Marshal(p)
	b.Write(j)
	b.WriteByte('\n')
}

// pageTime is a WARC-Date as pages.jsonl gives times.
func pageTime(d string) string {
	if t, err := time.Parse(time.RFC3339Nano, d); err == nil {
		return t.UTC().Format(time.RFC3339)
	}
	return d
}
