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
	c := newCreator(opt)
	defer c.close()
	if err := c.openWARCs(); err != nil {
		return nil, err
	}
	if err := c.indexWARCs(); err != nil {
		return nil, err
	}
	blobs, err := c.indexBlobs()
	if err != nil {
		return nil, err
	}
	c.zw = newZipWriter(out, true)
	if err := c.writeMembers(blobs); err != nil {
		return nil, err
	}
	if err := c.writeDatapackage(); err != nil {
		return nil, err
	}
	return c.finish()
}

// creator is one package being created, its steps in the order Create
// runs them: the WARC files opened, indexed, then written with the
// index and pages, then datapackage.json and its digest.
type creator struct {
	opt          CreateOptions
	created      time.Time
	mtime, mdate uint16
	warcs        []*Member
	files        map[string]*os.File // the WARC files by member name
	index        *lineSorter
	pages        bytes.Buffer
	zw           *zipWriter // nil until the members are written
	resources    *node      // datapackage.json's resources
	res          *Result
}

// blob is a member written from memory.
type blob struct {
	name string
	data []byte
}

func newCreator(opt CreateOptions) *creator {
	c := &creator{opt: opt, created: opt.Created, files: map[string]*os.File{},
		index: newLineSorter(opt.TempDir), resources: &node{kind: '['}, res: &Result{}}
	if c.created.IsZero() {
		c.created = time.Now()
	}
	c.mtime, c.mdate = msdosTime(c.created)
	return c
}

// close releases what a Create that failed holds, in the order of the
// defers it replaces: the ZIP writer's hashing goroutine, the index's
// spill file, the WARC files.
func (c *creator) close() {
	if c.zw != nil {
		c.zw.sums()
	}
	c.index.close()
	for _, f := range c.files {
		f.Close()
	}
}

// openWARCs opens each WARC file as a stored member archive/<base
// name>, refusing two of the same base name.
func (c *creator) openWARCs() error {
	for _, w := range c.opt.WARCs {
		name := "archive/" + filepath.Base(w)
		if _, ok := c.files[name]; ok {
			return fmt.Errorf("two WARC files named %s", filepath.Base(w))
		}
		f, err := os.Open(w)
		if err != nil {
			return err
		}
		c.files[name] = f
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		c.warcs = append(c.warcs, &Member{Name: name, Method: Store, Size: fi.Size(), CompressedSize: fi.Size(),
			CreatorVersion: 20, ReaderVersion: 20, ModifiedTime: c.mtime, ModifiedDate: c.mdate})
	}
	return nil
}

// indexWARCs sorts the index lines of every WARC file and lists the
// pages: the options', or else every HTML response with status 200.
func (c *creator) indexWARCs() error {
	c.pages.WriteString(`{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}` + "\n")
	var buf []byte
	for _, m := range c.warcs {
		err := warcindex.Index(bufio.NewReaderSize(c.files[m.Name], 1<<20), IndexName(m.Name), func(e *warcindex.Entry) error {
			if c.opt.Pages == nil && e.Mime == "text/html" && e.Status == "200" && e.Type == "response" {
				writePage(&c.pages, Page{URL: e.URL, TS: pageTime(e.Date)})
			}
			buf = e.AppendCDXJ(buf[:0])
			return c.index.add(buf)
		})
		if err != nil {
			return fmt.Errorf("indexing %s: %w", m.Name, err)
		}
	}
	for _, p := range c.opt.Pages {
		writePage(&c.pages, p)
	}
	return nil
}

// indexBlobs writes the sorted index, as CDXJ or as ZipNum blocks with
// index.idx, and returns the members written from memory, pages last.
func (c *creator) indexBlobs() ([]blob, error) {
	var cdxOut, idxOut bytes.Buffer
	var lw lineWriter
	cdxName := "indexes/index.cdxj"
	if c.opt.ZipNum {
		cdxName = "indexes/index.cdx.gz"
		lw = newZipNumWriter(&cdxOut, &idxOut, "index.cdx.gz", c.opt.LinesPerBlock, true, idxStyle{})
	} else {
		lw = &plainWriter{w: bufio.NewWriter(&cdxOut)}
	}
	if err := c.index.each(lw.writeLine); err != nil {
		return nil, err
	}
	if err := lw.close(); err != nil {
		return nil, err
	}
	blobs := []blob{{cdxName, cdxOut.Bytes()}}
	if c.opt.ZipNum {
		blobs = append(blobs, blob{"indexes/index.idx", idxOut.Bytes()})
	}
	return append(blobs, blob{"pages/pages.jsonl", c.pages.Bytes()}), nil
}

// writeMembers writes the WARC files, then the blobs, each a resource of
// datapackage.json.
func (c *creator) writeMembers(blobs []blob) error {
	for _, m := range c.warcs {
		sum, err := c.zw.storeFile(m, c.files[m.Name])
		if err != nil {
			return err
		}
		c.addResource(m.Name, sum, m.Size)
		c.res.Members = append(c.res.Members, m)
	}
	for _, b := range blobs {
		m := c.member(b.name)
		if err := c.zw.writeBytes(m, b.data); err != nil {
			return err
		}
		sum := sha256.Sum256(b.data)
		c.addResource(m.Name, sum[:], m.Size)
		c.res.Members = append(c.res.Members, m)
	}
	return nil
}

// member is a new stored member of that name, dated as the package.
func (c *creator) member(name string) *Member {
	return &Member{Name: name, Method: Store, CreatorVersion: 20, ReaderVersion: 20, ModifiedTime: c.mtime, ModifiedDate: c.mdate}
}

func (c *creator) addResource(name string, sum []byte, size int64) {
	base := strings.ToLower(filepath.Base(name))
	c.resources.vals = append(c.resources.vals, objNode("name", strNode(base), "path", strNode(name),
		"bytes", intNode(size), "hash", strNode("sha256:"+hex.EncodeToString(sum))))
}

// writeDatapackage writes datapackage.json, which lists every member
// before it, then datapackage-digest.json, its SHA-256.
func (c *creator) writeDatapackage() error {
	root := objNode("resources", c.resources,
		"created", strNode(c.created.UTC().Format("2006-01-02T15:04:05Z")),
		"wacz_version", strNode("1.1.1"),
		"software", strNode(c.opt.Software))
	if c.opt.Title != "" {
		root.set("title", strNode(c.opt.Title), "")
	}
	dp := &Datapackage{root: root, style: defaultStyle}
	for _, r := range c.opt.Requires {
		if err := dp.Require(r); err != nil {
			return err
		}
	}
	c.res.Datapackage = dp.Bytes()
	sum := sha256.Sum256(c.res.Datapackage)
	c.res.Digest = newDigestFile(sum[:])
	for _, b := range []blob{{DatapackageName, c.res.Datapackage}, {DigestName, c.res.Digest}} {
		m := c.member(b.name)
		if err := c.zw.writeBytes(m, b.data); err != nil {
			return err
		}
		c.res.Members = append(c.res.Members, m)
	}
	return nil
}

// finish writes the central directory and takes the package's size and
// sums.
func (c *creator) finish() (*Result, error) {
	if err := c.zw.close(nil); err != nil {
		return nil, err
	}
	c.res.Size = c.zw.off
	c.res.SHA256, c.res.CRC32 = c.zw.sums()
	return c.res, nil
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
