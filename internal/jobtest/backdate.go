package jobtest

import (
	"testing"
	"time"

	"warcdedup/wacz"
)

// Backdate writes the package at path anew, its "modified" and its
// metadata files' ZIP times a day long past: a package a test wrote anew
// moments before (RequireBy) must not have the time that a rewrite of it
// in the same second gives it, or a test of what comes back bit for bit
// passes by chance.
func Backdate(t testing.TB, path string) {
	t.Helper()
	Rewrite(t, path, func(b *wacz.Rebuild) { b.Now = time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC) })
}
