package dedup_test

import (
	"context"
	"encoding/json"

	"warcdedup/dedup"
	"warcdedup/undo"
)

// The undo the run's tests call (dedup.Undo): package undo, which
// imports dedup, may be imported by its external tests only.
func init() {
	dedup.UndoJob = func(ctx context.Context, opt dedup.UndoOptions) ([]byte, error) {
		res, err := undo.Run(ctx, undo.Options{Paths: opt.Paths, WorkDir: opt.WorkDir, Index: opt.Index, All: opt.All, Jobs: opt.Jobs, CDX: opt.CDX})
		if res == nil {
			return nil, err
		}
		data, jerr := json.Marshal(res)
		if jerr != nil {
			return nil, jerr
		}
		return data, err
	}
}
