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
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"warcdedup/manifest"
)

// Locator finds files named by field 1 of a manifest. A name is looked up
// in Locations first; a name whose first path element is one of Prefixes
// is found beneath that prefix's directory or URL; other names are
// searched for under each of Roots in turn, then expanded with
// URLTemplate.
type Locator struct {
	Roots       []string          // directories field 1 is relative to
	Locations   map[string]string // file name -> local path or http(s) URL
	URLTemplate string            // e.g. "http://host:8080/warcs/{file}"
	HTTP        *HTTP             // for URLs; a default one if nil
	// Prefixes maps a name's first path element (a crawl's name, in the
	// manifests of a crawl index) to the directory the rest of the name
	// is relative to, or to the base URL that serves it.
	Prefixes map[string]string

	memo memo
}

// memo keeps, for the life of a Locator, what Resolve found: a stage opens
// tens of thousands of records in a few files, and walking every link of
// a path per record was a tenth of warcdedup run's CPU. Nothing is
// weakened: a file is still opened through its root (os.Root), which
// refuses a link that leads out, also one swapped in after the name was
// first resolved.
type memo struct {
	mu    sync.Mutex
	found map[string]Local // field 1 -> the file beneath its root
}

func (m *memo) local(field string) (Local, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	local, ok := m.found[field]
	return local, ok
}

func (m *memo) keep(field string, local Local) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.found == nil {
		m.found = map[string]Local{}
	}
	m.found[field] = local
}

// prefixed returns where the prefix of name says its file is: a root
// directory or a base URL, and the rest of the name; ok is false when
// name has no prefix of Prefixes.
func (l *Locator) prefixed(name string) (where, rest string, ok bool) {
	first, rest, found := strings.Cut(name, "/")
	if !found || l.Prefixes == nil {
		return "", "", false
	}
	where, ok = l.Prefixes[first]
	return where, rest, ok
}

// ErrUnsafeName is returned for a file name that would leave its root.
var ErrUnsafeName = errors.New("file name leaves its root")

// CheckName refuses names that are absolute or climb out of a root, so a
// manifest cannot make a stage read (or, for warcrefs, write) outside the
// collection. A backslash is an ordinary byte of a file name where the
// separator is "/" (crawlers write such names); only where it separates
// directories (Windows) could it lead out.
func CheckName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) ||
		filepath.Separator == '\\' && strings.Contains(name, "\\") {
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

// Local is a file found beneath a root: the root's real path (its own
// symbolic links resolved: the user named it) and the file's path relative
// to it, with every symbolic link on the way resolved and none leading out
// of the root. Open and create through OpenRoot, so that a link swapped in
// later cannot lead out either.
type Local struct {
	Root string // the root's real path
	Rel  string // the file's real path beneath it, slash-separated
}

// Path is the file's real path.
func (l Local) Path() string { return filepath.Join(l.Root, filepath.FromSlash(l.Rel)) }

// OpenRoot opens the root, for operations confined to it.
func (l Local) OpenRoot() (*os.Root, error) { return os.OpenRoot(l.Root) }

// Open opens the file for reading, confined to its root.
func (l Local) Open() (*os.File, error) {
	root, err := l.OpenRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Open(filepath.FromSlash(l.Rel))
}

// Resolve finds the file a manifest names (field 1, escaped) beneath the
// first root that has it. A name that leaves its root, or a symbolic link
// (of a directory or of the file) that leads out of it, is refused with
// ErrUnsafeName: a manifest must not make a stage read, or warcrefs
// rewrite, anything outside the collection.
func (l *Locator) Resolve(field string) (Local, error) {
	if local, ok := l.memo.local(field); ok {
		return local, nil
	}
	local, err := l.resolve(field)
	if err == nil {
		l.memo.keep(field, local)
	}
	return local, err
}

func (l *Locator) resolve(field string) (Local, error) {
	name, err := manifest.UnescapeFile(field)
	if err != nil {
		return Local{}, err
	}
	if err := CheckName(name); err != nil {
		return Local{}, err
	}
	if where, rest, ok := l.prefixed(name); ok {
		if isURL(where) {
			return Local{}, fmt.Errorf("%s: %w: it is served at %s", name, os.ErrNotExist, where)
		}
		real, err := filepath.EvalSymlinks(where)
		if err != nil {
			return Local{}, fmt.Errorf("root %s: %w", where, err)
		}
		return beneath(real, rest)
	}
	if len(l.Roots) == 0 {
		return Local{}, fmt.Errorf("%s: no --root says where it is", name)
	}
	for _, root := range l.Roots {
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			return Local{}, fmt.Errorf("root %s: %w", root, err)
		}
		local, err := beneath(real, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return local, err
	}
	return Local{}, fmt.Errorf("%s: %w under %s", name, os.ErrNotExist, strings.Join(l.Roots, ", "))
}

// beneath resolves name under the real root path, refusing a path that
// symbolic links take out of it.
func beneath(root, name string) (Local, error) {
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return Local{}, err
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return Local{}, fmt.Errorf("%s: a symbolic link leads to %s, outside the root %s: %w", name, real, root, ErrUnsafeName)
	}
	return Local{Root: root, Rel: filepath.ToSlash(rel)}, nil
}

// Where returns where the file a manifest names (field 1, escaped) is: its
// Locations entry as written; else its real path beneath the first root
// that has it (see Resolve); else the URL made from URLTemplate.
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
	if where, rest, ok := l.prefixed(name); ok {
		if isURL(where) {
			return strings.TrimSuffix(where, "/") + "/" + escapeURLPath(rest), nil
		}
		local, err := l.Resolve(field)
		if err != nil {
			return "", err
		}
		return local.Path(), nil
	}
	if len(l.Roots) > 0 {
		local, err := l.Resolve(field)
		if err == nil {
			return local.Path(), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || l.URLTemplate == "" {
			return "", err
		}
	}
	if l.URLTemplate != "" {
		return strings.ReplaceAll(l.URLTemplate, "{file}", escapeURLPath(name)), nil
	}
	return "", fmt.Errorf("%s: no --root, --locations or --url-template says where it is", name)
}

// Open returns the length bytes at offset of the file a manifest names. The
// reader fails with io.ErrUnexpectedEOF if the file ends before them. A file
// beneath a root is opened confined to it.
func (l *Locator) Open(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	name, err := manifest.UnescapeFile(field)
	if err != nil {
		return nil, err
	}
	var f *os.File
	where, ok := l.Locations[name]
	switch {
	case ok && isURL(where):
		return l.http().Open(ctx, where, offset, length)
	case ok:
		if f, err = os.Open(where); err != nil {
			return nil, err
		}
	default:
		if where, err = l.Where(field); err != nil {
			return nil, err
		}
		if isURL(where) {
			return l.http().Open(ctx, where, offset, length)
		}
		local, err := l.Resolve(field)
		if err != nil {
			return nil, err
		}
		if f, err = local.Open(); err != nil {
			return nil, err
		}
	}
	return &localRecord{f: f, r: io.NewSectionReader(f, offset, length), want: length, name: where, offset: offset}, nil
}

func (l *Locator) http() *HTTP {
	if l.HTTP == nil {
		return DefaultHTTP()
	}
	return l.HTTP
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
