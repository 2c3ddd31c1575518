package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/replaytest"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/wacz"
)

// waczLog renames the files of a warcrefs log written over the WARC
// members taken out of packages (base names) to their member names
// ("pkg.wacz#archive/NAME"), as a rewrite of WACZ files logs them.
func waczLog(t *testing.T, log string, pkgOf map[string]string) string {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := rewritelog.NewReader(f, log)
	var b []byte
	run := -1
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Run != run {
			run = e.Run
			b = append(rewritelog.AppendRun(b, r.Runs[run]), '\n')
		}
		c := *e
		c.File = wacz.JoinName(pkgOf[e.File], "archive/"+e.File)
		b = append(c.AppendTo(b), '\n')
	}
	return string(b)
}

// packageIndex is every line of a package's index, sorted.
func packageIndex(t *testing.T, p *wacz.Package) []string {
	t.Helper()
	ixs, err := p.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ix := range ixs {
		rc := p.IndexReader(ix)
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		// ZipNum blocks end with a line feed as warcgen writes them.
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// warcioLinesOf is `warcio cdx-index` of the files, sorted.
func warcioLinesOf(t *testing.T, files []string) []string {
	t.Helper()
	cli := replaytest.WarcioCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append(append([]string{"cdx-index"}, files...), "--format", "cdxj")...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("warcio cdx-index: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	slices.Sort(lines)
	return lines
}

// openChecked opens a package and checks it record by record.
func openChecked(t *testing.T, name string) *wacz.Package {
	t.Helper()
	p, err := wacz.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r, err := wacz.Check(p, wacz.CheckOptions{Records: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Errorf("%s: %v", name, err)
	}
	return p
}

// rebuild writes pkg anew with its WARC members replaced by the files of
// coll and its index updated from log's entries (of the runs keep
// accepts), checks it, and renames it over pkg.
func rebuild(t *testing.T, pkg, coll, log string, keep func(*rewritelog.Entry) bool, meta *wacz.Metadata) *wacz.Result {
	t.Helper()
	src, err := wacz.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	moves, err := wacz.PackageMoves(rewritelog.NewReader(strings.NewReader(log), "rewrite.log"), filepath.Base(pkg), keep)
	if err != nil {
		t.Fatal(err)
	}
	repl := map[string]wacz.Replacement{}
	for _, m := range src.WARCs() {
		repl[m.Name] = wacz.Replacement{Path: filepath.Join(coll, filepath.Base(m.Name))}
	}
	f, err := os.Create(pkg + ".new")
	if err != nil {
		t.Fatal(err)
	}
	b := &wacz.Rebuild{Source: src, Replace: repl, Index: wacz.NewLogUpdate(moves), Metadata: meta, TempDir: filepath.Dir(pkg)}
	res, err := b.Write(f)
	f.Close()
	if err != nil {
		os.Remove(f.Name())
		if meta != nil {
			return nil
		}
		t.Fatal(err)
	}
	openChecked(t, f.Name())
	if err := os.Rename(f.Name(), pkg); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestWACZPipeline deduplicates the WARC members of generated WACZ
// packages (plain and ZipNum indexes, WARC and WARC.gz members) with the
// README's pipeline, rebuilds each package from the rewrite log, and
// undoes it: every package written checks clean (member hashes and sizes,
// digest file, ZipNum blocks, every index line against its record), its
// index equals warcio.js cdx-index of its new WARC members line for
// line, and after the undo it is the index the package had before.
func TestWACZPipeline(t *testing.T) {
	dir := t.TempDir()
	res, err := gen.Write(dir, gen.Config{Files: 6, Records: 600, DupRate: 0.4, Seed: 17, MeanPayload: 4000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC10}, NonCandidates: true, Sequential: true, Prefix: "bt"})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := waczgen.Write(dir, res, waczgen.Config{Packages: 2, Index: "mixed", LinesPerBlock: 50})
	if err != nil {
		t.Fatal(err)
	}
	// Take the WARC members out, as a rewrite reads them.
	work := filepath.Join(dir, "members")
	os.Mkdir(work, 0o755)
	pkgOf := map[string]string{}
	before := map[string][]string{}
	var metas []*wacz.Metadata
	for _, cp := range coll.Packages {
		p := openChecked(t, filepath.Join(dir, cp.Name))
		before[cp.Name] = packageIndex(t, p)
		metas = append(metas, &wacz.Metadata{Datapackage: p.DatapackageRaw, Digest: p.DigestRaw})
		for _, m := range p.WARCs() {
			sec, _ := p.Section(m)
			b, _ := io.ReadAll(sec)
			name := filepath.Base(m.Name)
			if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
			pkgOf[name] = cp.Name
		}
		// The index as warcgen wrote it is warcio.js's.
		if got, want := before[cp.Name], warcioLinesOf(t, memberFiles(work, cp.WARCs)); !slices.Equal(got, want) {
			t.Errorf("%s: the generated index is not warcio.js's", cp.Name)
		}
	}
	_, stderr, code := sh(t, dir, `
warcsum -r members > before.manifest
LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n before.manifest | warccollres -p --root members > numbered.manifest
awk '$8 > 1' numbered.manifest | LC_ALL=C sort -k1,1 -k2,2n |
  warcrefs --in-place --root members --originals numbered.manifest --log rewrite.log`)
	if code != 0 {
		t.Fatalf("pipeline exit %d:\n%s", code, stderr)
	}
	log := waczLog(t, filepath.Join(dir, "rewrite.log"), pkgOf)
	for _, cp := range coll.Packages {
		pkg := filepath.Join(dir, cp.Name)
		r := rebuild(t, pkg, work, log, nil, nil)
		p := openChecked(t, pkg)
		got, want := packageIndex(t, p), warcioLinesOf(t, memberFiles(work, cp.WARCs))
		if !slices.Equal(got, want) {
			t.Errorf("%s: after the rewrite, the index is not warcio.js's of the new members:\n%s", cp.Name, firstDiff(got, want))
		}
		revisits := 0
		for _, l := range got {
			if strings.Contains(l, `"mime":"warc/revisit"`) {
				revisits++
			}
		}
		if revisits == 0 || r.Changed == 0 {
			t.Errorf("%s: %d revisit lines, %d lines changed", cp.Name, revisits, r.Changed)
		}
		t.Logf("%s: %d index lines, %d changed, %d revisits", cp.Name, r.Lines, r.Changed, revisits)
	}

	// Undo, and the packages again from the undo's entries only.
	_, stderr, code = sh(t, dir, `
warcsum -r members | LC_ALL=C sort -k4,4 -k5,5 > captures.manifest
warcrefs --undo --log rewrite.log --captures captures.manifest --root members`)
	if code != 0 {
		t.Fatalf("undo exit %d:\n%s", code, stderr)
	}
	log = waczLog(t, filepath.Join(dir, "rewrite.log"), pkgOf)
	undoRun := func(e *rewritelog.Entry) bool { return e.Kind == rewritelog.Restored }
	for i, cp := range coll.Packages {
		pkg := filepath.Join(dir, cp.Name)
		// The metadata as it was goes back only where every member is
		// again what it was, bit for bit.
		r := rebuild(t, pkg, work, log, undoRun, metas[i])
		if r == nil {
			r = rebuild(t, pkg, work, log, undoRun, nil)
			t.Logf("%s: members restored, not bit for bit: datapackage.json rebuilt", cp.Name)
		} else {
			t.Logf("%s: members restored bit for bit: datapackage.json put back", cp.Name)
		}
		p := openChecked(t, pkg)
		if got := packageIndex(t, p); !slices.Equal(got, before[cp.Name]) {
			t.Errorf("%s: after the undo, the index is not the one before:\n%s", cp.Name, firstDiff(got, before[cp.Name]))
		}
	}
}

func memberFiles(dir string, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, filepath.Join(dir, n))
	}
	return out
}

func firstDiff(got, want []string) string {
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return "line " + strconv.Itoa(i+1) + ":\n  got:  " + g + "\n  want: " + w
		}
	}
	return ""
}
