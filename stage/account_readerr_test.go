package stage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/syssort"
	"warcdedup/report"
)

// TestAccountFactsUnreadableFails proves that facts that cannot be read to
// their end fail the account, naming them, instead of ending the join as
// if the facts had ended (every record after the failure counted under
// MIME type "-": a report that adds up but is wrong).
func TestAccountFactsUnreadableFails(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory opens but every read of it fails (EISDIR).
	facts := filepath.Join(dir, "facts")
	if err := os.Mkdir(facts, 0o755); err != nil {
		t.Fatal(err)
	}
	a := Account{ByFile: empty, FactsByFile: facts, Saved: empty, Numbered: empty,
		Deps: filepath.Join(dir, "deps.tsv"), Sorter: syssort.Sorter{TempDir: dir}, Report: &report.Report{}}
	_, err := a.Tally(context.Background())
	if err == nil || !strings.Contains(err.Error(), facts) {
		t.Fatalf("Tally: err %v, want an error naming %s", err, facts)
	}
}
