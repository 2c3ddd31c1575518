package dedup

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/jobtest"
	"warcdedup/internal/tmpfstest"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/report"
	"warcdedup/scripts/gen"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/warcindex"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// generatedWACZ writes a generated collection of four WACZ packages of two
// crawls (plain CDXJ and ZipNum indexes) with 40% duplicates, most of them
// across packages; with loose, the last package's WARC files are left as
// plain files beside the three others.
func generatedWACZ(t *testing.T, loose bool) (string, *gen.Result) {
	t.Helper()
	return jobtest.GeneratedWACZ(t, loose)
}

// waczListing is the manifest warcsum gives of the files and WACZ
// members under dir, read now.
func waczListing(t *testing.T, dir string) []byte {
	t.Helper()
	inputs, err := warcsum.Collector{Recursive: true, Packages: newWACZPackages(false).expand}.Collect([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := (&warcsum.Runner{Jobs: 2}).Run(inputs, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// checkPackages checks every package under dir record by record
// (wacz.Check with Records): hashes, sizes, digest file, index.
func checkPackages(t *testing.T, dir string) map[string]*wacz.Report {
	t.Helper()
	return jobtest.CheckPackages(t, dir)
}

// packageDeps are the packages each package's duplicates have their
// original (copy 1) in, as the numbered manifest says.
func packageDeps(t *testing.T, numbered string) map[[2]string]bool {
	t.Helper()
	deps := map[[2]string]bool{}
	kept := map[string]string{} // digest ext -> package of copy 1
	var dups [][3]string        // package, digest ext
	for _, l := range readLines(t, numbered) {
		ml, err := manifest.Parse([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		pkg, _, ok := wacz.SplitName(ml.File)
		if !ok || ml.Fields != 10 {
			continue
		}
		key := fmt.Sprint(ml.Digest, " ", ml.Class)
		switch {
		case ml.IsKept():
			kept[key] = pkg
		case ml.IsDuplicate():
			dups = append(dups, [3]string{pkg, key})
		}
	}
	for _, d := range dups {
		if orig, ok := kept[d[1]]; ok && orig != d[0] {
			deps[[2]string{d[0], orig}] = true
		}
	}
	return deps
}

// TestRunWACZ runs the job on a collection of WACZ packages and proves
// that every package written passes wacz.Check record by record (hashes,
// sizes, digest file, index equal to a fresh one of the new members),
// that the verification found every record (nothing lost), that each
// package lists in relation.requires every package its duplicates'
// originals are in, with the SHA-256 and size that package has now
// (unless a cycle allows none), that the rewrite log names members
// "PATH.wacz#archive/NAME", that nothing is left beside the packages, and
// that a second run has nothing to do.
func TestRunWACZ(t *testing.T) {
	for _, loose := range []bool{false, true} {
		name := map[bool]string{false: "packages", true: "packages and WARC files"}[loose]
		t.Run(name, func(t *testing.T) {
			dir, res := generatedWACZ(t, loose)
			before := hashTree(t, dir)
			wd := filepath.Join(t.TempDir(), "work")
			// The numbered manifest kept, for the requires check below.
			r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, KeepWork: true})
			if err != nil {
				t.Fatal(err)
			}
			tot := r.Report.Totals
			if r.Report.Exit != 0 || tot.Violations != 0 || tot.FilesRefused != 0 {
				t.Fatalf("exit %d %v, totals %+v", r.Report.Exit, r.Report.ExitReason, tot)
			}
			if tot.Duplicates != int64(res.Duplicates) || tot.RevisitsWritten < tot.Duplicates*8/10 || tot.BytesSaved <= 0 {
				t.Errorf("%d duplicates (the generator made %d), %d revisits written, %d bytes saved", tot.Duplicates, res.Duplicates, tot.RevisitsWritten, tot.BytesSaved)
			}
			after := hashTree(t, dir)
			if len(after) != len(before) {
				t.Errorf("files before %d, after %d: %v", len(before), len(after), slices.Sorted(maps.Keys(after)))
			}
			reps := checkPackages(t, dir)
			// Their indexes were made from the hash stage's lines, no member
			// read again for them (checkPackages compared them with a
			// fresh index of the members).
			if log, err := os.ReadFile(filepath.Join(wd, workdir.RunLog)); err != nil || strings.Contains(string(log), "its index made by reading its WARC members again") {
				t.Errorf("a package's index was made by reading its members again (%v)", err)
			}
			all, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
			sameAsFreshIndex(t, all...)
			if derived, _ := filepath.Glob(filepath.Join(wd, workdir.MemberLinesDir, "*.derived.cdxj")); len(derived) == 0 {
				t.Errorf("no rewritten member's lines were derived")
			}
			if listed := readKept(t, filepath.Join(wd, workdir.AfterFile)); string(listed) != string(waczListing(t, dir)) {
				t.Errorf("the manifest after differs from what reading the packages gives")
			}

			// relation.requires: every package the originals are in, as it
			// is now.
			deps := packageDeps(t, filepath.Join(wd, workdir.NumberedFile))
			if len(deps) == 0 {
				t.Fatal("no duplicate has its original in another package: the test proves nothing")
			}
			withHash := 0
			for d := range deps {
				p, err := wacz.Open(filepath.Join(dir, d[0]))
				if err != nil {
					t.Fatal(err)
				}
				reqs, err := p.Datapackage.Requires()
				p.Close()
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(reqs, func(r wacz.Requirement) bool { return r.Filename == d[1] })
				if i < 0 {
					t.Errorf("%s does not require %s, where originals of its revisits are: %+v", d[0], d[1], reqs)
					continue
				}
				req := reqs[i]
				if req.Hash == "" {
					continue // a cycle: named alone
				}
				withHash++
				if want := reps[d[1]]; want == nil || req.Hash != hex.EncodeToString(want.SHA256) || req.Size != want.Size {
					t.Errorf("%s requires %s with %s %d bytes, which is not the package as it is", d[0], d[1], req.Hash, req.Size)
				}
			}
			if withHash == 0 {
				t.Errorf("no requires entry has a hash: %d dependencies", len(deps))
			}

			// Revisits whose original is in another package name it, and
			// their package requires it.
			if n := containerRevisits(t, dir); n == 0 {
				t.Errorf("no revisit carries WARC-Refers-To-Container")
			}

			// The rewrite log names members.
			members := 0
			for _, l := range readLines(t, filepath.Join(wd, workdir.LogFile)) {
				if f, ok := strings.CutPrefix(l, "# file "); ok {
					if _, m, ok := wacz.SplitName(strings.Fields(f)[0]); ok && strings.HasPrefix(m, "archive/") {
						members++
					}
				}
			}
			if members == 0 {
				t.Errorf("the rewrite log names no WACZ member")
			}

			r2, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
			if err != nil || !r2.NothingToDo {
				t.Errorf("rerun: %v, nothing to do %v", err, r2 != nil && r2.NothingToDo)
			}
			sameTree(t, "after a rerun", hashTree(t, dir), after)
		})
	}
}

// sameAsFreshIndex checks that each index of the packages (paths) is,
// line for line, warcindex's index of the package's WARC members as they
// are, sorted: the index of a package written anew (issue 23).
func sameAsFreshIndex(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		p, err := wacz.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, m := range p.WARCs() {
			sec, err := p.Section(m)
			if err != nil {
				t.Fatal(err)
			}
			err = warcindex.Index(sec, wacz.IndexName(m.Name), func(e *warcindex.Entry) error {
				want = append(want, string(e.AppendCDXJ(nil)))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(want)
		ixs, err := p.Indexes()
		if err != nil || len(ixs) == 0 {
			t.Fatalf("%s: indexes %v, %v", name, ixs, err)
		}
		for _, ix := range ixs {
			rc := p.IndexReader(ix)
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				if !strings.HasPrefix(l, "!") {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s is not warcindex's index of its members (%d lines, want %d): %s", name, ix.CDX.Name, len(got), len(want), firstDiff(got, want))
			}
		}
		p.Close()
	}
}

// containerRevisits reads every record of every package under dir: each
// revisit's WARC-Refers-To-Container, if any, must name another package
// of dir that its package requires. It returns how many do.
func containerRevisits(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	requires := map[string][]wacz.Requirement{} // by package, read once
	eachRecord(t, dir, func(pkg string, rec *record.Record, _ *record.Reader) {
		c, ok := rec.Header.Lookup(wacz.RefersToContainer)
		if !ok {
			return
		}
		reqs, read := requires[pkg]
		if !read {
			p, err := wacz.Open(filepath.Join(dir, pkg))
			if err != nil {
				t.Fatal(err)
			}
			reqs, _ = p.Datapackage.Requires()
			p.Close()
			requires[pkg] = reqs
		}
		other, _ := wacz.ParseContainerURI(c)
		if rec.Type != "revisit" || other == pkg || !slices.ContainsFunc(reqs, func(r wacz.Requirement) bool { return r.Filename == other }) {
			t.Errorf("%s: a %s record refers to container %q, its package requires %+v", pkg, rec.Type, c, reqs)
		}
		if _, err := os.Stat(filepath.Join(dir, other)); err != nil {
			t.Errorf("%s: a revisit refers to container %q: %v", pkg, c, err)
		}
		n++
	})
	return n
}

// TestRunWACZRefused proves that a package that is not what its
// datapackage.json says, and a signed one, are named, never rewritten,
// and make the exit status 1, while the rest is deduplicated; and that
// with Unsign the signed one is rewritten, its signature removed and
// recorded.
func TestRunWACZRefused(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	// A corpus package signed by ArchiveWeb.page, and a generated one
	// signed in its digest file, whose duplicates have originals in the
	// other packages.
	signed := "../../shared/corpus/webrecorder+replayweb.page/mkdocs/site/docs/examples/example.wacz"
	data, err := os.ReadFile(signed)
	if err != nil {
		corpustest.Missing(t, "shared corpus absent: %v", err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "signed.wacz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	signPackage(t, filepath.Join(dir, "crawl-1-1.wacz"), filepath.Join(dir, "signed-copy.wacz"))
	// A byte of a WARC member changed: its hash no longer matches.
	damaged := filepath.Join(dir, "crawl-0-1.wacz")
	flipMemberByte(t, damaged, 0, 100)
	before := hashTree(t, dir)

	wd := filepath.Join(t.TempDir(), "work")
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	reasons := strings.Join(r.Report.ExitReason, "\n")
	if r.Report.Exit != 1 || !strings.Contains(reasons, "crawl-0-1.wacz: not read, never rewritten: the package is not what") ||
		!strings.Contains(reasons, "signed.wacz: not read, never rewritten: the package is signed") ||
		!strings.Contains(reasons, "signed-copy.wacz: not read, never rewritten: the package is signed") {
		t.Errorf("exit %d, reasons:\n%s", r.Report.Exit, reasons)
	}
	if g := r.Report.FilesNotDeduplicated; !slices.ContainsFunc(g, func(g report.FileGroup) bool { return g.Kind == "WACZ package" && g.Files == 3 }) {
		t.Errorf("the report's files not read: %+v, want 3 WACZ packages", g)
	}
	after := hashTree(t, dir)
	for _, n := range []string{"crawl-0-1.wacz", "signed.wacz", "signed-copy.wacz"} {
		if after[n] != before[n] {
			t.Errorf("%s was changed", n)
		}
	}
	if r.Report.Totals.RevisitsWritten == 0 || after["crawl-1-0.wacz"] == before["crawl-1-0.wacz"] {
		t.Errorf("the other packages were not deduplicated: %d revisits written", r.Report.Totals.RevisitsWritten)
	}

	// With Unsign, the signed packages are taken: the one whose records
	// became revisits has its signature removed and recorded.
	os.Remove(damaged)
	r, err = Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, Unsign: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Exit != 0 {
		t.Errorf("with Unsign: exit %d %v", r.Report.Exit, r.Report.ExitReason)
	}
	checkPackages(t, dir)
	// The members' index lines go with the job's other work files.
	if _, err := os.Stat(filepath.Join(wd, workdir.MemberLinesDir)); err == nil {
		t.Errorf("%s left after the job", workdir.MemberLinesDir)
	}
	rewritten := 0
	for _, n := range []string{"signed.wacz", "signed-copy.wacz"} {
		now, _ := os.ReadFile(filepath.Join(dir, n))
		if fixitySum(now) == before[n] {
			continue
		}
		rewritten++
		sameAsFreshIndex(t, filepath.Join(dir, n))
		sp, err := wacz.Open(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if sp.Signed() || !strings.Contains(string(sp.DatapackageRaw), wacz.RemovedSignaturesKey) {
			t.Errorf("%s was rewritten but its signature not removed and recorded:\n%s", n, sp.DatapackageRaw)
		}
		sp.Close()
	}
	if rewritten != 1 {
		t.Errorf("%d of the two signed packages rewritten with Unsign, want 1", rewritten)
	}
}

// signPackage writes the package at from to to, signed: its digest file
// with a signedData (not a valid signature: none is checked), every other
// member as stored.
func signPackage(t *testing.T, from, to string) {
	t.Helper()
	zr, err := zip.OpenReader(from)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	zw := zip.NewWriter(out)
	for _, f := range zr.File {
		if f.Name == wacz.DigestName {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			var d struct{ Hash string }
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			signed := strings.TrimSuffix(strings.TrimSpace(string(b)), "}") +
				`, "signedData": {"hash": "` + d.Hash + `", "signature": "c2ln", "publicKey": "a2V5", "created": "2024-01-02T03:04:05Z", "software": "test"}}`
			w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store, Modified: f.Modified})
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(signed))
			continue
		}
		raw, err := f.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		h := f.FileHeader
		w, err := zw.CreateRaw(&h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(from); err != nil {
		t.Fatal(err)
	}
}

// TestRunCorpusWACZ runs the job on a py-wacz package of the corpus (a
// ZipNum index, an uncompressed WARC member) beside a generated package:
// it is read, and every package passes its check after.
func TestRunCorpusWACZ(t *testing.T) {
	src := "../../shared/corpus/webrecorder+py-wacz/tests/fixtures/valid_example_1.wacz"
	data, err := os.ReadFile(src)
	if err != nil {
		corpustest.Missing(t, "shared corpus absent: %v", err)
		return
	}
	dir, _ := generatedWACZ(t, false)
	if err := os.WriteFile(filepath.Join(dir, "py-wacz.wacz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(t.TempDir(), "work")
	// --keep-work: the listing before is read below, which the job
	// complete removes.
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, KeepWork: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Exit != 0 {
		t.Fatalf("exit %d %v", r.Report.Exit, r.Report.ExitReason)
	}
	found := false
	for _, l := range readLines(t, filepath.Join(wd, workdir.BeforeFile)) {
		found = found || strings.HasPrefix(l, "py-wacz.wacz#archive/")
	}
	if !found {
		t.Errorf("the corpus package's records were not listed")
	}
	checkPackages(t, dir)
}

// TestRunWACZFinishesStoppedRebuild puts a package in the state a run
// stopped between logging its rewritten members and renaming its new
// version over it leaves (the package as before, the members' logged
// versions staged beside it) and proves that the next run writes the
// package anew around them first: the records are those the log says,
// every package passes its check, nothing is left beside them, and an
// undo then gives back the records as they were.
func TestRunWACZFinishesStoppedRebuild(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	pkg := filepath.Join(dir, "crawl-1-1.wacz")
	original, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	beforeListing := waczListing(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r.Report.ExitReason)
	}
	deduplicated := waczListing(t, dir)
	// The stop: each rewritten member staged, the package as it was.
	p, err := wacz.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	staged := 0
	old, _ := wacz.NewPackage(bytes.NewReader(original), int64(len(original)), "old")
	for _, m := range p.WARCs() {
		if om := old.Member(m.Name); om != nil && om.CRC32 == m.CRC32 {
			continue
		}
		sec, _ := p.Section(m)
		b, _ := io.ReadAll(sec)
		if err := os.WriteFile(filepath.Join(dir, stage.StagedName(pkg, m.Name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		staged++
	}
	p.Close()
	if staged == 0 {
		t.Fatal("crawl-1-1.wacz has no rewritten member: the test proves nothing")
	}
	if err := os.WriteFile(pkg, original, 0o644); err != nil {
		t.Fatal(err)
	}

	r2, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r2.Report.Exit != 0 {
		t.Fatalf("the run after the stop: %v %v", err, r2.Report.ExitReason)
	}
	checkPackages(t, dir)
	if got := waczListing(t, dir); string(got) != string(deduplicated) {
		t.Errorf("after the stopped run's package was finished, the records are not those the log says")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("left beside the packages: %v", left)
	}
	u, err := Undo(context.Background(), UndoOptions{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo: %v, %+v", err, u)
	}
	if got := waczListing(t, dir); string(got) != string(beforeListing) {
		t.Errorf("the records after undo are not those before the run")
	}
}

// TestDryRunWACZ proves that a dry run on packages (warcdedup assess)
// changes nothing in the collection, leaves nothing beside the packages,
// copies no member (its work directory, on a file system smaller than
// the members it reads, has room for the manifests alone), and says it
// would write and save exactly what the real run then writes and saves.
func TestDryRunWACZ(t *testing.T) {
	dir, _ := generatedWACZ(t, true)
	before := hashTree(t, dir)
	wd := filepath.Join(tmpfstest.Mount(t, strconv.Itoa(dryRunWorkSpace)), "work")
	dry, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, DryRun: true})
	if err != nil || dry.Report.Exit != 0 {
		t.Fatalf("dry run: %v %v", err, dry.Report.ExitReason)
	}
	sameTree(t, "after a dry run", hashTree(t, dir), before)
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("left beside the packages: %v", left)
	}
	sizes, sums := waczMemberSizes(t, dir), waczMemberSums(t, dir)
	real, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2})
	if err != nil || real.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, real.Report.ExitReason)
	}
	var rewritten int64 // what copies of the members with duplicates took
	for k, sum := range waczMemberSums(t, dir) {
		if sum != sums[k] {
			rewritten += sizes[k]
		}
	}
	if rewritten <= dryRunWorkSpace {
		t.Fatalf("the members rewritten take %d bytes, no more than the dry run's work directory (%d): copies of them would fit", rewritten, dryRunWorkSpace)
	}
	d, r := dry.Report.Totals, real.Report.Totals
	if d.RevisitsWritten != r.RevisitsWritten || d.BytesSaved != r.BytesSaved || d.FilesRewritten != r.FilesRewritten || r.RevisitsWritten == 0 {
		t.Errorf("dry run %+v, real run %+v", d, r)
	}
}

// dryRunWorkSpace is the size of TestDryRunWACZ's work directory: room
// for its manifests, less than the members it reads.
const dryRunWorkSpace = 640 << 10

// TestRunWACZChangedAfterHash proves that a package changed between the
// hash stage, which compared its members with its datapackage.json, and
// its rebuild is not rewritten on that stale verdict: every package
// replaced after the hash by a new version (here one that is itself what
// its datapackage.json says, with another description) is left as it
// then is, named, and the exit status is 1. (Trusting the verdict of
// another version, the packages with duplicates were rewritten.)
func TestRunWACZChangedAfterHash(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	names, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no packages: %v", err)
	}
	var changed map[string]string
	wd := filepath.Join(t.TempDir(), "work")
	opt := Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}
	opt.afterHash = func() {
		for _, n := range names {
			describePackage(t, n, "changed after the hash stage")
		}
		changed = hashTree(t, dir)
	}
	r, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if changed == nil {
		t.Fatal("the hook did not run: the test proves nothing")
	}
	reasons := strings.Join(r.Report.ExitReason, "\n")
	if r.Report.Exit != 1 || !strings.Contains(reasons, "changed since the hash stage") {
		t.Errorf("exit %d, reasons:\n%s", r.Report.Exit, reasons)
	}
	after := hashTree(t, dir)
	for _, n := range names {
		b := filepath.Base(n)
		if after[b] != changed[b] {
			t.Errorf("%s was rewritten from a version its hash stage did not read", b)
		}
	}
}

// describePackage writes the package at path anew with a description in
// its datapackage.json and the digest file of that, every other member
// copied as stored: another version, itself what its metadata says.
func describePackage(t *testing.T, path, description string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var dp []byte
	for _, f := range zr.File {
		if f.Name == wacz.DatapackageName {
			rc, _ := f.Open()
			dp, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	var meta map[string]any
	if err := json.Unmarshal(dp, &meta); err != nil {
		t.Fatal(err)
	}
	meta["description"] = description
	if dp, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(dp)
	tmp := path + ".new"
	out, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(out)
	for _, f := range zr.File {
		var data []byte
		switch f.Name {
		case wacz.DatapackageName:
			data = dp
		case wacz.DigestName:
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			var d map[string]any
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			d["hash"] = "sha256:" + hex.EncodeToString(sum[:])
			data, _ = json.Marshal(d)
		default:
			raw, err := f.OpenRaw()
			if err != nil {
				t.Fatal(err)
			}
			h := f.FileHeader
			w, err := zw.CreateRaw(&h)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, raw); err != nil {
				t.Fatal(err)
			}
			continue
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store, Modified: f.Modified})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestWACZMembersComparedWithoutSums proves that a member whose SHA-256
// the hash stage could not take from one read in order (a damaged gzip
// member it seeked back over: "") is read again for it, and its package
// found what its datapackage.json says, or not, as its bytes are.
func TestWACZMembersComparedWithoutSums(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	damaged := filepath.Join(dir, "crawl-1-0.wacz")
	flipMemberByte(t, damaged, 1, 300)

	w := newWACZPackages(false)
	w.begin()
	if _, err := (warcsum.Collector{Recursive: true, Packages: w.expand}).Collect([]string{dir}); err != nil {
		t.Fatal(err)
	}
	if len(w.pending) != 4 || len(w.refused) != 0 {
		t.Fatalf("%d packages pending, refused %v: want 4, none (the listing reads no WARC member)", len(w.pending), w.refused)
	}
	refused, err := w.compareMembers(map[memberAt]string{})
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "crawl-1-0.wacz") || !strings.Contains(refused[0], "hash mismatch") {
		t.Errorf("refused %v, want crawl-1-0.wacz alone, its hash mismatch named", refused)
	}
	for path, v := range w.checked {
		if !v.members || (v.err != nil) != (path == damaged) {
			t.Errorf("%s: verdict %+v", path, v)
		}
	}
}

// flipMemberByte inverts the byte at off in the data of the package's
// WARC member i, in place: the package stays a valid ZIP whose member no
// longer has the hash datapackage.json gives it.
func flipMemberByte(t *testing.T, pkg string, i int, off int64) {
	t.Helper()
	p, err := wacz.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	at := p.WARCs()[i].DataOffset + off
	p.Close()
	f, err := os.OpenFile(pkg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}
