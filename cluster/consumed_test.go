package cluster

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveConsumed proves which work copies a claimed task removes: the
// hash task its host's manifest on digest (cut into range parts), the
// account what it merged and what the steps before it consumed, keeping
// each host's listings, caches, logs and the merged outputs; and that
// --keep-work keeps them all.
func TestRemoveConsumed(t *testing.T) {
	hosts := []Host{{Name: "a", Root: "/a"}, {Name: "b", Root: "/b"}}
	kept := []string{
		"hosts/a/before.manifest", "hosts/a/after.manifest", "hosts/a/facts.manifest", "hosts/a/rewrite.log",
		"hosts/a/saved.tsv", "hosts/a/fixity.tsv", "hosts/a/files.tsv", "hosts/a/cache/x.lines",
		"hosts/b/before.manifest", "hosts/b/rewrite.log",
		"by-file.manifest", "numbered.manifest", "facts-by-file.manifest", "saved.tsv", "rewrite.log",
		"ranges/000/index-kept.manifest",
	}
	byDigest := []string{"hosts/a/by-digest.manifest"}
	consumed := []string{
		"hosts/a/range-000", "hosts/a/range-001", "hosts/b/range-000", "hosts/b/range-001",
		"hosts/b/by-digest.manifest", "hosts/a/by-file.manifest", "hosts/b/facts-by-file.manifest",
		"ranges/000/numbered.manifest", "ranges/001/numbered.manifest",
		"ranges/000/by-file-a", "ranges/001/by-file-b", "ranges/000/originals-a", "ranges/001/originals-b",
	}
	cases := []struct {
		name     string
		kind     string
		keepWork bool
		gone     []string
	}{
		{"hash", kindHash, false, byDigest},
		{"account", kindAccount, false, append(slices.Clone(byDigest), consumed...)},
		{"rewrite", kindRewrite, false, nil},
		{"account with --keep-work", kindAccount, true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			all := slices.Concat(kept, byDigest, consumed)
			for _, f := range all {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			spec := &Spec{Params: Params{Hosts: hosts, Ranges: 2}, Settings: Settings{KeepWork: c.keepWork}}
			k := &task{Task: &Task{WorkDir: dir, Step: c.kind, Log: io.Discard}, wd: workDir(dir), spec: spec,
				step: &Step{Kind: c.kind}, host: &spec.Hosts[0]}
			k.removeConsumed()
			for _, f := range all {
				_, err := os.Stat(filepath.Join(dir, f))
				if gone := slices.Contains(c.gone, f); gone != os.IsNotExist(err) {
					t.Errorf("%s: removed %v, want %v", f, os.IsNotExist(err), gone)
				}
			}
		})
	}
}
