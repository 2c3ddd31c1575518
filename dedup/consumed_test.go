package dedup

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/internal/gzfile"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// TestConsumedRemoved runs a dry run, then the real run that resumes it,
// then a rerun, and checks after each which intermediate work files are
// left: the manifest by digest goes once the resolution is done (and the
// real run does not sort again what it sorted), the numbered manifest,
// the ones by file and the manifest after (its lines are in the hash
// cache) once the job is complete, and a rerun of the complete job has
// nothing to do without them; with --keep-work every one stays.
func TestConsumedRemoved(t *testing.T) {
	dir, _ := generated(t, genCfg)
	all := []string{workdir.ByDigestFile, workdir.NumberedFile, workdir.ByFileFile, workdir.FactsByFile, workdir.AfterFile}
	kept := []string{workdir.BeforeFile, workdir.FactsFile, workdir.SavedFile, workdir.LogFile}
	for _, tc := range []struct {
		name                string
		keepWork            bool
		afterDry, afterReal []string // the intermediates left
	}{
		{"removed once consumed", false, []string{workdir.NumberedFile, workdir.ByFileFile, workdir.FactsByFile}, nil},
		{"--keep-work keeps them", true, all[:4], all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coll := filepath.Join(t.TempDir(), "coll")
			copyTree(t, dir, coll)
			wd := filepath.Join(t.TempDir(), "work")
			left := func(when string, want []string) {
				t.Helper()
				for _, f := range all {
					_, err := os.Stat(filepath.Join(wd, f))
					if has := err == nil; has != slices.Contains(want, f) {
						t.Errorf("%s: %s there: %v, want %v", when, f, has, !has)
					}
				}
			}
			opt := Options{Collections: []string{coll}, WorkDir: wd, Jobs: 2, KeepWork: tc.keepWork, DryRun: true}
			if r, err := Run(context.Background(), opt); err != nil || r.Report.Exit != 0 {
				t.Fatalf("dry run: %v", err)
			}
			left("after the dry run", tc.afterDry)
			opt.DryRun = false
			r, err := Run(context.Background(), opt)
			if err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v %v", err, r.Report.ExitReason)
			}
			for _, s := range r.Report.Stages {
				skip := s.Name == stage.HashName || s.Name == stage.SortByDigestName || s.Name == stage.ResolveName || s.Name == stage.SortByFileName
				if skip != s.Skipped {
					t.Errorf("the run after the dry run: stage %q skipped %v, want %v", s.Name, s.Skipped, skip)
				}
			}
			if r.Report.Totals.RevisitsWritten == 0 {
				t.Error("the run wrote no revisit")
			}
			left("after the run", tc.afterReal)
			for _, f := range kept {
				if _, err := os.Stat(filepath.Join(wd, f)); err != nil {
					t.Errorf("after the run: %v", err)
				}
			}
			compressed := []string{workdir.BeforeFile, workdir.FactsFile}
			if tc.keepWork {
				compressed = append(compressed, workdir.AfterFile)
			}
			for _, f := range compressed {
				if data, _ := os.ReadFile(filepath.Join(wd, f)); !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
					t.Errorf("after the run: %s is not kept gzip-compressed", f)
				}
			}
			r, err = Run(context.Background(), opt)
			if err != nil || !r.NothingToDo {
				t.Fatalf("the rerun: %v, nothing to do %v", err, r != nil && r.NothingToDo)
			}
		})
	}
}

// readKept reads a work file kept compressed, in either form.
func readKept(t *testing.T, name string) []byte {
	t.Helper()
	r, err := gzfile.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPlainManifestsOfAnOlderRun resumes, with a real run, a dry run whose
// manifests were left plain, as an earlier warcdedup wrote them: the
// verification reads the plain before-manifest, and the job completes.
func TestPlainManifestsOfAnOlderRun(t *testing.T) {
	dir, _ := generated(t, genCfg)
	wd := filepath.Join(t.TempDir(), "work")
	opt := Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, DryRun: true}
	if r, err := Run(context.Background(), opt); err != nil || r.Report.Exit != 0 {
		t.Fatalf("dry run: %v", err)
	}
	for _, f := range []string{workdir.BeforeFile, workdir.FactsFile} {
		name := filepath.Join(wd, f)
		if err := os.WriteFile(name, readKept(t, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opt.DryRun = false
	r, err := Run(context.Background(), opt)
	if err != nil || r.Report.Exit != 0 || r.Report.Totals.RevisitsWritten == 0 {
		t.Fatalf("run: %v %v, %d revisits written", err, r.Report.ExitReason, r.Report.Totals.RevisitsWritten)
	}
	if r.Report.Stages[0].Name != stage.HashName || !r.Report.Stages[0].Skipped {
		t.Fatalf("the run hashed again: %+v", r.Report.Stages[0])
	}
}
