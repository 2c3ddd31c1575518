package dedup

import (
	"context"
	"encoding/json"
	"errors"

	"warcdedup/restore"
)

// The run's tests that undo what a run did as one of their steps call
// warcdedup undo (package undo) through Undo. Package undo imports this
// one, so these tests cannot import it: undolink_test.go, of the external
// test package, does, and sets UndoJob. What they read of the undo's
// result is its JSON, as the work directory's undo.json has it.

// UndoOptions are the undo's options these tests give (undo.Options).
type UndoOptions struct {
	Paths          []string
	WorkDir, Index string
	All            bool
	Jobs           int
	CDX            []string
}

// UndoResult is what these tests read of the undo's result (undo.Result).
type UndoResult struct {
	Files                 int
	Stats                 restore.Stats
	NothingToDo           bool
	Refused               []string
	Checked               int64
	Unrestored            []string
	Missing               []string
	BitExact, BytesDiffer int64
	StaleRequirers        []string
	Exit                  int
	ExitReason            []string
	Differ                []string
}

// UndoJob runs warcdedup undo with opt in this process and returns its
// result as JSON, nil for none (undo.Run's result and error).
var UndoJob func(ctx context.Context, opt UndoOptions) ([]byte, error)

// Undo is warcdedup undo with opt (undo.Run).
func Undo(ctx context.Context, opt UndoOptions) (*UndoResult, error) {
	if UndoJob == nil {
		return nil, errors.New("no undo linked into the tests (undolink_test.go)")
	}
	data, err := UndoJob(ctx, opt)
	if data == nil {
		return nil, err
	}
	var res UndoResult
	if jerr := json.Unmarshal(data, &res); jerr != nil {
		return nil, jerr
	}
	return &res, err
}
