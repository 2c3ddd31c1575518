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

// Summary writes what a job did, in human units, and only what it did:
// where it stopped and how to resume it, if it did not finish; the
// collection, the files it did not read and why, the duplication and
// what became of every duplicate (the revisits written and the
// duplicates kept, by reason, adding up to the duplicates), the damage,
// the verification (of a run that verified), each stage's time and what
// it left undone, and where the work directory is. The exit status and
// its reasons are the caller's to say (ExitReasons), on standard error.
//
// Each part is a function of summaryParts, in order, writing its lines
// or none: a new stage's figures go in a part of their own.
func Summary(w io.Writer, res *Result) {
	for _, part := range summaryParts {
		part(w, res)
	}
}

// summaryParts are the parts of Summary, in order.
var summaryParts = []func(io.Writer, *Result){
	summaryStopped, summaryCollection, summaryNotRead, summaryDuplicates,
	summaryKept, summaryApart, summaryDamage, summaryVerification, summaryStages, summaryWhere,
}

// counted reports whether the report's figures were counted: the account
// done, by this run or the one whose job is complete.
func counted(res *Result) bool {
	if res.NothingToDo {
		return true
	}
	for _, s := range res.Report.Stages {
		if s.Name == AccountName {
			return s.Done()
		}
	}
	return false
}

// stageDone reports whether the stage is done, by this run or before it.
func stageDone(r *report.Report, name string) bool {
	for _, s := range r.Stages {
		if s.Name == name {
			return s.Done()
		}
	}
	return false
}

// done is the verb of a run, or of what a dry run or assessment would do.
func done(r *report.Report, did, would string) string {
	if r.Mode == "run" {
		return did
	}
	return would
}

func summaryStopped(w io.Writer, res *Result) {
	if s := res.Report.Stopped; s != "" {
		fmt.Fprintf(w, "not finished: %s\n", s)
	}
}

func summaryCollection(w io.Writer, res *Result) {
	r := res.Report
	t := &r.Totals
	if res.NothingToDo {
		fmt.Fprintf(w, "nothing to do: every file is as the job of %s left it\n", r.Generated.Format("2006-01-02 15:04 MST"))
	}
	if !counted(res) {
		return
	}
	fmt.Fprintf(w, "collection: %s: %s, %s; %s listed, %s already there\n",
		strings.Join(r.Collections, ", "), progress.Plural(t.Files, "file", ""), progress.Bytes(t.StoredBytes),
		progress.Plural(t.Records, "response", ""), progress.Plural(t.Revisits, "revisit", ""))
	convertSummary(w, r)
}

func summaryNotRead(w io.Writer, res *Result) {
	r := res.Report
	var notRead, kept []string
	for _, g := range r.FilesNotDeduplicated {
		if g.Read {
			kept = append(kept, fmt.Sprintf("%s (%s): %s", progress.Plural(g.Files, "file", ""), progress.Bytes(g.Bytes), g.Why))
			continue
		}
		notRead = append(notRead, fmt.Sprintf("%s %s", progress.Plural(g.Files, g.Kind, g.Kinds), g.Why))
	}
	if len(notRead) == 0 && r.Totals.FilesInProgress > 0 {
		// A report of a version that counted only those.
		notRead = append(notRead, fmt.Sprintf("%s still being written (.open)", progress.Plural(r.Totals.FilesInProgress, "file", "")))
	}
	if len(notRead) > 0 {
		fmt.Fprintf(w, "not read: %s (run.log names each; a crawl's .open file is taken by a run once its writer renames it)\n", progress.Nouns(notRead))
	}
	for _, k := range kept {
		fmt.Fprintf(w, "read, not rewritable: %s\n", k)
	}
}

func summaryDuplicates(w io.Writer, res *Result) {
	r := res.Report
	t := &r.Totals
	if !counted(res) {
		return
	}
	fmt.Fprintf(w, "duplicates (%s policy, %s): %s of the responses (%s), %s\n", r.Policy, r.Algorithm,
		progress.Count(t.Duplicates), progress.Percent(t.Duplicates, t.Records), progress.Bytes(t.DuplicateBytes))
	fmt.Fprintf(w, "  %s: %s in %s (%s); %s %s (%s of the collection)\n",
		done(r, "rewritten", "would be rewritten"), progress.Plural(t.RevisitsWritten, "revisit", ""), progress.Plural(t.FilesRewritten, "file", ""),
		progress.Bytes(t.RevisitedBytes), progress.Bytes(t.BytesSaved), done(r, "saved", "would be saved"), progress.Percent(t.BytesSaved, t.StoredBytes))
}

func summaryKept(w io.Writer, res *Result) {
	if !counted(res) {
		return
	}
	for _, k := range res.Report.NotDeduplicable {
		fmt.Fprintf(w, "  kept: %s (%s): %s\n", progress.Plural(k.Records, "duplicate", ""), progress.Bytes(k.Bytes), k.Why)
	}
}

func summaryApart(w io.Writer, res *Result) {
	t := &res.Report.Totals
	if !counted(res) || t.ServedApart == 0 {
		return
	}
	fmt.Fprintf(w, "not duplicates: %s (%s) repeat an earlier capture's payload, %s\n",
		progress.Plural(t.ServedApart, "response", ""), progress.Bytes(t.ServedApartBytes), res.Report.ServedApartWhy)
}

func summaryDamage(w io.Writer, res *Result) {
	t := &res.Report.Totals
	if !counted(res) || t.DamagedRecords+t.UnreadableFiles == 0 {
		return
	}
	fmt.Fprintf(w, "damaged: %s, passed over (run.log names each, with its offset)\n", Damage(t.DamagedRecords, t.UnreadableFiles))
}

// Damage is the damage a job found in words, as the summary, the exit
// reasons and the report count it: "42 damaged records and 8 unreadable
// files" (an unreadable file: no record of it could be read).
func Damage(records, files int64) string {
	var parts []string
	if records > 0 || files == 0 {
		parts = append(parts, progress.Plural(records, "damaged record", ""))
	}
	if files > 0 {
		parts = append(parts, progress.Plural(files, "unreadable file", ""))
	}
	return progress.Nouns(parts)
}

func summaryVerification(w io.Writer, res *Result) {
	r := res.Report
	if r.Mode != "run" || res.NothingToDo || !stageDone(r, VerifyName) {
		return
	}
	fmt.Fprintf(w, "verification: %s lost (warcsumcmp of the manifests before and after)\n", progress.Plural(r.Totals.Violations, "record", ""))
}

func summaryStages(w io.Writer, res *Result) {
	var stages, notRun, before []string
	var by string // who did the stages done before, if one run did them all
	for _, s := range res.Report.Stages {
		switch {
		case s.Skipped:
			stages = append(stages, s.Name+" (done before)")
			before = append(before, s.Name)
			if len(before) == 1 || by == s.Note {
				by = s.Note
			} else {
				by = "-"
			}
		case s.Stopped:
			how := "stopped"
			if strings.Contains(res.Report.Stopped, "interrupted") {
				how = "interrupted"
			}
			stages = append(stages, fmt.Sprintf("%s (%s after %s)", s.Name, how, progress.Duration(s.Took)))
		case s.NotRun:
			notRun = append(notRun, s.Name)
		default:
			stages = append(stages, fmt.Sprintf("%s %s", s.Name, progress.Duration(s.Took)))
		}
	}
	if len(stages) > 0 {
		fmt.Fprintf(w, "stages: %s\n", strings.Join(stages, ", "))
	}
	if len(notRun) > 0 {
		fmt.Fprintf(w, "not run: %s\n", strings.Join(notRun, ", "))
	}
	if len(before) > 0 && strings.HasPrefix(by, "done by ") {
		// Which run did them: "done by the dry run of 2026-11-26 14:33 UTC".
		fmt.Fprintf(w, "%s: %s\n", by, strings.Join(before, ", "))
	}
	if !counted(res) {
		// No figures: what the stages done found is all there is.
		for _, s := range res.Report.Stages {
			if s.Done() && !s.Skipped && s.Note != "" {
				fmt.Fprintf(w, "  %s: %s\n", s.Name, s.Note)
			}
		}
	}
}

func summaryWhere(w io.Writer, res *Result) {
	fmt.Fprintf(w, "work directory: %s (report.html, stats.json, fixity.tsv, deps.tsv of every run; rewrite.log, manifests)\n", res.WorkDir)
	if res.RunDir != "" {
		fmt.Fprintf(w, "this run's own: %s\n", filepath.Join(res.WorkDir, res.RunDir))
	}
}

// ExitReasons writes why the exit status is not 0, for standard error:
// "warcdedup: exit status 1:" and a reason a line. It writes nothing for
// status 0.
func ExitReasons(w io.Writer, program string, status int, reasons []string) {
	if status == 0 {
		return
	}
	fmt.Fprintf(w, "%s: exit status %d:\n", program, status)
	for _, why := range reasons {
		fmt.Fprintf(w, "  %s\n", why)
	}
}

// StoppedIn says where a job stopped and how it resumes: "interrupted in
// step 5 of 8 (rewrite): run the same command to resume: warcdedup run
// coll"; for another error, "stopped in step 5 of 8 (rewrite): ERR". The
// work directory keeps what is done, and the same command goes on from
// there. command is the job's command line, "" if not known.
func StoppedIn(where, name string, err error, command string) string {
	again := "run the same command to resume"
	if command != "" {
		again += ": " + command
	}
	if progress.Interrupted(err) {
		return fmt.Sprintf("interrupted in %s (%s): %s", where, name, again)
	}
	return fmt.Sprintf("stopped in %s (%s): %v; once that is mended, %s", where, name, err, again)
}

// Finish sets a report's exit status and its reasons: 2 when the job
// stopped (the report's Stopped says where and why; else stopped does),
// else 1 when the stages give reasons (see their Reasons), else 0.
func Finish(rep *report.Report, stopped error, reasons []string) {
	if stopped != nil {
		rep.Exit = 2
		why := rep.Stopped
		if why == "" {
			why = "the run stopped: " + stopped.Error()
		}
		reasons = append([]string{why}, reasons...)
	}
	if rep.Exit == 0 && len(reasons) > 0 {
		rep.Exit = 1
	}
	rep.ExitReason = reasons
}
