// Package split partitions manifests so that stages run in parallel on many
// hosts: by size without splitting a digest cluster, by digest range before
// sorting (how the sort scales past one machine), or by the storage host
// that holds each file (for per-host warcrefs runs).
package split

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
)

// Part is one output part of a split.
type Part struct {
	Name  string // file name
	Lines int64
	Bytes int64

	file *atomicfile.File
	w    *bufio.Writer
	buf  []byte
}

// Parts writes parts under predictable names, each under a temporary name
// until Commit, so a failed run leaves no part that looks finished.
type Parts struct {
	Prefix string  // parts are Prefix + "-" + key
	List   []*Part // in the order they were opened
	byKey  map[string]*Part
}

// NewParts returns Parts named from prefix.
func NewParts(prefix string) *Parts {
	return &Parts{Prefix: prefix, byKey: map[string]*Part{}}
}

// Get returns the part for key, opening it if needed.
func (p *Parts) Get(key string) (*Part, error) {
	if part, ok := p.byKey[key]; ok {
		return part, nil
	}
	name := p.Prefix + "-" + key
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return nil, err
	}
	part := &Part{Name: name, file: f, w: bufio.NewWriterSize(f, 64<<10)}
	p.byKey[key] = part
	p.List = append(p.List, part)
	return part, nil
}

// Write writes l to part.
func (part *Part) Write(l *manifest.Line) error {
	part.buf = l.Append(part.buf[:0])
	part.Lines++
	part.Bytes += int64(len(part.buf))
	_, err := part.w.Write(part.buf)
	return err
}

// Commit flushes every part and renames them to their names.
func (p *Parts) Commit() error {
	for _, part := range p.List {
		if err := part.w.Flush(); err != nil {
			return err
		}
	}
	for _, part := range p.List {
		if err := part.file.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Stale returns an error naming the first numbered part (PREFIX-NNN) in
// the prefix's directory that these parts do not include: an earlier
// split's, into more parts. Read with the new parts ("cat PREFIX-*", a
// job per part), its lines would be read twice, or stale. Nothing is
// removed: the user says whether it is a leftover.
func (p *Parts) Stale() error {
	dir, base := filepath.Split(p.Prefix)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	ours := map[string]bool{}
	for _, part := range p.List {
		ours[filepath.Base(part.Name)] = true
	}
	for _, e := range entries {
		if e.IsDir() {
			continue // a part is a file: crawl-2012 beside the prefix crawl is a collection
		}
		num, ok := strings.CutPrefix(e.Name(), base+"-")
		if ok && num != "" && strings.Trim(num, "0123456789") == "" && !ours[e.Name()] {
			return fmt.Errorf("%s is a part of an earlier split that this one does not write: remove the earlier parts first, or they are read with these", filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// Abort removes every uncommitted part.
func (p *Parts) Abort() {
	for _, part := range p.List {
		part.file.Abort()
	}
}

// Summary writes one line per part.
func (p *Parts) Summary(w io.Writer) {
	list := slices.Clone(p.List)
	slices.SortFunc(list, func(a, b *Part) int { return strings.Compare(a.Name, b.Name) })
	for _, part := range list {
		fmt.Fprintf(w, "%s: %d lines, %d bytes\n", part.Name, part.Lines, part.Bytes)
	}
}

// BySize cuts a manifest sorted by manifest.ByDigest into parts of about
// partBytes bytes each, never splitting a digest cluster (so a part may be
// larger). Parts are numbered from 000. The revisit lines without a digest
// in the manifest's algorithm, which sort first, start every part: the
// responses they refer to may be in any cluster, and each part is resolved
// on its own. They are held in memory meanwhile, and not counted in a
// part's size: counted in every part, they would end each part early, and
// -c N (partBytes the input's size divided by N) would write more than N.
func BySize(in *manifest.Reader, parts *Parts, partBytes int64) error {
	in.RequireOrder(manifest.ByDigest)
	n := 0
	var cur *Part
	var last string
	var prelude []manifest.Line
	var preludeBytes int64 // what prelude adds to each part's Bytes
	var err error
	for {
		l, rerr := in.Next()
		if rerr == io.EOF {
			if cur == nil && len(prelude) > 0 {
				_, err = startPart(parts, "000", prelude)
			}
			return err
		}
		if rerr != nil {
			return rerr
		}
		if l.Digest == manifest.NoDigest {
			prelude = append(prelude, l)
			preludeBytes += int64(len(l.Append(nil)))
			continue
		}
		if cur == nil || (cur.Bytes-preludeBytes >= partBytes && l.Digest != last) {
			if cur, err = startPart(parts, fmt.Sprintf("%03d", n), prelude); err != nil {
				return err
			}
			n++
		}
		last = l.Digest
		if err := cur.Write(&l); err != nil {
			return err
		}
	}
}

// startPart opens a part and writes the lines every part starts with.
func startPart(parts *Parts, key string, prelude []manifest.Line) (*Part, error) {
	part, err := parts.Get(key)
	if err != nil {
		return nil, err
	}
	for i := range prelude {
		if err := part.Write(&prelude[i]); err != nil {
			return nil, err
		}
	}
	return part, nil
}

// sortedAlphabet lists a digest encoding's characters in byte order, so a
// character's index there orders values the way `sort` orders the text.
func sortedAlphabet(algo string) string {
	if algo == "sha1" {
		return "234567ABCDEFGHIJKLMNOPQRSTUVWXYZ" // base32, in byte order
	}
	return "0123456789abcdef"
}

// rangeOf places a digest in one of n ranges of its text's byte order, so
// that the sorted parts, concatenated in part order, are the sorted whole.
func rangeOf(digest string, n int) (int, error) {
	algo, value, ok := strings.Cut(digest, ":")
	if !ok || len(value) < 4 {
		return 0, fmt.Errorf("digest %q", digest)
	}
	alphabet := sortedAlphabet(algo)
	base := len(alphabet)
	v, span := 0, 1
	for i := range 4 {
		d := strings.IndexByte(alphabet, value[i])
		if d < 0 {
			return 0, fmt.Errorf("digest %q has %q", digest, value[i])
		}
		v = v*base + d
		span *= base
	}
	return v * n / span, nil
}

// ByHashRange partitions an unsorted manifest into n parts by digest value:
// every line of a digest goes to the same part, so each part can be sorted
// and resolved on its own host, and the parts' ranges follow the sort order.
// Every part is written, empty or not, so that a job per range finds its
// input. A revisit line without a digest in the manifest's algorithm goes
// to every part: the response it refers to may be in any range.
func ByHashRange(in *manifest.Reader, inName string, parts *Parts, n int) error {
	if n < 1 {
		return fmt.Errorf("number of ranges %d, want at least 1", n)
	}
	width := len(fmt.Sprint(n - 1))
	if width < 3 {
		width = 3
	}
	all := make([]*Part, n)
	for i := range all {
		var err error
		if all[i], err = parts.Get(fmt.Sprintf("%0*d", width, i)); err != nil {
			return err
		}
	}
	for {
		l, err := in.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if l.Digest == manifest.NoDigest {
			for _, part := range all {
				if err := part.Write(&l); err != nil {
					return err
				}
			}
			continue
		}
		r, err := rangeOf(l.Digest, n)
		if err != nil {
			return &manifest.Error{Name: inName, Line: in.LineNumber(), Err: err}
		}
		if err := all[r].Write(&l); err != nil {
			return err
		}
	}
}

// HostRule maps file names to the storage host that holds them: an exact
// name, or a path.Match pattern such as "crawl-2012-*" or "host1/*".
type HostRule struct {
	Pattern string
	Host    string
}

// ReadHostMap reads "pattern host" lines; blank lines and # comments are
// ignored. The first rule that matches a name wins.
func ReadHostMap(r io.Reader, source string) ([]HostRule, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var rules []HostRule
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"pattern host\"", source, i+1)
		}
		if _, err := path.Match(f[0], ""); err != nil {
			return nil, fmt.Errorf("%s:%d: pattern %q: %w", source, i+1, f[0], err)
		}
		if strings.ContainsAny(f[1], "/\\") || f[1] == "." || f[1] == ".." {
			return nil, fmt.Errorf("%s:%d: host %q cannot name a part file", source, i+1, f[1])
		}
		rules = append(rules, HostRule{Pattern: f[0], Host: f[1]})
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s: no rules", source)
	}
	return rules, nil
}

// hostOf returns the host of the first rule matching file.
func hostOf(rules []HostRule, file string) (string, bool) {
	for _, r := range rules {
		if r.Pattern == file {
			return r.Host, true
		}
		if ok, _ := path.Match(r.Pattern, file); ok {
			return r.Host, true
		}
	}
	return "", false
}

// ByHost splits a manifest by the host that holds each line's file, keeping
// the input order within each part. A file no rule matches stops the split:
// a per-host run would silently miss its records.
func ByHost(in *manifest.Reader, inName string, parts *Parts, rules []HostRule) error {
	for {
		l, err := in.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name, err := manifest.UnescapeFile(l.File)
		if err != nil {
			return &manifest.Error{Name: inName, Line: in.LineNumber(), Err: err}
		}
		host, ok := hostOf(rules, name)
		if !ok {
			return &manifest.Error{Name: inName, Line: in.LineNumber(), Err: fmt.Errorf("no host rule matches %s", name)}
		}
		part, err := parts.Get(host)
		if err != nil {
			return err
		}
		if err := part.Write(&l); err != nil {
			return err
		}
	}
}
