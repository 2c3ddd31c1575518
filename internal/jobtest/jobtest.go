// Package jobtest holds what the tests of warcdedup run and warcdedup
// undo (packages dedup and undo) share to build collections and compare
// them: generated collections (WARC, WACZ, multi-WACZ, two crawls),
// copies of trees, and their sums.
package jobtest

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/fixity"
	"warcdedup/internal/gzfile"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/wacz"
)

// Generated writes a generated collection into a new directory.
func Generated(t testing.TB, cfg gen.Config) (string, *gen.Result) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "coll")
	res, err := gen.Write(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dir, res
}

// GenCfg is a generated collection of every WARC and ARC form, with
// chunked payloads and replay variants.
var GenCfg = gen.Config{Files: 5, Records: 400, DupRate: 0.4, Seed: 7, MeanPayload: 6 << 10, NonCandidates: true,
	Chunked: 0.1, ReplayVariants: 0.1, Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11, gen.ARCGz}}

// AttackCfg is a small generated collection: a few files, each rewritten.
var AttackCfg = gen.Config{Files: 4, Records: 400, DupRate: 0.4, Seed: 11, MeanPayload: 6 << 10, NonCandidates: true,
	Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11}}

// FixitySum is the rewrite log's fixity sum of data, as HashTree gives it.
func FixitySum(data []byte) string {
	h := fixity.Default.New()
	h.Write(data)
	return fixity.Default.Format(h.Sum(nil))
}

// HashTree returns the fixity sum (the log's algorithm) of every file
// under dir by relative path.
func HashTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// The log's own fixity sum, so that fixity.tsv's lines can be
		// compared with it as they are.
		rel, _ := filepath.Rel(dir, p)
		m[rel] = FixitySum(data)
		return nil
	})
	return m
}

// HashUncompressed returns the SHA-256 of every file under dir by
// relative path, of its bytes decompressed if it is gzip.
func HashUncompressed(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var r io.Reader = f
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		}
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	return m
}

// ReadKept reads a work file kept compressed, in either form (gzip or
// plain).
func ReadKept(t testing.TB, name string) []byte {
	t.Helper()
	r, err := gzfile.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ReadLines reads the lines of a file, gzip-compressed (as the run keeps
// its manifests) or plain.
func ReadLines(t testing.TB, name string) []string {
	t.Helper()
	data := ReadKept(t, name)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// CopyTree copies the tree src to dst (cp -a: modes, times and links kept).
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	out, err := exec.Command("cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// CopyFile copies the file from to to.
func CopyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// SameTree fails the test for each file of want that got does not have
// with its sum, and each file got has that want has not.
func SameTree(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	for name, sum := range want {
		if got[name] != sum {
			t.Errorf("%s: %s differs", what, name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: unexpected file %s", what, name)
		}
	}
}

// CheckPackages checks every package under dir record by record
// (wacz.Check with Records): hashes, sizes, digest file, index.
func CheckPackages(t testing.TB, dir string) map[string]*wacz.Report {
	t.Helper()
	reps := map[string]*wacz.Report{}
	names, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	for _, n := range names {
		p, err := wacz.Open(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		rep, err := wacz.Check(p, wacz.CheckOptions{Records: true, TempDir: t.TempDir(), PackageSHA256: true})
		if err == nil {
			err = rep.Err()
		}
		if err != nil {
			t.Errorf("%s fails its check: %v", n, err)
		}
		reps[filepath.Base(n)] = rep
		p.Close()
	}
	return reps
}

// GeneratedMultiWACZ writes four generated WACZ packages of two crawls
// with 40% duplicates and the multi-WACZ JSON naming them
// (collection.json, hashes and sizes as Browsertrix exports them).
func GeneratedMultiWACZ(t testing.TB) (string, *gen.Result) {
	t.Helper()
	cfg := gen.Config{Files: 8, Records: 320, DupRate: 0.4, Seed: 11, MeanPayload: 4 << 10, NonCandidates: true,
		Chunked: 0.1, Sequential: true, Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC10}}
	dir, res := Generated(t, cfg)
	if _, err := waczgen.Write(dir, res, waczgen.Config{Packages: 4, Crawls: 2, Index: "mixed", CollectionJSON: "collection.json"}); err != nil {
		t.Fatal(err)
	}
	return dir, res
}

// WACZCrawls splits GeneratedMultiWACZ's packages into its two crawls,
// crawl-0 (earlier) and crawl-1, as the operands of two runs: each
// crawl's own directory (form "directories"), or each crawl's multi-WACZ
// JSON beside the other's in one directory ("multi-WACZ JSON"). It
// returns the directory every package is in at the end (where the
// packages of both are), each package's directory by name, and the
// operands.
func WACZCrawls(t testing.TB, form string) (all string, byDir map[string]string, ops [2]string) {
	t.Helper()
	dir, _ := GeneratedMultiWACZ(t)
	f, err := os.Open(filepath.Join(dir, "collection.json"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := wacz.ReadCollection(f, "collection.json")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "collection.json"))
	byDir = map[string]string{}
	for i, crawl := range []string{"crawl-0", "crawl-1"} {
		var mine []wacz.CollectionEntry
		for _, e := range entries {
			if e.CrawlID == crawl {
				mine = append(mine, e)
			}
		}
		switch form {
		case "directories":
			sub := filepath.Join(dir, crawl)
			os.Mkdir(sub, 0o755)
			for _, e := range mine {
				if err := os.Rename(filepath.Join(dir, e.Path), filepath.Join(sub, e.Path)); err != nil {
					t.Fatal(err)
				}
				byDir[e.Path] = sub
			}
			ops[i] = sub
		case "multi-WACZ JSON":
			name := filepath.Join(dir, crawl+".json")
			out, err := os.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := wacz.WriteCollection(out, mine); err != nil {
				t.Fatal(err)
			}
			out.Close()
			for _, e := range mine {
				byDir[e.Path] = dir
			}
			ops[i] = name
		}
	}
	return dir, byDir, ops
}
