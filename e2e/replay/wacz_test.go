//go:build browser

package replay

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/cdxj"
	"warcdedup/internal/replaytest"
	"warcdedup/record"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/wacz"
)

// TestWACZRebuildReplay deduplicates the WARC members of generated WACZ
// packages (one with a ZipNum index, one with a plain one), rebuilds each
// package from the rewrite log with package wacz, and loads each package
// before and after into ReplayWeb.page: every record that became a
// revisit must replay with the status, Content-Type, Content-Encoding and
// body bytes it had. ReplayWeb.page reads the rebuilt ZIP (no data
// descriptors), its ZipNum blocks and .idx, and its datapackage.
func TestWACZRebuildReplay(t *testing.T) {
	root := t.TempDir()
	genDir := filepath.Join(root, "before")
	res, err := gen.Write(genDir, gen.Config{Files: 4, Records: 400, DupRate: 0.4, Seed: 23, MeanPayload: 4000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz}, NonCandidates: true, Sequential: true, Prefix: "bt"})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := waczgen.Write(genDir, res, waczgen.Config{Packages: 2, Index: "mixed", LinesPerBlock: 40})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "after"), 0o755)
	b := replaytest.Start(t, root)
	total := 0
	for _, cp := range coll.Packages {
		before := filepath.Join(genDir, cp.Name)
		after := filepath.Join(root, "after", cp.Name)
		caps := dedupPackage(t, before, after, filepath.Join(root, "work-"+cp.Name))
		if len(caps) == 0 {
			t.Fatalf("%s: no revisit written", cp.Name)
		}
		cb, err := b.Load(b.SourceURL("before/" + cp.Name))
		if err != nil {
			t.Fatal(err)
		}
		ca, err := b.Load(b.SourceURL("after/" + cp.Name))
		if err != nil {
			t.Fatal(err)
		}
		rb, err := cb.Fetch(caps)
		if err != nil {
			t.Fatal(err)
		}
		ra, err := ca.Fetch(caps)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i := range caps {
			if rb[i].Status != 200 {
				t.Errorf("%s: %s %s did not replay before the rewrite (status %d)", cp.Name, caps[i].Timestamp, caps[i].URL, rb[i].Status)
				continue
			}
			if d := replaytest.Diff(&rb[i], &ra[i]); len(d) > 0 {
				bad++
				t.Errorf("%s: %s %s replays otherwise: %s", cp.Name, caps[i].Timestamp, caps[i].URL, strings.Join(d, "; "))
			}
		}
		total += len(caps)
		t.Logf("%s (ZipNum %v): %d revisits replay as their records did, %d differ; loaded in %v before, %v after",
			cp.Name, cp.ZipNum, len(caps)-bad, bad, cb.LoadTime, ca.LoadTime)
	}
	if refused := b.Refused(); len(refused) > 0 {
		t.Logf("asked of the refusing proxy: %v", refused)
	}
	t.Logf("%d revisits checked in all", total)
}

// dedupPackage takes the WARC members of the package before out, runs
// warcdedup on them in work, rebuilds the package from the rewrite log
// as after, checks it, and returns the captures that became revisits.
func dedupPackage(t *testing.T, before, after, work string) []replaytest.Capture {
	t.Helper()
	src, err := wacz.Open(before)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	members := filepath.Join(work, "members")
	if err := os.MkdirAll(members, 0o755); err != nil {
		t.Fatal(err)
	}
	repl := map[string]wacz.Replacement{}
	for _, m := range src.WARCs() {
		sec, _ := src.Section(m)
		data, _ := io.ReadAll(sec)
		p := filepath.Join(members, filepath.Base(m.Name))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		repl[m.Name] = wacz.Replacement{Path: p}
	}
	// The originals' records before the run, to name the captures.
	var caps []replaytest.Capture
	var entries []rewritelog.Entry
	cmd := exec.Command(filepath.Join(binDir, "warcdedup"), "run", "--work-dir", filepath.Join(work, "job"), members)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Read the records that will be rewritten from a copy taken now.
	pristine := filepath.Join(work, "pristine")
	os.MkdirAll(pristine, 0o755)
	for name, r := range repl {
		data, _ := os.ReadFile(r.Path)
		os.WriteFile(filepath.Join(pristine, filepath.Base(name)), data, 0o644)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("warcdedup run: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(filepath.Join(work, "job", "rewrite.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := rewritelog.NewReader(f, "rewrite.log")
	var log []byte
	run := -1
	for {
		e, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Run != run {
			run = e.Run
			log = append(rewritelog.AppendRun(log, lr.Runs[run]), '\n')
		}
		c := *e
		c.File = wacz.JoinName(filepath.Base(before), "archive/"+e.File)
		log = append(c.AppendTo(log), '\n')
		entries = append(entries, *e)
	}
	for _, e := range entries {
		uri, date := recordAt(t, filepath.Join(pristine, e.File), e.OldOffset)
		caps = append(caps, replaytest.Capture{Timestamp: cdxj.Timestamp(date), URL: uri})
	}
	moves, err := wacz.PackageMoves(rewritelog.NewReader(bytes.NewReader(log), "rewrite.log"), filepath.Base(before), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(after)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&wacz.Rebuild{Source: src, Replace: repl, Index: wacz.NewLogUpdate(moves), TempDir: work}).Write(out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := wacz.Open(after)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := wacz.Check(p, wacz.CheckOptions{Records: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("%s: %v", after, err)
	}
	return caps
}

// recordAt returns the target URI and date of the record at offset.
func recordAt(t *testing.T, name string, offset int64) (string, string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rr, err := record.NewReader(f, name)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rr.Next()
	if err != nil {
		t.Fatal(err)
	}
	return rec.TargetURI(), rec.Date
}
