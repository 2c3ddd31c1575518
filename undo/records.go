package undo

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"warcdedup/dedup"
	"warcdedup/report"
	"warcdedup/workdir"
)

// keepRecords keeps an undo's records as a run's (runs/TIME-undo: undo.json
// and the fixity list of the files it replaced) and brings the work
// directory's up to date: the fixity list, the dependencies (the undo's
// listing of the collection, made before it restored, less the revisits
// it restored) and the report's list of runs. Records that cannot be
// brought up to date (a damaged rewrite log) change nothing the undo did:
// the exit status is 1, with why.
func keepRecords(ctx context.Context, wd *workdir.Dir, params dedup.Params, res *Result, from int64, start time.Time, crawl bool) {
	problem := func(err error) {
		res.Exit = max(res.Exit, 1)
		res.ExitReason = append(res.ExitReason, "the work directory's fixity.tsv, deps.tsv and report were not brought up to date: "+err.Error())
	}
	rel, err := dedup.NewRunDir(wd, start, "undo")
	if err != nil {
		problem(err)
		return
	}
	if err := dedup.WriteUndoRecords(ctx, wd, rel, from, crawl); err != nil {
		problem(err)
	}
	own := filepath.Join(wd.File(rel), workdir.UndoStatsFile)
	if err := workdir.WriteJSON(own, res); err != nil {
		problem(err)
		return
	}
	body := &report.Report{Title: "Deduplication of " + strings.Join(params.Collections, ", "), Generated: start.UTC(), Mode: "undo",
		Collections: params.Collections, Policy: params.Policy, Algorithm: params.Algorithm}
	if err := dedup.WriteCollectionReport(ctx, wd, body); err != nil {
		problem(err)
		workdir.WriteJSON(own, res)
	}
}
