package replica

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"warcdedup/dedup"
	"warcdedup/digest"
	"warcdedup/internal/progress"
	"warcdedup/migrate"
	"warcdedup/policy"
	"warcdedup/scripts/gen"
	"warcdedup/workdir"
)

// The test binary re-executed as a commit to kill: REPLICA_CHILD holds
// "COLLECTION COPY WORKDIR N", N the file after which it kills itself.
func TestMain(m *testing.M) {
	if arg := os.Getenv("REPLICA_CHILD"); arg != "" {
		a := strings.Split(arg, " ")
		n, _ := strconv.Atoi(a[3])
		done := 0
		opt := Options{Collection: a[0], Copy: a[1],
			Hook: func(string) {
				if done++; done == n {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
			}}
		changes, err := Changes(filepath.Join(a[2], workdir.LogFile), filepath.Join(a[2], migrate.MapFile))
		if err == nil {
			_, err = Commit(context.Background(), opt, changes)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// job makes a mostly-ARC collection and its second copy, and runs the
// legacy job on the first: conversion in place, then deduplication. It
// returns the collection, the copy and the work directory.
func job(t *testing.T) (string, string, string) {
	t.Helper()
	dir := t.TempDir()
	coll, copyDir, wd := filepath.Join(dir, "coll"), filepath.Join(dir, "copy"), filepath.Join(dir, "work")
	_, err := gen.Write(coll, gen.Config{Files: 6, Records: 300, DupRate: 0.4, Seed: 9, MeanPayload: 4 << 10,
		Formats: []gen.Format{gen.ARCGz, gen.ARC, gen.WARC10Gz}, NonCandidates: true})
	if err != nil {
		t.Fatal(err)
	}
	copyTree(t, coll, copyDir)
	c := &migrate.Converter{Options: migrate.Options{WorkDir: wd}}
	res, err := c.Run(context.Background(), coll, nil)
	if err != nil || res.Count(migrate.Converted) != 4 {
		t.Fatalf("conversion: %v %+v", err, res)
	}
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{coll}, WorkDir: wd, Jobs: 2, Algorithm: digest.SHA1,
		Policy: policy.Replay, Display: progress.NewPlain(io.Discard, "test")})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("job: %v", err)
	}
	return coll, copyDir, wd
}

func TestCommitBringsTheCopyUpToDate(t *testing.T) {
	coll, copyDir, wd := job(t)
	opt := Options{Collection: coll, Copy: copyDir}
	changes, err := Changes(filepath.Join(wd, workdir.LogFile), filepath.Join(wd, migrate.MapFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Commit(context.Background(), opt, changes)
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied < 4 || res.Removed != 4 {
		t.Errorf("%d copied, %d ARC files removed: %+v", res.Copied, res.Removed, res.Files)
	}
	sameTree(t, coll, copyDir)
	// Again: everything up to date, nothing copied.
	res, err = Commit(context.Background(), opt, changes)
	if err != nil || res.Copied != 0 || res.Removed != 0 || res.UpToDate != len(changes) {
		t.Errorf("second commit: %v: %+v", err, res)
	}
}

// TestCommitRefusesATamperedCopy: a replaced file changed in the copy
// (one byte), or a converted ARC changed there, refuses the whole commit
// before anything is copied.
func TestCommitRefusesATamperedCopy(t *testing.T) {
	coll, copyDir, wd := job(t)
	opt := Options{Collection: coll, Copy: copyDir}
	changes, err := Changes(filepath.Join(wd, workdir.LogFile), filepath.Join(wd, migrate.MapFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, victim := range []string{"gen-00002.warc.gz", "gen-00000.arc.gz"} {
		name := filepath.Join(copyDir, victim)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 1
		os.WriteFile(name, b, 0o644)
		before := tree(t, copyDir)
		res, err := Commit(context.Background(), opt, changes)
		if !errors.Is(err, ErrRefused) || res.Refused != 1 || !strings.Contains(res.Files[0].Reason, victim) {
			t.Errorf("%s tampered with: %v, %+v", victim, err, res)
		}
		if after := tree(t, copyDir); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("%s tampered with: the copy changed", victim)
		}
		b[len(b)/2] ^= 1
		os.WriteFile(name, b, 0o644)
	}
}

// TestCommitKilled kills commits with SIGKILL after a random number of
// files (and before any), checking after each that every file of the copy
// is a version the job knew and that no converted ARC left the copy before
// its WARC was there; a rerun then ends with the copy equal to the
// collection.
func TestCommitKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes: not in -short")
	}
	coll, copyDir, wd := job(t)
	changes, err := Changes(filepath.Join(wd, workdir.LogFile), filepath.Join(wd, migrate.MapFile))
	if err != nil {
		t.Fatal(err)
	}
	pristine := filepath.Join(t.TempDir(), "pristine")
	copyTree(t, copyDir, pristine)
	exe, _ := os.Executable()
	rng := rand.New(rand.NewPCG(7, 7))
	kills := 0
	for round := 0; kills < 12; round++ {
		os.RemoveAll(copyDir)
		copyTree(t, pristine, copyDir)
		for try := 0; ; try++ {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("REPLICA_CHILD=%s %s %s %d", coll, copyDir, wd, 1+rng.IntN(len(changes))))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
				kills++
				checkCopy(t, changes, copyDir)
				continue
			}
			if err != nil {
				t.Fatalf("round %d: %v: %s", round, err, out)
			}
			break
		}
		sameTree(t, coll, copyDir)
	}
	t.Logf("%d SIGKILLs; every commit ended with the copy equal to the collection", kills)
}

// checkCopy: each changed file of the copy is one of its versions, and a
// converted ARC is gone only where its WARC is there in its last version.
func checkCopy(t *testing.T, changes []*Change, copyDir string) {
	t.Helper()
	last := map[string]Version{}
	for _, c := range changes {
		last[c.Name] = c.Last()
	}
	for _, c := range changes {
		v, err := sum(filepath.Join(copyDir, c.Name), nil, algorithms(c.Versions))
		switch {
		case errors.Is(err, fs.ErrNotExist) && c.Gone:
			w := strings.TrimSuffix(strings.TrimSuffix(c.Name, ".gz"), ".arc") + ".warc.gz"
			if have, err := sum(filepath.Join(copyDir, w), nil, algorithms([]Version{last[w]})); err != nil || !have.is(last[w]) {
				t.Fatalf("%s left the copy before its WARC %s was there (%v)", c.Name, w, err)
			}
		case errors.Is(err, fs.ErrNotExist) && c.From != "":
		case err != nil:
			t.Fatal(err)
		default:
			if !v.in(c.Versions) {
				t.Fatalf("%s: the copy holds a version the job never had", c.Name)
			}
		}
	}
}

func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(s[:])
		return nil
	})
	return out
}

func sameTree(t *testing.T, a, b string) {
	t.Helper()
	ta, tb := tree(t, a), tree(t, b)
	for name, s := range ta {
		if tb[name] != s {
			t.Errorf("%s differs in the copy", name)
		}
	}
	for name := range tb {
		if _, ok := ta[name]; !ok {
			t.Errorf("%s is only in the copy", name)
		}
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
