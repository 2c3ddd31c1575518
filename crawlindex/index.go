package crawlindex

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"warcdedup/atomicfile"
	"warcdedup/internal/fspath"
	"warcdedup/manifest"
)

// The names in an index directory.
const (
	currentFile  = "CURRENT"
	lockFile     = "lock"
	registryFile = "registry.json"
	// contentsFile lists every other file of a generation with its size
	// and SHA-256: a file missing, cut short or changed is found.
	contentsFile = "CONTENTS"
	// committedFile marks a generation that CURRENT named: written once
	// CURRENT moved to it, so that a CURRENT rolled back to an older
	// generation is told from a commit killed before CURRENT moved.
	committedFile = "COMMITTED"
	crawlsDir     = "crawls"
	originalsDir  = "originals"
	genPrefix     = "gen-"
	partitionExt  = ".manifest"
)

// Index is one generation of an index, as committed: what a run reads.
// Commit and Remove make new generations; an Index stays the generation
// it was opened at.
type Index struct {
	Dir      string
	Registry *Registry
	gen      string // its directory
	// contents are the generation's files (paths relative to it) as its
	// CONTENTS lists them; nil for a generation written before they were
	// listed.
	contents contents
}

// content is a file of a generation as committed.
type content struct {
	size int64
	sum  string // SHA-256, hex
}

// ErrNoIndex is an index directory without a committed generation.
var ErrNoIndex = errors.New("no index here yet")

// DamageError is an index that does not verify: each thing found wrong.
// Every command refuses such an index rather than taking it for an empty
// one or reading part of it.
type DamageError struct {
	Dir      string
	Problems []string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("the index %s does not verify: %s", e.Dir, strings.Join(e.Problems, "; "))
}

// Open opens the committed generation of the index in dir, once it has
// checked what can be checked without reading the partitions: CURRENT
// names a generation that is there and was not rolled back, the
// generation's files are all there with their sizes, its registry is
// whole and well formed, and each committed crawl has its list of files.
// A directory that holds no index yet gives an empty Index of that
// directory and ErrNoIndex wrapped; the first commit makes it. An index
// that does not verify gives a *DamageError.
func Open(dir string) (*Index, error) {
	abs, err := fspath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		cur, _ := os.ReadFile(filepath.Join(abs, currentFile))
		ix, err := open(abs, dir)
		var damage *DamageError
		if !errors.As(err, &damage) || attempt == 2 {
			return ix, err
		}
		// A commit may have moved CURRENT while this read the index:
		// what looked wrong is then read again.
		if now, _ := os.ReadFile(filepath.Join(abs, currentFile)); bytes.Equal(now, cur) {
			return ix, err
		}
	}
}

func open(abs, dir string) (*Index, error) {
	gens, err := generations(abs)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(abs, currentFile))
	if errors.Is(err, fs.ErrNotExist) {
		// No generation was ever made current, unless one says it was:
		// those that do not are what commits killed before CURRENT
		// moved left.
		for _, g := range gens {
			if wasCurrent(filepath.Join(abs, g.name)) {
				return nil, &DamageError{Dir: dir, Problems: []string{fmt.Sprintf("CURRENT is missing, yet generation %s was committed (write CURRENT naming the generation to use: the latest that verifies)", g.name)}}
			}
		}
		recs, _, err := readCommitRecords(abs)
		if err != nil {
			return nil, err
		}
		if len(recs) > 0 {
			r := slices.MaxFunc(recs, func(a, b commitRecord) int { return a.Generation - b.Generation })
			return nil, &DamageError{Dir: dir, Problems: []string{fmt.Sprintf("CURRENT is missing, yet crawl %s was %s in generation %d (%s records %d crawls): restore the index's generations and CURRENT from a backup (an index meant to start anew is a new directory)",
				r.Crawl, r.Op, r.Generation, filepath.Join(abs, commitsDir), len(recs))}}
		}
		return &Index{Dir: abs, Registry: &Registry{Version: registryVersion}}, fmt.Errorf("%s: %w", dir, ErrNoIndex)
	}
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(string(data))
	n, ok := generationNumber(name)
	if !ok {
		return nil, &DamageError{Dir: dir, Problems: []string{fmt.Sprintf("CURRENT names %q, not a generation", name)}}
	}
	ix := &Index{Dir: abs, gen: filepath.Join(abs, name), Registry: &Registry{}}
	if fi, err := os.Stat(ix.gen); err != nil || !fi.IsDir() {
		return nil, &DamageError{Dir: dir, Problems: []string{fmt.Sprintf("CURRENT names %s, which is not there", name)}}
	}
	for _, g := range gens {
		if g.n > n && marked(filepath.Join(abs, g.name)) {
			return nil, &DamageError{Dir: dir, Problems: []string{fmt.Sprintf("CURRENT names %s, but %s was committed after it: CURRENT was rolled back (write CURRENT naming the latest generation)", name, g.name)}}
		}
	}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if ix.contents, err = readContents(ix.gen); err != nil {
		problem("%v", err)
	}
	reg, err := os.ReadFile(filepath.Join(ix.gen, registryFile))
	switch {
	case err != nil:
		problem("%s: %v", name, err)
	case ix.contents != nil:
		if why := ix.contents.check(registryFile, int64(len(reg)), sha256Hex(reg)); why != "" {
			problem("%s/%s: %s", name, registryFile, why)
		}
	}
	if len(problems) == 0 {
		if err := unmarshalRegistry(reg, ix.Registry); err != nil {
			problem("%s/%s: %v", name, registryFile, err)
		}
	}
	if len(problems) > 0 {
		return nil, &DamageError{Dir: dir, Problems: problems}
	}
	if v := ix.Registry.Version; v != registryVersion && v != registryVersionPartitions {
		return nil, fmt.Errorf("index %s: layout version %d, this warcdedup reads %d and %d", dir, v, registryVersionPartitions, registryVersion)
	}
	if g := ix.Registry.Generation; g != n {
		problem("CURRENT names %s, its registry says generation %d", name, g)
	}
	problems = append(problems, ix.Registry.check()...)
	if len(problems) == 0 {
		problems = ix.checkFiles()
	}
	if len(problems) == 0 {
		// Whole, and maybe only older: what the index recorded of its
		// commits tells (see commitsDir).
		if problems, err = ix.checkCommitRecords(); err != nil {
			return nil, err
		}
	}
	if len(problems) > 0 {
		return nil, &DamageError{Dir: dir, Problems: problems}
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

// generation is a generation directory: its name and number.
type generation struct {
	name string
	n    int
}

// generations lists the generation directories in dir, current or not.
func generations(dir string) ([]generation, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []generation
	for _, e := range entries {
		if n, ok := generationNumber(e.Name()); ok && e.IsDir() {
			out = append(out, generation{e.Name(), n})
		}
	}
	return out, nil
}

// marked reports whether a generation directory has its COMMITTED mark:
// CURRENT named it.
func marked(gen string) bool {
	_, err := os.Stat(filepath.Join(gen, committedFile))
	return err == nil
}

// wasCurrent reports whether a generation was ever CURRENT, as far as can
// be told: it has its mark, or it is of a warcdedup that wrote neither
// marks nor CONTENTS (its generations were all made current but the last
// of a killed commit, which cannot be told apart).
func wasCurrent(gen string) bool {
	if marked(gen) {
		return true
	}
	if _, err := os.Stat(filepath.Join(gen, contentsFile)); err == nil {
		return false
	}
	var r struct {
		Version int `json:"version"`
	}
	return readJSON(filepath.Join(gen, registryFile), &r) == nil && r.Version > 0
}

// mark writes a generation's COMMITTED mark, if it has none.
func mark(gen string) error {
	if marked(gen) {
		return nil
	}
	if err := writeSynced(filepath.Join(gen, committedFile), []byte(filepath.Base(gen)+"\n")); err != nil {
		return err
	}
	return atomicfile.SyncDir(gen)
}

// checkFiles finds what is wrong with the generation's files without
// reading them: each file CONTENTS lists is there with its size, every
// partition is listed, every committed crawl has its list of files.
func (ix *Index) checkFiles() []string {
	var problems []string
	base := filepath.Base(ix.gen)
	for _, rel := range slices.Sorted(maps.Keys(ix.contents)) {
		fi, err := os.Stat(filepath.Join(ix.gen, filepath.FromSlash(rel)))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s/%s is missing", base, rel))
		case fi.Size() != ix.contents[rel].size:
			problems = append(problems, fmt.Sprintf("%s/%s: %d bytes, %d when committed", base, rel, fi.Size(), ix.contents[rel].size))
		}
	}
	if ix.contents != nil {
		entries, err := os.ReadDir(filepath.Join(ix.gen, originalsDir))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s/%s: %v", base, originalsDir, err))
		}
		for _, e := range entries {
			if _, ok := ix.contents[originalsDir+"/"+e.Name()]; !ok && strings.HasSuffix(e.Name(), partitionExt) {
				problems = append(problems, fmt.Sprintf("%s/%s/%s is no run of the generation (CONTENTS does not list it)", base, originalsDir, e.Name()))
			}
		}
		for rel := range ix.contents {
			if dir, name, _ := strings.Cut(rel, "/"); dir == originalsDir {
				if _, gen, _ := parseRunName(name); gen > ix.Registry.Generation {
					problems = append(problems, fmt.Sprintf("%s/%s: a run of generation %d in generation %d", base, rel, gen, ix.Registry.Generation))
				}
			}
		}
	}
	for _, c := range ix.Registry.Crawls {
		rel := crawlsDir + "/" + c.Name + ".json"
		if ix.contents != nil {
			if _, ok := ix.contents[rel]; !ok {
				problems = append(problems, fmt.Sprintf("crawl %s: CONTENTS lists no %s", c.Name, rel))
			}
			continue
		}
		if _, err := os.Stat(filepath.Join(ix.gen, crawlsDir, c.Name+".json")); err != nil {
			problems = append(problems, fmt.Sprintf("crawl %s: its list of files: %v", c.Name, err))
		}
	}
	return problems
}

// contents are a generation's files as its CONTENTS lists them, by path
// relative to the generation (slash-separated).
type contents map[string]content

// readContents reads a generation's CONTENTS: lines of SHA-256, size and
// path. A generation written before they were listed has none (nil).
func readContents(gen string) (contents, error) {
	data, err := os.ReadFile(filepath.Join(gen, contentsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m := contents{}
	for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.Fields(l)
		size, err := strconv.ParseInt(safeField(f, 1), 10, 64)
		if len(f) != 3 || len(f[0]) != 64 || err != nil || size < 0 || !validContentPath(f[2]) {
			return nil, fmt.Errorf("%s/%s: line %d: %q is no SHA-256, size and file of the generation", filepath.Base(gen), contentsFile, i+1, l)
		}
		m[f[2]] = content{size: size, sum: f[0]}
	}
	return m, nil
}

func safeField(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// validContentPath reports whether CONTENTS may name a path: the registry,
// a partition or a crawl's list, nothing that leaves the generation.
func validContentPath(p string) bool {
	dir, name, ok := strings.Cut(p, "/")
	switch {
	case !ok:
		return p == registryFile
	case dir == originalsDir:
		_, _, ok := parseRunName(name)
		return ok
	case dir == crawlsDir:
		return strings.HasSuffix(name, ".json") && checkStoredName(strings.TrimSuffix(name, ".json")) == nil
	}
	return false
}

// check says what is wrong with a file of the generation as it is, ""
// if nothing (or if CONTENTS does not list it).
func (m contents) check(rel string, size int64, sum string) string {
	want, ok := m[rel]
	switch {
	case !ok:
		return "not listed in CONTENTS"
	case size != want.size:
		return fmt.Sprintf("%d bytes, %d when committed", size, want.size)
	case sum != want.sum:
		return fmt.Sprintf("SHA-256 %s, %s when committed", sum, want.sum)
	}
	return ""
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Exists reports whether the index has a committed generation.
func (ix *Index) Exists() bool { return ix.gen != "" }

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
	data, err := ix.readList(crawl)
	if err != nil {
		return nil, err
	}
	cf, err := unmarshalCrawlFiles(data)
	if err != nil {
		return nil, fmt.Errorf("crawl %s: its list of files: %w", crawl, err)
	}
	if cf.Crawl != crawl {
		return nil, fmt.Errorf("crawl %s: its list of files is crawl %q's", crawl, cf.Crawl)
	}
	return cf.Files, nil
}

// readList reads a committed crawl's list of files, checked against
// CONTENTS.
func (ix *Index) readList(crawl string) ([]byte, error) {
	if err := checkStoredName(crawl); err != nil {
		return nil, err
	}
	if ix.Registry.Crawl(crawl) == nil {
		return nil, fmt.Errorf("crawl %s is not committed to the index %s", crawl, ix.Dir)
	}
	rel := crawlsDir + "/" + crawl + ".json"
	data, err := os.ReadFile(filepath.Join(ix.gen, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("crawl %s: its list of files: %w", crawl, err)
	}
	if ix.contents != nil {
		if why := ix.contents.check(rel, int64(len(data)), sha256Hex(data)); why != "" {
			return nil, &DamageError{Dir: ix.Dir, Problems: []string{fmt.Sprintf("%s/%s: %s", filepath.Base(ix.gen), rel, why)}}
		}
	}
	return data, nil
}

// listSum is the SHA-256 of a committed crawl's list of files: the same
// in two generations when the crawl's files are.
func (ix *Index) listSum(crawl string) (string, error) {
	if c, ok := ix.contents[crawlsDir+"/"+crawl+".json"]; ok {
		return c.sum, nil
	}
	data, err := ix.readList(crawl)
	if err != nil {
		return "", err
	}
	return sha256Hex(data), nil
}

// Generation is the number of the committed generation (0 for none).
func (ix *Index) Generation() int { return ix.Registry.Generation }

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

// MaxNameLength is the longest crawl name, in bytes: with what the index
// adds to it (crawls/NAME.json, runs/NAME.lock, an import's temporary
// files), a file name of 255 bytes at most.
const MaxNameLength = 200

// CheckName refuses a crawl name that cannot be the first element of file
// names (CRAWL/PATH) or a file name of its own.
func CheckName(name string) error {
	if err := checkStoredName(name); err != nil {
		return err
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("crawl name %.40q... (%d bytes): a crawl name has at most %d bytes", name, len(name), MaxNameLength)
	}
	return nil
}

// checkStoredName refuses a name that cannot be a committed crawl's,
// whatever its length: CheckName before the length limit.
func checkStoredName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\ \t\n%") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("crawl name %q: a crawl name is one path element, without blanks, %%, or a leading dot", name)
	}
	if manifest.EscapeFile(name) != name || !utf8.ValidString(name) {
		return fmt.Errorf("crawl name %q: it must be UTF-8 and not need escaping in a manifest", name)
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

// generationNumber reads "gen-000042", as a commit names it.
func generationNumber(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, genPrefix))
	return n, err == nil && n > 0 && name == fmt.Sprintf("%s%06d", genPrefix, n)
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
// directories, a temporary CURRENT) and the generations older than oldest, the generation that
// was current when the lock was taken: a run that opened it before may
// still read it. The lock must be held.
func cleanup(dir string, oldest int) {
	// CURRENT is written under the lock only: a temporary file of it is
	// one a killed commit left between writing and renaming it.
	atomicfile.RemoveLeftovers(filepath.Join(dir, currentFile))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	removeUnlockedTempDirs(dir, entries)
	for _, e := range entries {
		name := e.Name()
		switch n, ok := generationNumber(name); {
		case strings.HasPrefix(name, atomicfile.TempPrefix+genPrefix):
			// Only generations here: an import's, a removal's or a
			// verify's temporary directory may be in use by another
			// process (removeUnlockedTempDirs removes those left).
			os.RemoveAll(filepath.Join(dir, name))
		case ok && n < oldest:
			os.RemoveAll(filepath.Join(dir, name))
		}
	}
}
