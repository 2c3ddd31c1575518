package undo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/workdir"
)

// TestUndoKeepsLeftoverAWriterWrote puts a file of a deduplicated
// collection in the state a job killed after exchanging a new version
// with it leaves, while a writer that had it open appended a record to it
// (now under the temporary name: the lease broken, the name not yet given
// back), the journal naming the replacement, and proves that the undo
// loses no byte the writer wrote: the log's recovery from the journal
// keeps such a temporary file beside the file (rewritelog's leftovers),
// which the undo must let it look at before it removes the temporary
// files a killed job left as partial new versions.
func TestUndoKeepsLeftoverAWriterWrote(t *testing.T) {
	dir, _ := jobtest.Generated(t, jobtest.AttackCfg)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.warc"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no .warc file: %v", err)
	}
	path, err := filepath.EvalSymlinks(names[0])
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	replacement := []byte("WARC/1.0 the new version\r\n")
	logName := filepath.Join(wd, workdir.LogFile)
	fi, err := os.Stat(logName)
	if err != nil {
		t.Fatal(err)
	}
	// The journal, as the killed job synced it before the exchange.
	in := rewritelog.Intent{Path: path, Fixity: rewritelog.Fixity{File: name, OldSize: int64(len(old)), OldSum: jobtest.FixitySum(old),
		NewSize: int64(len(replacement)), NewSum: jobtest.FixitySum(replacement)}}
	e := rewritelog.Entry{File: name, OldLength: int64(len(old)), NewLength: int64(len(replacement)), Kind: rewritelog.Revisit,
		PayloadDigest: "sha1:AAAA", RefersToURI: "http://example.com/", RefersTo: "2024-01-01T00:00:00Z"}
	journal := fmt.Appendf(nil, "# journal %d\n# pending %s %s\n", fi.Size(), strings.TrimPrefix(string(in.Fixity.AppendTo(nil)), "# file "), manifest.EscapeFile(path))
	journal = append(append(e.AppendTo(journal), '\n'), "# end\n"...)
	if err := os.WriteFile(logName+".pending", journal, 0o644); err != nil {
		t.Fatal(err)
	}
	// The exchange: the file under the temporary name, the new version
	// under its name; then the writer's record.
	tmp := filepath.Join(dir, atomicfile.TempPrefix+name+"-1234567")
	if err := os.Rename(path, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, replacement, 0o644); err != nil {
		t.Fatal(err)
	}
	written := []byte("WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: 21\r\n\r\nthe writer's record\r\n\r\n\r\n")
	w, err := os.OpenFile(tmp, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(written); err != nil {
		t.Fatal(err)
	}
	w.Close()
	u, uerr := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if uerr == nil && u.Exit == 0 {
		t.Errorf("undo exited 0 with a file a writer wrote to left beside %s", name)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := ""
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if bytes.Contains(b, written) && !strings.HasPrefix(e.Name(), atomicfile.TempPrefix) {
			found = e.Name()
		}
	}
	if found == "" {
		t.Fatalf("the writer's record, appended to %s under its temporary name, is lost by the undo (%v)", name, uerr)
	}
	t.Logf("the writer's record is in %s; the undo said: %v", found, uerr)
}

// TestUndoRemovesPackageLeftover proves that the undo removes the partial
// new versions a killed run or undo left of a WACZ package and of a
// member staged beside it (".tmp-NAME.wacz-DIGITS",
// ".tmp-.NAME.wacz#archive%2FFILE.warcdedup-member-DIGITS"), as it
// removes a WARC file's, where it looked for the members' names beside
// the package and never found one: a killed job undone to exit 0 left up
// to a package's or a member's size in the collection.
func TestUndoRemovesPackageLeftover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		leftover func(pkg, member string) string
	}{
		{"the package's new version", func(pkg, _ string) string { return filepath.Base(pkg) }},
		{"the staged member's new version", func(pkg, member string) string { return stage.StagedName(pkg, member) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := jobtest.GeneratedWACZ(t, false)
			wd := filepath.Join(t.TempDir(), "work")
			if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v", err)
			}
			// Undone first: the undo below restores no member, which
			// would remove its staged copy's leftovers as it went.
			if u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || u.Exit != 0 {
				t.Fatalf("undo: %v, %+v", err, u)
			}
			pkg := filepath.Join(dir, "crawl-0-0.wacz")
			p, err := wacz.Open(pkg)
			if err != nil {
				t.Fatal(err)
			}
			member := p.WARCs()[0].Name
			p.Close()
			leftover := filepath.Join(dir, atomicfile.TempPrefix+tc.leftover(pkg, member)+"-1234567")
			if err := os.WriteFile(leftover, []byte("cut short"), 0o644); err != nil {
				t.Fatal(err)
			}
			if u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || u.Exit != 0 {
				t.Fatalf("undo again: %v, %+v", err, u)
			}
			if _, err := os.Stat(leftover); err == nil {
				t.Errorf("the undo left %s in the collection", filepath.Base(leftover))
			}
		})
	}
}
