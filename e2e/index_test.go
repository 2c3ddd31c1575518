package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/scripts/gen"
)

// TestIndexCommandsExitStatus runs warcdedup index and run --index as
// users do and checks what they say and their exit status (issue 20,
// items 8 and 12): a second remove of a crawl says it was removed already
// and exits 0; import stops at a damaged CDX line (exit 2, nothing
// committed) or, with --skip-damaged, imports without it and exits 1;
// compact, with nothing due or --full, keeps an index that verifies; with
// CURRENT missing, verify names the problem (exit 1), every other command
// refuses the index (exit 2), and run --index rewrites nothing.
func TestIndexCommandsExitStatus(t *testing.T) {
	work := t.TempDir()
	for i, name := range []string{"c0", "c1"} {
		if _, err := gen.Write(filepath.Join(work, name), gen.Config{Files: 2, Records: 60, DupRate: 0.4, Seed: int64(20 + i), MeanPayload: 3000}); err != nil {
			t.Fatal(err)
		}
	}
	files, err := os.ReadDir(filepath.Join(work, "c1"))
	if err != nil || len(files) == 0 {
		t.Fatal(err)
	}
	cdx := " CDX N b a m s k r M S V g\n" +
		"com,example)/ 20240101000000 http://example.com/ text/html 200 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA - - 100 0 " + files[0].Name() + "\n" +
		"com,example)/b 2024\n"
	if err := os.WriteFile(filepath.Join(work, "damaged.cdx"), []byte(cdx), 0o644); err != nil {
		t.Fatal(err)
	}
	before := hashFiles(t, filepath.Join(work, "c1"))
	for _, step := range []struct {
		script string
		code   int
		says   string // in stderr
	}{
		{"warcdedup run -q --index idx c0", 0, ""},
		{"warcdedup index remove --index idx c0", 0, "removed from the index"},
		{"warcdedup index remove --index idx c0", 0, "removed from the index already"},
		{"warcdedup index remove --index idx never", 2, "not committed"},
		{"warcdedup index import --index idx --crawl imp --location c1 damaged.cdx", 2, "damaged.cdx: line 3"},
		{"warcdedup index deps --index idx imp", 2, "not committed"},
		{"warcdedup index import --index idx --crawl imp --location c1 --skip-damaged damaged.cdx", 1, "1 damaged lines"},
		{"warcdedup index verify --index idx", 0, "0 problems"},
		{"warcdedup index compact --index idx", 0, "0 partitions merged"},
		{"warcdedup index compact --full --index idx && warcdedup index verify --index idx", 0, "runs): 0 problems"},
		{"rm idx/CURRENT && warcdedup index verify --index idx", 1, "CURRENT is missing"},
		{"warcdedup index stats --index idx", 2, "does not verify"},
		{"warcdedup index remove --index idx imp", 2, "does not verify"},
		{"warcdedup index compact --index idx", 2, "does not verify"},
		{"warcdedup run -q --index idx c1", 2, "does not verify"},
	} {
		out, stderr, code := sh(t, work, step.script)
		if code != step.code || !strings.Contains(out+stderr, step.says) {
			t.Errorf("%s: exit %d, want %d saying %q:\n%s", step.script, code, step.code, step.says, stderr)
		}
	}
	after := hashFiles(t, filepath.Join(work, "c1"))
	for name, sum := range before {
		if after[name] != sum {
			t.Errorf("c1/%s changed by a refused run", name)
		}
	}
}

// hashFiles returns each file's bytes under dir by name (small test
// collections).
func hashFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(data)
	}
	return m
}
