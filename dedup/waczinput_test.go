package dedup

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/scripts/gen"
	"warcdedup/stage"
	"warcdedup/wacz"
)

// generatedMultiWACZ writes four generated WACZ packages of two crawls
// with 40% duplicates and the multi-WACZ JSON naming them
// (collection.json, hashes and sizes as Browsertrix exports them).
func generatedMultiWACZ(t *testing.T) (string, *gen.Result) {
	t.Helper()
	return jobtest.GeneratedMultiWACZ(t)
}

// withoutWorkDirs is a hashTree without the work directories beside the
// files named.
func withoutWorkDirs(tree map[string]string) map[string]string {
	out := map[string]string{}
	for n, s := range tree {
		if !strings.Contains(n, ".warcdedup/") {
			out[n] = s
		}
	}
	return out
}

// TestRunNamedWACZ runs the job on WACZ files named as such: one package
// alone, and a multi-WACZ JSON. It proves that the work directory is
// beside the file named (and found there by undo without --work-dir),
// that only the packages named change, each passing its check, that a
// listing of the directory around them never reads the work directory
// inside it, that the JSON's hashes and sizes are those of the packages
// as they are after the run, its other bytes kept, that a second run has
// nothing to do (and brings a JSON a stopped run left stale up to date,
// the job having rewritten those packages), and that undo gives back the packages and the JSON bit
// for bit.
func TestRunNamedWACZ(t *testing.T) {
	cases := []struct {
		name    string
		operand string // relative to the collection
		// changed: the packages the run may rewrite ("" for all).
		changed string
	}{
		{name: "one package alone", operand: "crawl-1-0.wacz", changed: "crawl-1-0.wacz"},
		{name: "multi-WACZ JSON", operand: "collection.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := generatedMultiWACZ(t)
			before := hashTree(t, dir)
			jsonBefore, err := os.ReadFile(filepath.Join(dir, "collection.json"))
			if err != nil {
				t.Fatal(err)
			}
			operand := filepath.Join(dir, c.operand)
			r, err := Run(context.Background(), Options{Collections: []string{operand}, Jobs: 2})
			if err != nil {
				t.Fatal(err)
			}
			if r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten == 0 {
				t.Fatalf("exit %d %v, %d revisits written: the test proves nothing", r.Report.Exit, r.Report.ExitReason, r.Report.Totals.RevisitsWritten)
			}
			if want := operand + ".warcdedup"; r.WorkDir != want {
				t.Errorf("work directory %s, want %s beside the file named", r.WorkDir, want)
			}
			after := withoutWorkDirs(hashTree(t, dir))
			for n, sum := range before {
				if c.changed != "" && n != c.changed && n != "collection.json" && after[n] != sum {
					t.Errorf("%s changed, but only %s was named", n, c.changed)
				}
			}
			if after[c.operand] == before[c.operand] && c.changed != "" {
				t.Errorf("%s unchanged", c.operand)
			}
			checkPackages(t, dir)
			if l := waczListing(t, dir); strings.Contains(string(l), ".warcdedup/") {
				t.Errorf("a listing of %s reads the work directory inside it", dir)
			}

			// The JSON names the packages as they are now.
			f, err := os.Open(filepath.Join(dir, "collection.json"))
			if err != nil {
				t.Fatal(err)
			}
			entries, err := wacz.ReadCollection(f, "collection.json")
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				sum, size, err := packageFixity(filepath.Join(dir, e.Path))
				if err != nil {
					t.Fatal(err)
				}
				stale := e.Hash != sum || e.Size != size
				switch {
				case c.changed == "" && stale:
					t.Errorf("collection.json gives %s %s %d bytes; it is %s %d bytes", e.Path, e.Hash, e.Size, sum, size)
				case c.changed != "" && after["collection.json"] != before["collection.json"]:
					t.Errorf("collection.json changed though it was not named")
				}
			}

			jsonAfter, _ := os.ReadFile(filepath.Join(dir, "collection.json"))
			if c.changed == "" {
				// A run stopped after its packages were renamed, before
				// the JSON was written: the JSON as it was.
				if err := os.WriteFile(filepath.Join(dir, "collection.json"), jsonBefore, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r2, err := Run(context.Background(), Options{Collections: []string{operand}, Jobs: 2})
			if err != nil || !r2.NothingToDo {
				t.Errorf("rerun: %v, nothing to do %v", err, r2 != nil && r2.NothingToDo)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "collection.json")); string(got) != string(jsonAfter) {
				t.Errorf("collection.json after the rerun is not as the run left it:\n%s", got)
			}

			u, err := Undo(context.Background(), UndoOptions{Paths: []string{operand}, Jobs: 2})
			if err != nil || u.Exit != 0 || u.Stats.Restored == 0 {
				t.Fatalf("undo %s: %v, %+v", operand, err, u)
			}
			sameTree(t, "after undo", withoutWorkDirs(hashTree(t, dir)), before)
			if got, _ := os.ReadFile(filepath.Join(dir, "collection.json")); string(got) != string(jsonBefore) {
				t.Errorf("collection.json after undo:\n%s\nbefore:\n%s", got, jsonBefore)
			}
		})
	}
}

// TestRunMultiWACZRefused gives run a multi-WACZ JSON that does not name
// its packages right and proves that each is a clear error naming the
// resource, and that nothing is changed.
func TestRunMultiWACZRefused(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, dir, doc string) string // the JSON's new text
		want string
	}{
		{name: "a package missing", want: "the package is missing", edit: func(t *testing.T, dir, doc string) string {
			return strings.Replace(doc, `"path": "crawl-0-1.wacz"`, `"path": "crawl-0-9.wacz"`, 1)
		}},
		{name: "a hash mismatch", want: "not the one the JSON names", edit: func(t *testing.T, dir, doc string) string {
			i := strings.Index(doc, `"hash": "`) + len(`"hash": "`)
			return doc[:i] + strings.Repeat("0", 64) + doc[i+64:]
		}},
		{name: "a path leaving the JSON's directory", want: "leaves the JSON's directory", edit: func(t *testing.T, dir, doc string) string {
			copyTestFile(t, filepath.Join(dir, "crawl-0-1.wacz"), filepath.Join(dir, "..", "outside.wacz"))
			return strings.Replace(doc, `"path": "crawl-0-1.wacz"`, `"path": "../outside.wacz"`, 1)
		}},
		{name: "a symbolic link leaving the JSON's directory", want: "through a symbolic link", edit: func(t *testing.T, dir, doc string) string {
			copyTestFile(t, filepath.Join(dir, "crawl-0-1.wacz"), filepath.Join(dir, "..", "outside.wacz"))
			if err := os.Symlink(filepath.Join(dir, "..", "outside.wacz"), filepath.Join(dir, "link.wacz")); err != nil {
				t.Fatal(err)
			}
			return strings.Replace(doc, `"path": "crawl-0-1.wacz"`, `"path": "link.wacz"`, 1)
		}},
		{name: "a URL", want: "not a local file", edit: func(t *testing.T, dir, doc string) string {
			return strings.Replace(doc, `"path": "crawl-0-1.wacz"`, `"path": "https://example.org/crawl-0-1.wacz"`, 1)
		}},
		{name: "not a WACZ file", want: "not a WACZ file", edit: func(t *testing.T, dir, doc string) string {
			return strings.Replace(doc, `"path": "crawl-0-1.wacz"`, `"path": "collection.json"`, 1)
		}},
		{name: "no resources", want: "no \"resources\"", edit: func(t *testing.T, dir, doc string) string {
			return `{"items": []}`
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := generatedMultiWACZ(t)
			name := filepath.Join(dir, "collection.json")
			doc, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			edited := c.edit(t, dir, string(doc))
			if edited == string(doc) {
				t.Fatal("the edit changed nothing: the test proves nothing")
			}
			if err := os.WriteFile(name, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			before := hashTree(t, filepath.Dir(dir))
			for _, dry := range []bool{true, false} {

				r, err := Run(context.Background(), Options{Collections: []string{name}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2, DryRun: dry})
				if err == nil {
					t.Fatalf("dry run %v: no error; exit %d", dry, r.Report.Exit)
				}
				if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "collection.json") {
					t.Errorf("dry run %v: error %q, want one naming collection.json and saying %q", dry, err, c.want)
				}
			}
			sameTree(t, "after the refused run", hashTree(t, filepath.Dir(dir)), before)
		})
	}
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	jobtest.CopyFile(t, from, to)
}

// TestRunNamedWACZLeavesOtherJobsStaged proves that a job on one package
// of a directory leaves alone what another job on another package of it
// has staged (a member being rewritten): it neither finishes nor removes
// it, as it would its own.
func TestRunNamedWACZLeavesOtherJobsStaged(t *testing.T) {
	dir, _ := generatedMultiWACZ(t)
	other := filepath.Join(dir, "crawl-0-0.wacz")
	p, err := wacz.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	member := p.WARCs()[0]
	b, err := io.ReadAll(p.Raw(member))
	p.Close()
	if err != nil {
		t.Fatal(err)
	}
	staged := filepath.Join(dir, stage.StagedName(other, member.Name))
	if err := os.WriteFile(staged, append(b, "another job's rewrite"...), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), Options{Collections: []string{filepath.Join(dir, "crawl-1-0.wacz")}, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r)
	}
	if got, err := os.ReadFile(staged); err != nil || !bytes.HasSuffix(got, []byte("another job's rewrite")) {
		t.Errorf("another job's staged member of %s: %v", other, err)
	}
}

// TestRunDirectoryRefusesOtherJobsStaged leaves a job on one package
// named alone unfinished (stopped between logging its rewritten members
// and renaming its package: the members' logged versions staged beside
// the package as it was) and proves that a job on the whole directory
// is then refused before anything changes, naming the staged member and
// the other job's work directory (it would remove them as stale); and
// that once the other job is finished by its own rerun, the directory
// job runs.
func TestRunDirectoryRefusesOtherJobsStaged(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	pkg := filepath.Join(dir, "crawl-0-0.wacz")
	original, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Run(context.Background(), Options{Collections: []string{pkg}, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run %s: %v", pkg, err)
	}
	if n := stopRebuild(t, pkg, original); n == 0 {
		t.Fatal("the job on crawl-0-0.wacz rewrote no member: the test proves nothing")
	}
	before := hashTree(t, dir)
	_, err = Run(context.Background(), Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2})
	if err == nil || !strings.Contains(err.Error(), "another, unfinished job's") || !strings.Contains(err.Error(), "crawl-0-0.wacz.warcdedup") {
		t.Fatalf("run on the directory: %v", err)
	}
	sameTree(t, "after the refused run", hashTree(t, dir), before)

	if r, err := Run(context.Background(), Options{Collections: []string{pkg}, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("rerun %s: %v", pkg, err)
	}
	if got, _ := os.ReadFile(pkg); len(got) == 0 || bytes.Equal(got, original) {
		t.Fatalf("the rerun did not finish %s", pkg)
	}
	if r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work3"), Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run on the directory once the other job is finished: %v", err)
	}
	checkPackages(t, dir)
}

// stopRebuild is jobtest.StopRebuild: what a stop between logging a
// package's members and renaming its new version leaves.
func stopRebuild(t *testing.T, pkg string, original []byte) int {
	t.Helper()
	return jobtest.StopRebuild(t, pkg, original)
}
