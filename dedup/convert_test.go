package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/archname"
	"warcdedup/manifest"
	"warcdedup/migrate"
	"warcdedup/policy"
	"warcdedup/report"
	"warcdedup/scripts/gen"
	"warcdedup/verify"
	"warcdedup/workdir"
)

// arcCfg is a mixed collection, mostly ARC: v1 and v2, plain and gzip,
// with the quirks real ARC files have, beside WARC files.
var arcCfg = gen.Config{Files: 6, Records: 300, DupRate: 0.4, Seed: 24, MeanPayload: 4 << 10, NonCandidates: true, ARCQuirks: true,
	Formats: []gen.Format{gen.ARCGz, gen.ARC, gen.WARC10Gz, gen.ARC2Gz, gen.ARC2, gen.WARC11}}

// arcNames are the ARC files of a collection, relative.
func arcNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	// Read while a run may be removing files: names only.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && archname.IsARC(d.Name()) {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	slices.Sort(names)
	return names
}

// revisitsByFile counts the revisit lines of a listing by file.
func revisitsByFile(t *testing.T, listing []byte) map[string]int {
	t.Helper()
	n := map[string]int{}
	r := manifest.NewReader(bytes.NewReader(listing), "listing")
	for {
		l, err := r.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.IsRevisit() {
			n[l.File]++
		}
	}
}

// lostRecords compares two listings as warcsumcmp does and returns its
// violations.
func lostRecords(t *testing.T, before, after []byte) []string {
	t.Helper()
	var v []string
	st, err := verify.Rewrite(manifest.NewReader(bytes.NewReader(before), "before"), manifest.NewReader(bytes.NewReader(after), "after"),
		func(s string) { v = append(v, s) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Before == 0 {
		t.Fatal("the listing before is empty: nothing compared")
	}
	return v
}

// statsConversion reads stats.json's conversion.
func statsConversion(t *testing.T, wd string) *report.Conversion {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(wd, workdir.StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r.Conversion
}

// TestRunConvertARC runs warcdedup run --convert-arc on a mixed ARC and
// WARC collection: every ARC becomes a WARC and is gone, stats.json says
// so, every record of the collection as it was is found in the result
// (warcsumcmp's check), the duplicates of ARC files became revisits, a
// rerun has nothing to do and changes nothing, and undo restores every
// revisit (in the WARC files: it says the conversion is not undone).
func TestRunConvertARC(t *testing.T) {
	coll, _ := generated(t, arcCfg)
	arcs := arcNames(t, coll)
	if len(arcs) < 4 {
		t.Fatalf("the generated collection has %d ARC files", len(arcs))
	}
	before := listing(t, coll)
	wd := filepath.Join(t.TempDir(), "work")
	warcdedup := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binPath, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("warcdedup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := warcdedup("run", "--convert-arc", "-j", "2", "--work-dir", wd, coll)
	if !strings.Contains(out, fmt.Sprintf("ARC to WARC: %d ARC files: %d converted", len(arcs), len(arcs))) {
		t.Errorf("the summary does not say the ARC files were converted:\n%s", out)
	}
	if left := arcNames(t, coll); len(left) > 0 {
		t.Errorf("ARC files left after the run: %v", left)
	}
	for _, a := range arcs {
		warc := filepath.Join(coll, strings.TrimSuffix(strings.TrimSuffix(a, ".gz"), ".arc")+".warc.gz")
		if _, err := os.Stat(warc); err != nil {
			t.Errorf("%s: no WARC: %v", a, err)
		}
	}
	cv := statsConversion(t, wd)
	if cv == nil || cv.Converted != int64(len(arcs)) || cv.Left != 0 || cv.Records == 0 || cv.WARCBytes == 0 {
		t.Errorf("stats.json's conversion: %+v, want %d converted", cv, len(arcs))
	}
	after := listing(t, coll)
	if v := lostRecords(t, before, after); len(v) > 0 {
		t.Fatalf("records lost across the conversion and the rewrite: %s", strings.Join(v, "\n"))
	}
	// Revisits were written in the files that were ARC.
	revisitsIn := revisitsByFile(t, after)
	converted := 0
	for _, a := range arcs {
		if revisitsIn[strings.TrimSuffix(strings.TrimSuffix(a, ".gz"), ".arc")+".warc.gz"] > 0 {
			converted++
		}
	}
	if converted == 0 {
		t.Errorf("no revisit in a converted file: %v", revisitsIn)
	}

	// A rerun has nothing to do.
	tree := hashTree(t, coll)
	r, err := Run(context.Background(), Options{Collections: []string{coll}, WorkDir: wd, Jobs: 2, ConvertOptions: ConvertOptions{ConvertARC: true}})
	if err != nil || !r.NothingToDo {
		t.Fatalf("rerun: %v, nothing to do %v", err, r != nil && r.NothingToDo)
	}
	sameTree(t, "after a rerun", hashTree(t, coll), tree)

	// Undo restores every revisit, in the WARC files.
	out = warcdedup("undo", "-j", "2", "--work-dir", wd, coll)
	if !strings.Contains(out, "not the ARC files (a conversion is not undone)") {
		t.Errorf("undo does not say what it gives back of the converted files:\n%s", out)
	}
	undone := listing(t, coll)
	if v := lostRecords(t, before, undone); len(v) > 0 {
		t.Fatalf("records lost after undo: %s", strings.Join(v, "\n"))
	}
	if a, b := revisitsByFile(t, undone), revisitsByFile(t, before); len(a) != len(b) {
		t.Errorf("after undo revisits in %v, before the job in %v", a, b)
	}
}

// TestConvertWARCNameTaken: an ARC beside a WARC of its name that is not
// its conversion is never overwritten: both stay as they were, the ARC is
// named (exit status 1), and the rest of the job is done.
func TestConvertWARCNameTaken(t *testing.T) {
	coll, _ := generated(t, arcCfg)
	arcs := arcNames(t, coll)
	// Another file under the first ARC's WARC name: a WARC of the
	// collection, copied.
	taken := filepath.Join(coll, strings.TrimSuffix(arcs[0], ".arc.gz")+".warc.gz")
	var other string
	for name := range hashTree(t, coll) {
		if strings.HasSuffix(name, ".warc.gz") {
			other = name
		}
	}
	data, err := os.ReadFile(filepath.Join(coll, other))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(taken, data, 0o644); err != nil {
		t.Fatal(err)
	}
	arcBefore := hashTree(t, coll)[arcs[0]]
	r, err := Run(context.Background(), Options{Collections: []string{coll}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2,
		ConvertOptions: ConvertOptions{ConvertARC: true}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Exit != 1 || !strings.Contains(strings.Join(r.Report.ExitReason, "\n"), arcs[0]) {
		t.Errorf("exit %d, reasons %v: want 1 naming %s", r.Report.Exit, r.Report.ExitReason, arcs[0])
	}
	if cv := r.Report.Conversion; cv == nil || cv.Left != 1 || cv.Converted != int64(len(arcs)-1) {
		t.Errorf("conversion %+v: want 1 left, %d converted", cv, len(arcs)-1)
	}
	now := hashTree(t, coll)
	if now[arcs[0]] != arcBefore {
		t.Errorf("%s changed or gone", arcs[0])
	}
	if left := arcNames(t, coll); !slices.Equal(left, arcs[:1]) {
		t.Errorf("ARC files left: %v, want %v", left, arcs[:1])
	}
}

// TestConvertKillAndResume kills warcdedup run --convert-arc (SIGKILL)
// during the conversion: as a WARC is being written, just after a proof
// is written (before the WARC is linked and the ARC removed), and at
// instants spread over the conversion. After each kill no ARC is gone
// unless its WARC is in place and proved (conversion.map or its proof);
// the same command then finishes the job, every ARC converted, nothing
// lost (warcsumcmp's check against the collection as it was), no
// temporary file left.
func TestConvertKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills warcdedup")
	}
	cfg := arcCfg
	cfg.Files, cfg.Records, cfg.MeanPayload = 8, 500, 8<<10
	src, _ := generated(t, cfg)
	arcs := arcNames(t, src)
	before := listing(t, src)
	run := func(coll, wd string) *exec.Cmd {
		return exec.Command(binPath, "run", "-q", "--convert-arc", "-j", "2", "--work-dir", wd, coll)
	}
	// How long an uninterrupted conversion takes here.
	ref := filepath.Join(t.TempDir(), "ref")
	copyTree(t, src, ref)
	start := time.Now()
	if out, err := run(ref, ref+".work").CombinedOutput(); err != nil {
		t.Fatalf("warcdedup: %v\n%s", err, out)
	}
	full := time.Since(start)

	// when returns whether to kill now: at the first sign of the event.
	type kill struct {
		name string
		when func(coll, wd string) bool
	}
	exists := func(dir string, match func(string) bool) bool {
		entries, _ := os.ReadDir(dir)
		return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return match(e.Name()) })
	}
	after := func(d time.Duration) func(string, string) bool {
		at := time.Now().Add(d)
		return func(string, string) bool { return time.Now().After(at) }
	}
	kills := []kill{
		{"as a WARC is written", func(coll, _ string) bool {
			return exists(coll, func(n string) bool { return strings.HasPrefix(n, ".tmp-") })
		}},
		{"once a proof is written", func(_, wd string) bool {
			return exists(filepath.Join(wd, migrate.ProofDir), func(n string) bool { return strings.HasSuffix(n, ".proof") })
		}},
		{"once an ARC is gone", func(coll, _ string) bool { return len(arcNames(t, coll)) < len(arcs) }},
		{"at a third of the job", nil},
		{"at two thirds of the job", nil},
	}
	for i, k := range kills {
		coll := filepath.Join(t.TempDir(), "coll")
		copyTree(t, src, coll)
		wd := coll + ".work"
		when := k.when
		if when == nil {
			when = after(full * time.Duration(i-2) / 3)
		}
		cmd := run(coll, wd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
	watch:
		for {
			select {
			case <-done:
				t.Logf("%s: the run finished before the kill", k.name)
				break watch
			default:
			}
			if when(coll, wd) {
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		// No ARC gone without its WARC in place and proved.
		for _, a := range arcs {
			if _, err := os.Stat(filepath.Join(coll, a)); err == nil {
				continue
			}
			warc := strings.TrimSuffix(strings.TrimSuffix(a, ".gz"), ".arc") + ".warc.gz"
			if _, err := os.Stat(filepath.Join(coll, warc)); err != nil {
				t.Errorf("%s: killed %s: the ARC is gone, its WARC not in place: %v", a, k.name, err)
			}
			_, perr := os.Stat(filepath.Join(wd, migrate.ProofDir, a+".proof"))
			m, _ := os.ReadFile(filepath.Join(wd, migrate.MapFile))
			if perr != nil && !bytes.Contains(m, []byte(a)) {
				t.Errorf("%s: killed %s: the ARC is gone without a proof", a, k.name)
			}
		}
		if out, err := run(coll, wd).CombinedOutput(); err != nil {
			t.Fatalf("killed %s: the resumed run: %v\n%s", k.name, err, out)
		}
		if left := arcNames(t, coll); len(left) > 0 {
			t.Errorf("killed %s: ARC files left after the rerun: %v", k.name, left)
		}
		if v := lostRecords(t, before, listing(t, coll)); len(v) > 0 {
			t.Errorf("killed %s: records lost: %s", k.name, strings.Join(v, "\n"))
		}
		for name := range hashTree(t, coll) {
			if strings.HasPrefix(filepath.Base(name), ".") {
				t.Errorf("killed %s: %s left in the collection", k.name, name)
			}
		}
		if cv := statsConversion(t, wd); cv == nil || cv.Converted+cv.Earlier != int64(len(arcs)) || cv.Left != 0 {
			t.Errorf("killed %s: stats.json's conversion %+v: want %d converted, by this run or an earlier one", k.name, cv, len(arcs))
		}
		if t.Failed() {
			break
		}
	}
}

// TestAssessConvertARC: the dry run with --convert-arc (assess
// --convert-arc) writes nothing in the collection and estimates what the
// run then does: under the payload policy the same revisits, saving the
// same bytes to within a few bytes a revisit (the random record IDs of a
// conversion compress each a little differently), the files they are in,
// and the ARC files' WARC size to within 1%; without --convert-arc the
// dry run leaves the duplicates in ARC files out.
func TestAssessConvertARC(t *testing.T) {
	coll, _ := generated(t, arcCfg)
	arcs := arcNames(t, coll)
	run := filepath.Join(t.TempDir(), "run")
	copyTree(t, coll, run)
	tree := hashTree(t, coll)
	opt := func(dir string, dry, convert bool) Options {
		return Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2, Policy: policy.Payload, DryRun: dry,
			ConvertOptions: ConvertOptions{ConvertARC: convert, ConvertEvery: 1}}
	}
	plain, err := Run(context.Background(), opt(coll, true, false))
	if err != nil {
		t.Fatal(err)
	}
	est, err := Run(context.Background(), opt(coll, true, true))
	if err != nil || est.Report.Exit != 0 {
		t.Fatalf("assess --convert-arc: %v %v", err, est.Report.ExitReason)
	}
	sameTree(t, "after assess --convert-arc", hashTree(t, coll), tree)
	got, err := Run(context.Background(), opt(run, false, true))
	if err != nil || got.Report.Exit != 0 {
		t.Fatalf("run --convert-arc: %v %v", err, got.Report.ExitReason)
	}
	e, g, p := est.Report.Totals, got.Report.Totals, plain.Report.Totals
	if e.RevisitsWritten != g.RevisitsWritten || e.FilesRewritten != g.FilesRewritten {
		t.Errorf("estimated %d revisits in %d files, the run wrote %d in %d", e.RevisitsWritten, e.FilesRewritten, g.RevisitsWritten, g.FilesRewritten)
	}
	if d := e.BytesSaved - g.BytesSaved; d < -8*g.RevisitsWritten || d > 8*g.RevisitsWritten {
		t.Errorf("estimated %d bytes saved, the run saved %d", e.BytesSaved, g.BytesSaved)
	}
	if p.RevisitsWritten >= g.RevisitsWritten || p.BytesSaved >= e.BytesSaved {
		t.Errorf("without --convert-arc the dry run writes %d revisits saving %d, with it %d saving %d: the ARC files' duplicates were not left out",
			p.RevisitsWritten, p.BytesSaved, e.RevisitsWritten, e.BytesSaved)
	}
	ec, gc := est.Report.Conversion, got.Report.Conversion
	if ec == nil || !ec.Estimated || ec.ARCFiles != int64(len(arcs)) || ec.Records != gc.Records ||
		ec.WARCBytes < gc.WARCBytes*99/100 || ec.WARCBytes > gc.WARCBytes*101/100 {
		t.Errorf("estimated conversion %+v, the run's %+v", ec, gc)
	}
}

// TestConvertOptionsRefused: options --convert-arc cannot honour are
// refused before anything is converted, each with why.
func TestConvertOptionsRefused(t *testing.T) {
	coll, _ := generated(t, gen.Config{Files: 2, Records: 20, Seed: 3, Formats: []gen.Format{gen.ARCGz}})
	other := t.TempDir()
	tree := hashTree(t, coll)
	for _, c := range []struct {
		name string
		opt  Options
		says string
	}{
		{"--keep-arc without --convert-arc", Options{Collections: []string{coll}, ConvertOptions: ConvertOptions{KeepARC: other}}, "give --convert-arc"},
		{"two collections", Options{Collections: []string{coll, other}, ConvertOptions: ConvertOptions{ConvertARC: true}}, "one collection per work directory"},
		{"--keep-arc inside the collection", Options{Collections: []string{coll}, ConvertOptions: ConvertOptions{ConvertARC: true, KeepARC: filepath.Join(coll, "old")}}, "inside the collection"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opt.WorkDir = filepath.Join(t.TempDir(), "work")
			_, err := Run(context.Background(), c.opt)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("got %v, want an error saying %q", err, c.says)
			}
		})
	}
	sameTree(t, "after the refusals", hashTree(t, coll), tree)
}
