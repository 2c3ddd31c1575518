package stage

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/internal/progress"
	"warcdedup/report"
	"warcdedup/workdir"
)

// Result is what a job did, warcdedup run's or cluster's: for the summary
// and the exit status.
type Result struct {
	Report      *report.Report
	WorkDir     string
	RunDir      string // the run's own records, relative to WorkDir ("" when it had nothing to do, or for a cluster job)
	NothingToDo bool   // a rerun of a complete job on unchanged files
}

// WriteReport writes a report's figures (stats.json) and its page
// (report.html) into dir, each whole or not at all.
func WriteReport(dir string, rep *report.Report) error {
	var js, page bytes.Buffer
	if err := report.WriteJSON(&js, rep); err != nil {
		return err
	}
	if err := report.WriteHTML(&page, rep); err != nil {
		return err
	}
	if err := workdir.WriteFile(filepath.Join(dir, workdir.StatsFile), js.Bytes()); err != nil {
		return err
	}
	return workdir.WriteFile(filepath.Join(dir, workdir.ReportFile), page.Bytes())
}

// ReadReport reads a stats.json.
func ReadReport(name string) (*report.Report, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := report.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// Summary writes what a job did, in human units: the collection, the
// duplication, what was rewritten and saved, what was kept and why, the
// verification, each stage's time, where the work directory is, and why
// the exit status is not 0 when it is not.
func Summary(w io.Writer, res *Result) {
	r := res.Report
	t := &r.Totals
	would := func(done, maybe string) string {
		if r.Mode == "run" {
			return done
		}
		return maybe
	}
	if res.NothingToDo {
		fmt.Fprintf(w, "nothing to do: every file is as the job of %s left it\n", r.Generated.Format("2006-01-02 15:04 MST"))
	}
	fmt.Fprintf(w, "collection: %s: %s files, %s; %s responses listed, %s revisits already there\n",
		strings.Join(r.Collections, ", "), progress.Count(t.Files), progress.Bytes(t.StoredBytes),
		progress.Count(t.Records), progress.Count(t.Revisits))
	if n := t.FilesInProgress; n > 0 {
		fmt.Fprintf(w, "skipped: %s files still being written (.open), not read (named in run.log); a run after their writer closes them takes them\n", progress.Count(n))
	}
	fmt.Fprintf(w, "duplicates (%s policy, %s): %s of the responses (%s), %s\n", r.Policy, r.Algorithm,
		progress.Count(t.Duplicates), progress.Percent(t.Duplicates, t.Records), progress.Bytes(t.DuplicateBytes))
	fmt.Fprintf(w, "%s: %s revisits in %s files; %s %s (%s of the collection)\n",
		would("rewritten", "would be rewritten"), progress.Count(t.RevisitsWritten), progress.Count(t.FilesRewritten),
		progress.Bytes(t.BytesSaved), would("saved", "would be saved"), progress.Percent(t.BytesSaved, t.StoredBytes))
	for _, k := range r.NotDeduplicable {
		noun := "duplicates"
		if k.Records == 1 {
			noun = "duplicate"
		}
		fmt.Fprintf(w, "kept: %s %s (%s): %s\n", progress.Count(k.Records), noun, progress.Bytes(k.Bytes), k.Why)
	}
	if r.Mode == "run" && !res.NothingToDo {
		fmt.Fprintf(w, "verification: %s records lost (warcsumcmp of the manifests before and after)\n", progress.Count(t.Violations))
	}
	var stages []string
	for _, s := range r.Stages {
		if s.Skipped {
			stages = append(stages, s.Name+" (done before)")
			continue
		}
		stages = append(stages, fmt.Sprintf("%s %s", s.Name, progress.Duration(s.Took)))
	}
	if len(stages) > 0 {
		fmt.Fprintf(w, "stages: %s\n", strings.Join(stages, ", "))
	}
	fmt.Fprintf(w, "work directory: %s (report.html, stats.json, fixity.tsv, deps.tsv of every run; rewrite.log, manifests)\n", res.WorkDir)
	if res.RunDir != "" {
		fmt.Fprintf(w, "this run's own: %s\n", filepath.Join(res.WorkDir, res.RunDir))
	}
	if r.Exit != 0 {
		fmt.Fprintf(w, "exit status %d:\n", r.Exit)
		for _, why := range r.ExitReason {
			fmt.Fprintf(w, "  %s\n", why)
		}
	}
}

// Finish sets a report's exit status and its reasons: 2 when the job
// stopped (stopped says why), else 1 when the stages give reasons (see
// their Reasons), else 0.
func Finish(rep *report.Report, stopped error, reasons []string) {
	if stopped != nil {
		rep.Exit = 2
		reasons = append([]string{"the run stopped: " + stopped.Error()}, reasons...)
	}
	if rep.Exit == 0 && len(reasons) > 0 {
		rep.Exit = 1
	}
	rep.ExitReason = reasons
}
