// Package wacztest checks WACZ packages as a reader other than package
// wacz sees them, for tests of what `warcdedup run` writes: it reads the
// ZIP with archive/zip and the JSON with encoding/json, and compares the
// index with warcio.js's `cdx-index` of the WARC members. It shares no
// code with package wacz, so that a mistake there is not repeated here.
//
// Each package of a directory is checked for:
//
//   - every member's SHA-256 and size equal to its datapackage.json
//     resource ("hash": "sha256:HEX", "bytes"), every member but the two
//     metadata files listed, nothing listed that is not there;
//   - datapackage-digest.json's hash equal to the SHA-256 of
//     datapackage.json as stored;
//   - the WARC members (archive/) stored, not deflated (replay tools read
//     records by range);
//   - the index (indexes/index.cdxj, or ZipNum indexes/index.cdx.gz with
//     index.idx) equal line for line to warcio.js `cdx-index --format
//     cdxj` of the WARC members, both sorted: warcio names a line's file
//     by the base name of the file it read, the member's name under
//     archive/, as the package's index does;
//   - for a ZipNum index, every block where index.idx says: the blocks
//     follow one another from offset 0 to the end of index.cdx.gz, each
//     is one gzip member whose SHA-256 is the idx line's digest, whose
//     first line starts with the idx line's key, and whose lines are no
//     more than the first block's; the idx line's filename is the
//     .cdx.gz member's;
//   - relation.requires: each entry names a package of the directory,
//     with that package's current SHA-256 (hex) and size when it gives
//     them.
package wacztest

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Result is what was checked of a directory of packages.
type Result struct {
	Packages    int
	Members     int // members whose hash and size were checked
	WARCMembers int // WARC members indexed by warcio.js
	IndexLines  int // index lines compared with warcio.js's
	ZipNum      int // packages with a ZipNum index
	Blocks      int // ZipNum blocks checked against index.idx
	Requires    int // relation.requires entries checked
	Problems    []string
}

// Err joins the problems, nil when there are none.
func (r *Result) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	const max = 30
	p := r.Problems
	more := ""
	if len(p) > max {
		more = fmt.Sprintf("\n... and %d more", len(p)-max)
		p = p[:max]
	}
	return fmt.Errorf("%d problems:\n%s%s", len(r.Problems), strings.Join(p, "\n"), more)
}

func (r *Result) String() string {
	return fmt.Sprintf("%d packages: %d members' hashes and sizes, %d WARC members indexed by warcio.js, %d index lines equal to its, %d ZipNum indexes with %d blocks where index.idx says, %d requires entries current",
		r.Packages, r.Members, r.WARCMembers, r.IndexLines, r.ZipNum, r.Blocks, r.Requires)
}

func (r *Result) bad(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// CheckDir checks every *.wacz file of dir (see the package comment),
// indexing WARC members with the warcio.js command cli in temporary
// files under tmp. An error is for a check that could not run; what is
// wrong with the packages is in Result.Problems.
func CheckDir(cli, dir, tmp string) (*Result, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no WACZ file", dir)
	}
	slices.Sort(names)
	r := &Result{}
	type whole struct {
		sha  string
		size int64
	}
	files := map[string]whole{}
	var requires []requirement
	for _, name := range names {
		sum, size, err := fileSHA256(name)
		if err != nil {
			return nil, err
		}
		files[filepath.Base(name)] = whole{sum, size}
		req, err := checkPackage(r, cli, name, tmp)
		if err != nil {
			return nil, err
		}
		requires = append(requires, req...)
		r.Packages++
	}
	for _, q := range requires {
		r.Requires++
		f, ok := files[q.Filename]
		switch {
		case !ok:
			r.bad("%s: relation.requires names %s, which is not in %s", q.by, q.Filename, dir)
		case q.Hash != "" && q.Hash != f.sha:
			r.bad("%s: relation.requires gives %s the SHA-256 %s, it is %s", q.by, q.Filename, q.Hash, f.sha)
		case q.Size != nil && *q.Size != f.size:
			r.bad("%s: relation.requires gives %s the size %d, it is %d", q.by, q.Filename, *q.Size, f.size)
		}
	}
	return r, nil
}

type requirement struct {
	by       string
	Filename string `json:"filename"`
	Hash     string `json:"hash"`
	Size     *int64 `json:"size"`
}

type datapackage struct {
	Resources []struct {
		Path  string `json:"path"`
		Hash  string `json:"hash"`
		Bytes int64  `json:"bytes"`
	} `json:"resources"`
	Relation struct {
		Requires []requirement `json:"requires"`
	} `json:"relation"`
}

// checkPackage checks one package and returns its requires entries.
func checkPackage(r *Result, cli, name, tmp string) ([]requirement, error) {
	base := filepath.Base(name)
	zr, err := zip.OpenReader(name)
	if err != nil {
		r.bad("%s: %v", base, err)
		return nil, nil
	}
	defer zr.Close()
	m := readMembers(r, base, zr.File)
	dp, ok := m.datapackage(r)
	if !ok {
		return nil, nil
	}
	m.checkResources(r, dp)
	m.checkDigest(r)
	if err := compareWithWarcio(r, cli, base, zr.File, m.index(r), tmp); err != nil {
		return nil, err
	}
	reqs := dp.Relation.Requires
	for i := range reqs {
		reqs[i].by = base
	}
	return reqs, nil
}

// packageMembers is what was read of a package's ZIP members: each one's
// SHA-256 and size as stored, and the bytes of those that are not WARC
// members (metadata and index, read again by the later checks).
type packageMembers struct {
	base   string // the package's file name, naming it in problems
	byName map[string]*zip.File
	sums   map[string]string // SHA-256, hex
	sizes  map[string]int64
	raw    map[string][]byte // the members not under archive/
}

// readMembers reads every member of the package once, noting a member
// that is there twice or a WARC member the ZIP deflates (replay tools
// read records by range).
func readMembers(r *Result, base string, files []*zip.File) *packageMembers {
	m := &packageMembers{base: base, byName: map[string]*zip.File{}, sums: map[string]string{}, sizes: map[string]int64{}, raw: map[string][]byte{}}
	for _, f := range files {
		if _, dup := m.byName[f.Name]; dup {
			r.bad("%s: member %s twice", base, f.Name)
		}
		m.byName[f.Name] = f
		warc := strings.HasPrefix(f.Name, "archive/")
		rc, err := f.Open()
		if err != nil {
			r.bad("%s: %s: %v", base, f.Name, err)
			continue
		}
		h := sha256.New()
		var w io.Writer = h
		var buf bytes.Buffer
		if !warc {
			w = io.MultiWriter(h, &buf)
		}
		n, err := io.Copy(w, rc)
		rc.Close()
		if err != nil {
			r.bad("%s: %s: %v", base, f.Name, err)
			continue
		}
		m.sums[f.Name] = hex.EncodeToString(h.Sum(nil))
		m.sizes[f.Name] = n
		if !warc {
			m.raw[f.Name] = buf.Bytes()
		}
		if warc && f.Method != zip.Store {
			r.bad("%s: WARC member %s is compressed by the ZIP (method %d), not stored", base, f.Name, f.Method)
		}
	}
	return m
}

// datapackage parses datapackage.json; without it (or unreadable) the
// package's other checks cannot run, and ok is false.
func (m *packageMembers) datapackage(r *Result) (dp datapackage, ok bool) {
	dpRaw, ok := m.raw["datapackage.json"]
	if !ok {
		r.bad("%s: no datapackage.json", m.base)
		return dp, false
	}
	if err := json.Unmarshal(dpRaw, &dp); err != nil {
		r.bad("%s: datapackage.json: %v", m.base, err)
		return dp, false
	}
	return dp, true
}

// checkResources checks that datapackage.json lists every member but the
// two metadata files with its SHA-256 and size, and nothing else.
func (m *packageMembers) checkResources(r *Result, dp datapackage) {
	listed := map[string]bool{}
	for _, res := range dp.Resources {
		listed[res.Path] = true
		sum, ok := m.sums[res.Path]
		if !ok {
			r.bad("%s: datapackage.json lists %s, which is not in the ZIP", m.base, res.Path)
			continue
		}
		r.Members++
		if want := "sha256:" + sum; res.Hash != want {
			r.bad("%s: %s: datapackage.json gives hash %s, the member's is %s", m.base, res.Path, res.Hash, want)
		}
		if res.Bytes != m.sizes[res.Path] {
			r.bad("%s: %s: datapackage.json gives %d bytes, the member has %d", m.base, res.Path, res.Bytes, m.sizes[res.Path])
		}
	}
	for n := range m.byName {
		if !listed[n] && n != "datapackage.json" && n != "datapackage-digest.json" {
			r.bad("%s: member %s is not in datapackage.json", m.base, n)
		}
	}
}

// checkDigest checks that datapackage-digest.json gives the SHA-256 of
// datapackage.json as stored.
func (m *packageMembers) checkDigest(r *Result) {
	var digest struct {
		Path string `json:"path"`
		Hash string `json:"hash"`
	}
	if d, ok := m.raw["datapackage-digest.json"]; !ok {
		r.bad("%s: no datapackage-digest.json", m.base)
	} else if err := json.Unmarshal(d, &digest); err != nil {
		r.bad("%s: datapackage-digest.json: %v", m.base, err)
	} else if want := "sha256:" + m.sums["datapackage.json"]; digest.Path != "datapackage.json" || digest.Hash != want {
		r.bad("%s: datapackage-digest.json gives %s %s, datapackage.json's hash is %s", m.base, digest.Path, digest.Hash, want)
	}
}

// index is the package's index lines, from indexes/index.cdxj or a
// ZipNum index (whose blocks checkZipNum checks against index.idx).
func (m *packageMembers) index(r *Result) []string {
	switch {
	case m.byName["indexes/index.cdxj"] != nil:
		return splitLines(m.raw["indexes/index.cdxj"])
	case m.byName["indexes/index.cdx.gz"] != nil && m.byName["indexes/index.idx"] != nil:
		r.ZipNum++
		return checkZipNum(r, m.base, m.byName["indexes/index.cdx.gz"], m.raw["indexes/index.idx"])
	default:
		r.bad("%s: no index (indexes/index.cdxj, or indexes/index.cdx.gz with index.idx)", m.base)
		return nil
	}
}

// checkZipNum checks every block of a ZipNum index against index.idx and
// returns the index's lines.
func checkZipNum(r *Result, base string, cdxGz *zip.File, idx []byte) []string {
	rc, err := cdxGz.Open()
	if err != nil {
		r.bad("%s: %s: %v", base, cdxGz.Name, err)
		return nil
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		r.bad("%s: %s: %v", base, cdxGz.Name, err)
		return nil
	}
	lines := splitLines(idx)
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "!meta 0 ") {
		r.bad("%s: index.idx does not start with a !meta line", base)
		return nil
	}
	var index []string
	var end int64
	firstBlock := 0
	for i, l := range lines[1:] {
		key, js, ok := cutJSON(l)
		var b struct {
			Offset   *int64 `json:"offset"`
			Length   *int64 `json:"length"`
			Digest   string `json:"digest"`
			Filename string `json:"filename"`
		}
		if !ok || json.Unmarshal([]byte(js), &b) != nil || b.Offset == nil || b.Length == nil {
			r.bad("%s: index.idx line %d is no \"KEY {offset, length, digest, filename}\": %.100s", base, i+2, l)
			return index
		}
		r.Blocks++
		if *b.Offset != end {
			r.bad("%s: index.idx line %d: block at %d, the previous one ended at %d", base, i+2, *b.Offset, end)
		}
		if *b.Offset < 0 || *b.Length <= 0 || *b.Offset+*b.Length > int64(len(data)) {
			r.bad("%s: index.idx line %d: block %d+%d outside index.cdx.gz (%d bytes)", base, i+2, *b.Offset, *b.Length, len(data))
			return index
		}
		end = *b.Offset + *b.Length
		if b.Filename != path.Base(cdxGz.Name) {
			r.bad("%s: index.idx line %d names %q, not %s", base, i+2, b.Filename, path.Base(cdxGz.Name))
		}
		block := data[*b.Offset:end]
		if sum := sha256.Sum256(block); b.Digest != "sha256:"+hex.EncodeToString(sum[:]) && b.Digest != hex.EncodeToString(sum[:]) {
			r.bad("%s: index.idx line %d: block digest %s, the block's SHA-256 is %x", base, i+2, b.Digest, sum)
		}
		// A bytes.Reader is read byte by byte (it is a flate.Reader), so
		// what is left of it after the member is what follows the member.
		br := bytes.NewReader(block)
		zr, err := gzip.NewReader(br)
		if err != nil {
			r.bad("%s: index.idx line %d: the block is no gzip member: %v", base, i+2, err)
			continue
		}
		zr.Multistream(false)
		text, err := io.ReadAll(zr)
		if err == nil && br.Len() != 0 {
			err = fmt.Errorf("%d bytes after its gzip member", br.Len())
		}
		if err != nil {
			r.bad("%s: index.idx line %d: block: %v", base, i+2, err)
			continue
		}
		bl := splitLines(text)
		if len(bl) == 0 || !strings.HasPrefix(bl[0], key+" ") && bl[0] != key {
			r.bad("%s: index.idx line %d: key %q, the block starts %.80q", base, i+2, key, strings.Join(bl[:min(1, len(bl))], ""))
		}
		if i == 0 {
			firstBlock = len(bl)
		} else if len(bl) > firstBlock {
			r.bad("%s: block %d has %d lines, the first %d", base, i+1, len(bl), firstBlock)
		}
		index = append(index, bl...)
	}
	if end != int64(len(data)) {
		r.bad("%s: the blocks end at %d, index.cdx.gz at %d", base, end, len(data))
	}
	return index
}

// cutJSON splits an idx line "KEY {JSON}" at the JSON.
func cutJSON(l string) (key, js string, ok bool) {
	i := strings.Index(l, " {")
	if i < 0 {
		return "", "", false
	}
	return l[:i], l[i+1:], true
}

func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// compareWithWarcio extracts the WARC members to tmp, indexes them with
// warcio.js and compares its lines with the package's index, both
// sorted.
func compareWithWarcio(r *Result, cli, base string, files []*zip.File, index []string, tmp string) error {
	dir, err := os.MkdirTemp(tmp, "wacztest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var paths []string
	for _, f := range files {
		if !strings.HasPrefix(f.Name, "archive/") || strings.HasSuffix(f.Name, "/") {
			continue
		}
		// warcio names a line's file by the base name of what it read.
		p := filepath.Join(dir, path.Base(f.Name))
		if err := extract(f, p); err != nil {
			return fmt.Errorf("%s: %s: %w", base, f.Name, err)
		}
		paths = append(paths, p)
		r.WARCMembers++
	}
	if len(paths) == 0 {
		r.bad("%s: no WARC member", base)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append(append([]string{"cdx-index"}, paths...), "--format", "cdxj")...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		return fmt.Errorf("%s: warcio cdx-index: %v\n%s", base, err, stderr.String())
	}
	want := splitLines(out.Bytes())
	got := slices.Clone(index)
	slices.Sort(want)
	slices.Sort(got)
	r.IndexLines += len(got)
	if !slices.Equal(got, want) {
		r.bad("%s: the index (%d lines) is not warcio.js cdx-index of its WARC members (%d lines): %s", base, len(got), len(want), firstDiff(got, want))
	}
	return nil
}

func extract(f *zip.File, dst string) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	w, err := os.Create(dst)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	_, err = io.Copy(bw, rc)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

func firstDiff(got, want []string) string {
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("first difference at sorted line %d:\n  index:  %s\n  warcio: %s", i+1, g, w)
		}
	}
	return ""
}

func fileSHA256(name string) (string, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
