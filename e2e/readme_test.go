package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"warcdedup/digest"
)

// readmeBlock returns the shell block of README.md between the markers
// <!-- name --> and <!-- /name -->, without its fences.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + name + " -->\n```sh\n(.*?)```\n<!-- /" + name + " -->").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no block marked <!-- %s -->", name)
	}
	return string(m[1])
}

// fileSums is the SHA-256 of every file under dir, by relative name.
func fileSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestReadmePipeline runs the README's pipeline as it stands on a
// generated collection: it must exit 0, number the copies as the generator
// expects, rewrite files, and prove nothing lost; then the README's undo
// block must give every file back byte for byte.
func TestReadmePipeline(t *testing.T) {
	dir, res := generate(t, digest.SHA1)
	work := filepath.Dir(dir)
	before := fileSums(t, dir)

	_, stderr, code := sh(t, work, "set -e\n"+readmeBlock(t, "readme-pipeline"))
	if code != 0 {
		t.Fatalf("the README's pipeline: exit %d\n%s", code, stderr)
	}
	numbered, err := os.ReadFile(filepath.Join(work, "numbered.manifest"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := canonical(t, string(numbered)), expected(t, res); got != want {
		t.Errorf("numbered.manifest differs from the generator's expectation\n%s", diff(got, want))
	}
	after := fileSums(t, dir)
	changed := 0
	for name, sum := range before {
		if after[name] != sum {
			changed++
		}
	}
	if changed == 0 {
		t.Fatalf("the pipeline rewrote no file of a collection with %d duplicates", res.Duplicates)
	}
	log, err := os.ReadFile(filepath.Join(work, "rewrite.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), " revisit "); n == 0 {
		t.Errorf("rewrite.log lists no revisit")
	}

	_, stderr, code = sh(t, work, "set -e\n"+readmeBlock(t, "readme-undo"))
	if code != 0 {
		t.Fatalf("the README's undo: exit %d\n%s", code, stderr)
	}
	restored := fileSums(t, dir)
	for name, sum := range before {
		if restored[name] != sum {
			t.Errorf("%s: not restored byte for byte by the README's undo", name)
		}
	}
	t.Logf("%d of %d files rewritten and restored", changed, len(before))
}
