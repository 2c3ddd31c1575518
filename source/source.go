// Package source opens the stored bytes of a record named by a manifest
// line (file, offset, length), from local disk or from storage hosts over
// HTTP. It is shared by the stages that read records back: warccollres
// compares them, warcrefs rewrites them.
package source

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"warcdedup/manifest"
)

// Locator finds files named by field 1 of a manifest. A name is looked up
// in Locations first, then expanded with URLTemplate, then searched for
// under each of Roots in turn.
type Locator struct {
	Roots       []string          // directories field 1 is relative to
	Locations   map[string]string // file name -> local path or http(s) URL
	URLTemplate string            // e.g. "http://host:8080/warcs/{file}"
	HTTP        *HTTP             // for URLs; a default one if nil
}

// ErrUnsafeName is returned for a file name that would leave its root.
var ErrUnsafeName = errors.New("file name leaves its root")

// CheckName refuses names that are absolute or climb out of a root, so a
// manifest cannot make a stage read (or, for warcrefs, write) outside the
// collection.
func CheckName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) {
		return fmt.Errorf("%q: %w", name, ErrUnsafeName)
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return fmt.Errorf("%q: %w", name, ErrUnsafeName)
		}
	}
	if path.Clean(name) != name {
		return fmt.Errorf("%q: not a clean relative path: %w", name, ErrUnsafeName)
	}
	return nil
}

// Where returns the local path or URL of the file a manifest names (field
// 1, escaped as in the manifest).
func (l *Locator) Where(field string) (string, error) {
	name, err := manifest.UnescapeFile(field)
	if err != nil {
		return "", err
	}
	if loc, ok := l.Locations[name]; ok {
		return loc, nil
	}
	if err := CheckName(name); err != nil {
		return "", err
	}
	if l.URLTemplate != "" {
		return strings.ReplaceAll(l.URLTemplate, "{file}", escapeURLPath(name)), nil
	}
	if len(l.Roots) == 0 {
		return "", fmt.Errorf("%s: no --root, --locations or --url-template says where it is", name)
	}
	for _, root := range l.Roots {
		p := filepath.Join(root, filepath.FromSlash(name))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w under %s", name, os.ErrNotExist, strings.Join(l.Roots, ", "))
}

// Open returns the length bytes at offset of the file a manifest names. The
// reader fails with io.ErrUnexpectedEOF if the file ends before them.
func (l *Locator) Open(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	where, err := l.Where(field)
	if err != nil {
		return nil, err
	}
	if isURL(where) {
		h := l.HTTP
		if h == nil {
			h = DefaultHTTP()
		}
		return h.Open(ctx, where, offset, length)
	}
	f, err := os.Open(where)
	if err != nil {
		return nil, err
	}
	return &localRecord{f: f, r: io.NewSectionReader(f, offset, length), want: length, name: where, offset: offset}, nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// escapeURLPath escapes a relative file path for a URL, keeping slashes.
func escapeURLPath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// localRecord reads a section of a local file and reports a file that is
// shorter than the section as an unexpected EOF.
type localRecord struct {
	f      *os.File
	r      *io.SectionReader
	want   int64
	got    int64
	name   string
	offset int64
}

func (l *localRecord) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.got += int64(n)
	if err == io.EOF && l.got < l.want {
		err = fmt.Errorf("%s: offset %d: file ends %d bytes into a %d-byte record: %w", l.name, l.offset, l.got, l.want, io.ErrUnexpectedEOF)
	}
	return n, err
}

func (l *localRecord) Close() error { return l.f.Close() }

// ReadLocations reads a locations file: one "name location" pair per line,
// the location a local path or an http(s) URL; blank lines and lines
// starting with # are ignored.
func ReadLocations(r io.Reader, source string) (map[string]string, error) {
	m := map[string]string{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, loc, ok := strings.Cut(line, " ")
		loc = strings.TrimSpace(loc)
		if !ok || loc == "" {
			return nil, fmt.Errorf("%s:%d: want \"name location\"", source, n)
		}
		name, err := manifest.UnescapeFile(name)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", source, n, err)
		}
		if prev, dup := m[name]; dup && prev != loc {
			return nil, fmt.Errorf("%s:%d: %s is listed twice, at %s and %s", source, n, name, prev, loc)
		}
		m[name] = loc
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return m, nil
}
