// Package xinuse tells whether the upper halves of this thread's vector
// registers are in use (dirty), as the processor tracks them (XINUSE,
// XGETBV with ECX=1): for tests of C code called through cgo, which must
// leave them clean, since every SSE instruction the Go code runs next on
// the thread waits on a merge of dirty upper halves.
package xinuse

// UpperDirty reports whether the upper halves of YMM0-15 or ZMM0-15 are
// in use on the calling thread (lock it: runtime.LockOSThread). ok is
// false where the processor cannot tell (no XGETBV with ECX=1, or no
// AVX).
func UpperDirty() (dirty, ok bool) { return upperDirty() }
