package jobtest

import (
	"os"
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
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path + ".old")
	if err != nil {
		t.Fatal(err)
	}
	b := &wacz.Rebuild{Source: p, Now: time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC), TempDir: t.TempDir()}
	_, err = b.Write(out)
	p.Close()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".old", path); err != nil {
		t.Fatal(err)
	}
}
