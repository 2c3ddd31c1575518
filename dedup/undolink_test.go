package dedup_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

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

// TestUndoResultHasEveryFieldTheTestsRead proves that each field of
// dedup.UndoResult, the run's tests' copy of what they read of an undo's
// result through its JSON, is a field of undo.Result of the same name
// and type that its JSON names so: a field of undo.Result renamed,
// retyped or dropped would otherwise leave the copy's field zero, and
// every test reading it would pass on a zero it did not check.
func TestUndoResultHasEveryFieldTheTestsRead(t *testing.T) {
	copied, real := reflect.TypeFor[dedup.UndoResult](), reflect.TypeFor[undo.Result]()
	for i := range copied.NumField() {
		f := copied.Field(i)
		g, ok := real.FieldByName(f.Name)
		switch {
		case !ok:
			t.Errorf("dedup.UndoResult.%s: undo.Result has no field %s", f.Name, f.Name)
		case g.Type != f.Type:
			t.Errorf("dedup.UndoResult.%s is a %v; undo.Result's is a %v", f.Name, f.Type, g.Type)
		default:
			name, _, _ := strings.Cut(g.Tag.Get("json"), ",")
			if name == "-" || name != "" && !strings.EqualFold(name, f.Name) {
				t.Errorf("undo.Result.%s is %q in its JSON: dedup.UndoResult.%s reads nothing", f.Name, name, f.Name)
			}
		}
	}
}
