package assess

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/internal/progress"
	"warcdedup/report"
	"warcdedup/workdir"
)

// WriteReport writes an assessment's figures (stats.json) and its page
// (report.html) into dir, each whole or not at all.
func WriteReport(dir string, rep *report.Report) error {
	var js, page bytes.Buffer
	if err := report.WriteJSON(&js, rep); err != nil {
		return err
	}
	if err := report.WriteHTML(&page, rep); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{workdir.StatsFile, js.Bytes()}, {workdir.ReportFile, page.Bytes()}} {
		out, err := atomicfile.Create(filepath.Join(dir, f.name), 0o644)
		if err != nil {
			return err
		}
		if _, err := out.Write(f.data); err != nil {
			out.Abort()
			return err
		}
		if err := out.CommitRenamed(); err != nil {
			return err
		}
	}
	return nil
}

// Summary writes what an assessment from a sample or from indexes found,
// in human units: the estimate and its range, what it rests on, what
// would stay as it is and why, the caveats, where the report is, and why
// the exit status is not 0 when it is not.
func Summary(w io.Writer, res *Result) {
	r := res.Report
	if r == nil {
		return
	}
	t := &r.Totals
	e := r.Estimate
	switch r.Mode {
	case "sample":
		if res.By == SampleDigests {
			fmt.Fprintf(w, "collection: %s: %s files, %s, all hashed: %s responses, %s payload digests; a slice of %s digests proven and measured\n",
				strings.Join(r.Collections, ", "), progress.Count(t.Files), progress.Bytes(t.StoredBytes), progress.Count(e.Records),
				progress.Count(res.Digests), progress.Count(res.Sliced))
			fmt.Fprintf(w, "in the slice: %s responses, %s duplicates, %s would be saved by %s revisits\n",
				progress.Count(t.Records), progress.Count(t.Duplicates), progress.Bytes(t.BytesSaved), progress.Count(t.RevisitsWritten))
		} else {
			fmt.Fprintf(w, "collection: %s: %s files, %s; read a sample of %s files (%s)\n", strings.Join(r.Collections, ", "),
				progress.Count(t.Files), progress.Bytes(t.StoredBytes), progress.Count(e.SampledFiles), progress.Bytes(e.SampledBytes))
			fmt.Fprintf(w, "in the files read: %s responses listed, %s duplicates (%s), %s would be saved by %s revisits\n",
				progress.Count(t.Records), progress.Count(t.Duplicates), progress.Percent(t.Duplicates, t.Records),
				progress.Bytes(t.BytesSaved), progress.Count(t.RevisitsWritten))
		}
		conf := fmt.Sprintf(" (%.0f%% confidence)", 100*e.Confidence)
		fmt.Fprintf(w, "duplicates (%s policy, estimate for the collection): %s of about %s responses (%s), between %s and %s%s\n",
			r.Policy, progress.Count(e.Duplicates), progress.Count(e.Records), progress.Percent(e.Duplicates, e.Records),
			progress.Count(e.DuplicatesLow), progress.Count(e.DuplicatesHigh), conf)
		fmt.Fprintf(w, "would be saved (estimate): %s (%s of the collection), between %s and %s%s\n",
			progress.Bytes(e.BytesSaved), progress.Percent(e.BytesSaved, t.StoredBytes),
			progress.Bytes(e.BytesSavedLow), progress.Bytes(e.BytesSavedHigh), conf)
	case "cdx":
		fmt.Fprintf(w, "indexes: %s: %s files named, %s listed; header digests trusted, not verified (no WARC file was read)\n",
			strings.Join(r.Collections, ", "), progress.Count(t.Files), progress.Bytes(t.StoredBytes))
		fmt.Fprintf(w, "duplicates (%s policy, %s): %s of the %s responses listed (%s), %s; %s revisits already there\n", r.Policy, r.Algorithm,
			progress.Count(t.Duplicates), progress.Count(t.Records), progress.Percent(t.Duplicates, t.Records),
			progress.Bytes(t.DuplicateBytes), progress.Count(t.Revisits))
		fmt.Fprintf(w, "would be rewritten: %s revisits in %s files; %s would be saved (estimate; %s of the bytes listed), between %s and %s as revisits are %.2g to %.2g times the model's length\n",
			progress.Count(t.RevisitsWritten), progress.Count(t.FilesRewritten), progress.Bytes(e.BytesSaved),
			progress.Percent(e.BytesSaved, t.StoredBytes), progress.Bytes(e.BytesSavedLow), progress.Bytes(e.BytesSavedHigh), RevisitLow, RevisitHigh)
	}
	for _, k := range r.NotDeduplicable {
		fmt.Fprintf(w, "kept: %s duplicates (%s): %s\n", progress.Count(k.Records), progress.Bytes(k.Bytes), k.Why)
	}
	for _, c := range r.Caveats {
		fmt.Fprintf(w, "note: %s\n", c)
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
	fmt.Fprintf(w, "report: %s (and stats.json)\n", filepath.Join(res.Dir, workdir.ReportFile))
	// The exit status and its reasons are the command's to say, on
	// standard error.
}
