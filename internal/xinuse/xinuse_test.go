package xinuse

import (
	"runtime"
	"testing"
)

// TestUpperDirtyAnswers: where the processor tells, Go code that has
// used no AVX since the last cgo call leaves the upper halves clean (Go's
// own AVX code clears them after it), so that a test finding them dirty
// after a C call blames the C code.
func TestUpperDirtyAnswers(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dirty, ok := UpperDirty()
	if !ok {
		t.Skip("the processor does not tell (no XGETBV with ECX=1 or no AVX)")
	}
	if dirty {
		t.Errorf("upper halves in use in Go code that used none")
	}
}
