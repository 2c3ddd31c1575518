package stage

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"warcdedup/collock"
	"warcdedup/internal/progress"
	"warcdedup/migrate"
	"warcdedup/report"
	"warcdedup/workdir"
)

// Convert converts the collection's ARC files to WARC in place (package
// migrate), the stage before Hash with --convert-arc: each ARC file
// x.arc.gz becomes x.warc.gz beside it, proved record for record before
// the ARC is removed (or moved to KeepARC), crash-safe and resumable; the
// files Hash then lists are the WARC files. An ARC left as it is
// (damaged, cut short, no ARC, its WARC name taken by another file) is
// named (Messages.Error, and the Reasons): the job goes on with it as an
// ARC file.
type Convert struct {
	Collection string
	// WorkDir keeps the proofs (WorkDir/convert/ARC.proof) and the map of
	// every conversion done there (WorkDir/conversion.map, for the
	// indexes). One collection per work directory: proofs are named by
	// their path in the collection.
	WorkDir string
	KeepARC string // "" to remove each ARC once its WARC is proved
	// Locks are the job's locks, the keep directory's among them
	// (migrate.Options.Locks).
	Locks    *collock.Set
	Jobs     int    // files converted at once
	Software string // named in each WARC's warcinfo record
	Messages Messages
	Meter    progress.Meter
	// Hook, if set, is called between the steps of each file's
	// conversion (migrate.Options.Hook): tests stop the process there.
	Hook func(step, arc string)
}

// ConvertResult is what a Convert did: the report's figures, and the
// conversion map of every file converted in the work directory.
type ConvertResult struct {
	Conversion report.Conversion `json:"conversion"`
	Map        string            `json:"map"`
	// Retry counts the ARC files left because their conversion failed
	// (an I/O error, a copy to the keep directory that could not be
	// made): a rerun of the job tries them again, where it has nothing
	// to do for one left damaged, not ARC, or beside another WARC.
	Retry int64 `json:"retry,omitempty"`
}

// Run converts. A stopped context stops it with its error (each file
// left as it is, or converted: see package migrate).
func (c *Convert) Run(ctx context.Context) (ConvertResult, error) {
	_, total, err := migrate.Scan(c.Collection)
	if err != nil {
		return ConvertResult{}, err
	}
	var read atomic.Int64
	c.Meter.Begin("bytes", total)
	stop := progress.Follow(&read, c.Meter)
	conv := &migrate.Converter{Options: migrate.Options{WorkDir: c.WorkDir, KeepARC: c.KeepARC, Locks: c.Locks, Jobs: c.Jobs, Version: "1.0",
		Software: c.Software, Report: c.Messages.Error, Hook: c.Hook}}
	res, err := conv.Run(ctx, c.Collection, &read)
	stop()
	if res == nil {
		return ConvertResult{}, err
	}
	out := ConvertResult{Map: res.Map, Conversion: report.Conversion{ARCFiles: int64(len(res.Files)), Earlier: int64(res.Earlier), KeptIn: c.KeepARC}}
	cv := &out.Conversion
	for _, o := range res.Files {
		switch {
		case o.Status.Left():
			cv.Left++
			if o.Status == migrate.Failed {
				out.Retry++
			}
			if len(cv.Why) < KeepFirst {
				cv.Why = append(cv.Why, fmt.Sprintf("%s: %s: %s", o.ARC, o.Status, o.Reason))
			}
			continue
		case o.Status == migrate.Adopted:
			cv.Adopted++
		default:
			cv.Converted++
		}
		if o.Resumed {
			cv.Resumed++
		}
		cv.ARCBytes += o.ARCSize
		cv.WARCBytes += o.WARCSize
		cv.Records += o.Records
	}
	return out, err
}

// ConvertNote says what a Convert did, for the report's stage.
func ConvertNote(c *report.Conversion) string {
	verb := "converted"
	if c.Estimated {
		verb = "would be converted"
	}
	note := fmt.Sprintf("%s ARC files: %s %s, %s adopted, %s left; %s of ARC, %s of WARC", progress.Count(c.ARCFiles),
		progress.Count(c.Converted), verb, progress.Count(c.Adopted), progress.Count(c.Left), progress.Bytes(c.ARCBytes), progress.Bytes(c.WARCBytes))
	if c.Resumed > 0 {
		note += fmt.Sprintf("; %s finished after an interruption", progress.Count(c.Resumed))
	}
	if c.Earlier > 0 {
		note += fmt.Sprintf("; %s converted by an earlier run", progress.Count(c.Earlier))
	}
	return note
}

// ConvertReasons are why the exit status is not 0, as far as the
// conversion goes: the ARC files left as they are.
func ConvertReasons(c *report.Conversion) []string {
	if c == nil || c.Left == 0 || c.Estimated {
		return nil
	}
	return append([]string{fmt.Sprintf("%s ARC files left as they are, not converted (convert stage; see %s): the job went on with them as ARC files, whose duplicates stay",
		progress.Count(c.Left), workdir.RunLog)}, First(c.Why, 10)...)
}

// convertSummary writes the conversion's lines of the summary, if the
// job converted (or assessed converting) ARC files.
func convertSummary(w io.Writer, r *report.Report) {
	c := r.Conversion
	if c == nil {
		return
	}
	if c.Estimated {
		fmt.Fprintf(w, "ARC to WARC (estimated, nothing converted): %s ARC files, %s of them would become %s of WARC (%s records)\n",
			progress.Count(c.ARCFiles), progress.Bytes(c.ARCBytes), progress.Bytes(c.WARCBytes), progress.Count(c.Records))
		if c.Left > 0 {
			fmt.Fprintf(w, "  %s ARC files would be left as ARC (damaged, or not ARC): their duplicates stay\n", progress.Count(c.Left))
		}
		if c.Method != "" {
			fmt.Fprintf(w, "  %s\n", c.Method)
		}
		return
	}
	fmt.Fprintf(w, "ARC to WARC: %s ARC files: %s converted, %s adopted (their WARC was there), %s left as ARC; %s of ARC became %s of WARC (%s records)\n",
		progress.Count(c.ARCFiles), progress.Count(c.Converted), progress.Count(c.Adopted), progress.Count(c.Left),
		progress.Bytes(c.ARCBytes), progress.Bytes(c.WARCBytes), progress.Count(c.Records))
	switch {
	case c.Converted+c.Adopted == 0:
	case c.KeptIn != "":
		fmt.Fprintf(w, "  each converted ARC file was proved against its WARC, then moved to %s\n", c.KeptIn)
	default:
		fmt.Fprintf(w, "  each converted ARC file was proved against its WARC, then removed (the proofs: conversion.map)\n")
	}
	if c.Earlier > 0 {
		fmt.Fprintf(w, "  and %s ARC files converted by an earlier run\n", progress.Count(c.Earlier))
	}
}
