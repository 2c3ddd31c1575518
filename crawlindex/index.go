package crawlindex

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
)

// The names in an index directory.
const (
	currentFile     = "CURRENT"
	lockFile        = "lock"
	registryFile    = "registry.json"
	crawlsDir       = "crawls"
	originalsDir    = "originals"
	genPrefix       = "gen-"
	partitionExt    = ".manifest"
	keptGenerations = 2
)

// Index is one generation of an index, as committed: what a run reads.
// Commit and Remove make new generations; an Index stays the generation
// it was opened at.
type Index struct {
	Dir      string
	Registry *Registry
	gen      string // its directory
}

// ErrNoIndex is an index directory without a committed generation.
var ErrNoIndex = errors.New("no index here yet")

// Open opens the committed generation of the index in dir. A directory
// that holds no index yet gives an empty Index of that directory and
// ErrNoIndex wrapped; the first commit makes it.
func Open(dir string) (*Index, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(abs, currentFile))
	if errors.Is(err, os.ErrNotExist) {
		return &Index{Dir: abs, Registry: &Registry{Version: registryVersion}}, fmt.Errorf("%s: %w", dir, ErrNoIndex)
	}
	if err != nil {
		return nil, err
	}
	gen := strings.TrimSpace(string(data))
	if !strings.HasPrefix(gen, genPrefix) || strings.ContainsAny(gen, "/\\") {
		return nil, fmt.Errorf("%s: CURRENT names %q, not a generation", dir, gen)
	}
	ix := &Index{Dir: abs, gen: filepath.Join(abs, gen), Registry: &Registry{}}
	if err := readJSON(filepath.Join(ix.gen, registryFile), ix.Registry); err != nil {
		return nil, fmt.Errorf("index %s: %w", dir, err)
	}
	if ix.Registry.Version != registryVersion {
		return nil, fmt.Errorf("index %s: layout version %d, this warcdedup reads %d", dir, ix.Registry.Version, registryVersion)
	}
	return ix, nil
}

// OpenOrCreate is Open that takes a directory without an index as an
// empty index.
func OpenOrCreate(dir string) (*Index, error) {
	ix, err := Open(dir)
	if errors.Is(err, ErrNoIndex) {
		return ix, os.MkdirAll(ix.Dir, 0o755)
	}
	return ix, err
}

// Exists reports whether the index has a committed generation.
func (ix *Index) Exists() bool { return ix.gen != "" }

// Partitions are the files of originals, in digest order: their lines,
// one after the other, are sorted on digest (manifest.ByDigest).
func (ix *Index) Partitions() ([]string, error) {
	if ix.gen == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(filepath.Join(ix.gen, originalsDir))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), partitionExt) {
			names = append(names, filepath.Join(ix.gen, originalsDir, e.Name()))
		}
	}
	slices.Sort(names)
	return names, nil
}

// partitionOf is the partition a digest's lines go to: its label and the
// first character of its value ("sha1:ABC..." -> "sha1-A"). Base32 and hex
// digits sort in the order of the partitions' names, so the partitions
// read in name order are read in digest order.
func partitionOf(digest string) (string, error) {
	label, value, ok := strings.Cut(digest, ":")
	if !ok || value == "" || label == "" {
		return "", fmt.Errorf("digest %q has no label and value", digest)
	}
	c := value[0]
	if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
		return "", fmt.Errorf("digest %q starts with %q", digest, c)
	}
	return label + "-" + string(c), nil
}

// Files returns a committed crawl's files.
func (ix *Index) Files(crawl string) ([]FileInfo, error) {
	var cf CrawlFiles
	if err := readJSON(filepath.Join(ix.gen, crawlsDir, crawl+".json"), &cf); err != nil {
		return nil, err
	}
	return cf.Files, nil
}

// Prefixes maps each committed crawl's name to its location: for the
// source.Locator that reads originals named CRAWL/PATH.
func (ix *Index) Prefixes() map[string]string {
	m := map[string]string{}
	for _, c := range ix.Registry.Crawls {
		m[c.Name] = c.Location
	}
	return m
}

// CrawlOf is the crawl a file of the index's manifests belongs to: the
// first element of its name.
func CrawlOf(file string) string {
	name, _, _ := strings.Cut(file, "/")
	return name
}

// CheckName refuses a crawl name that cannot be the first element of file
// names (CRAWL/PATH) or a file name of its own.
func CheckName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\ \t\n%") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("crawl name %q: a crawl name is one path element, without blanks, %%, or a leading dot", name)
	}
	if manifest.EscapeFile(name) != name {
		return fmt.Errorf("crawl name %q: it must not need escaping in a manifest", name)
	}
	return nil
}

// lock takes the index's lock, held while a generation is made.
func lock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: locking the index: %w", dir, err)
	}
	return f, nil
}

// generationNumber reads "gen-000042".
func generationNumber(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, genPrefix))
	return n, err == nil && strings.HasPrefix(name, genPrefix)
}

// highestGeneration is the highest number of a generation directory in
// dir, current or not (0 if none).
func highestGeneration(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	high := 0
	for _, e := range entries {
		if n, ok := generationNumber(e.Name()); ok && n > high {
			high = n
		}
	}
	return high, nil
}

// cleanup removes what interrupted commits left (temporary generation
// directories) and the generations older than the kept ones. The lock
// must be held.
func cleanup(dir string, current int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		switch n, ok := generationNumber(name); {
		case strings.HasPrefix(name, atomicfile.TempPrefix):
			os.RemoveAll(filepath.Join(dir, name))
		case ok && n <= current-keptGenerations:
			os.RemoveAll(filepath.Join(dir, name))
		}
	}
}
