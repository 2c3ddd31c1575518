package replica

import (
	"os"
	"path/filepath"
	"testing"

	"warcdedup/workdir"
)

// TestJobVerified proves that commit --to takes only a job that finished
// and lost nothing: a complete job whose verification listed records lost
// (run's exit status 1, state.json complete all the same) used to be
// committed, its damaged files replacing the second copy's intact ones.
func TestJobVerified(t *testing.T) {
	const complete = `{"params": {"dry_run": false}, "complete": true}`
	for _, tc := range []struct {
		name, state, violations string
		ok                      bool
	}{
		{"complete, nothing lost", complete, "", true},
		{"complete, no violations file", complete, "-", true},
		{"complete, records lost", complete, "gen-00001.warc 1234 lost\n", false},
		{"interrupted", `{"params": {"dry_run": false}, "complete": false}`, "", false},
		{"a dry run", `{"params": {"dry_run": true}, "complete": true}`, "", false},
		{"no job", "-", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			if tc.state != "-" {
				if err := os.WriteFile(filepath.Join(wd, workdir.StateFile), []byte(tc.state), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.violations != "-" {
				if err := os.WriteFile(filepath.Join(wd, workdir.Violations), []byte(tc.violations), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := JobVerified(wd); (err == nil) != tc.ok {
				t.Fatalf("JobVerified: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
