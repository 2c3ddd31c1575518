package refs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"warcdedup/atomicfile"
	"warcdedup/inplace"
	"warcdedup/internal/rewritetest"
	"warcdedup/internal/tmpfstest"
	"warcdedup/scripts/gen"
)

// checkWholeFileRefusals checks that exactly the files named were refused,
// as whole files, for a reason that wraps want.
func checkWholeFileRefusals(t *testing.T, o *outcome, files []string, want error) {
	t.Helper()
	if len(o.refused) != len(files) || o.stats.Refused != int64(len(files)) {
		t.Errorf("%d refusals (stats %+v), want %d: %v", len(o.refused), o.stats, len(files), o.refused)
	}
	for _, f := range files {
		re := o.refusedFor(f)
		if re == nil {
			t.Errorf("%s was not refused", f)
			continue
		}
		if re.Offset != -1 || !errors.Is(re, want) || !strings.Contains(re.Error(), f) {
			t.Errorf("refusal %q (offset %d), want one of the whole file for %v", re, re.Offset, want)
		}
	}
}

// TestReadOnlyTarget rewrites a collection of which some files lie on a
// read-only file system: those are refused and keep their bytes, the
// others are rewritten; an output directory on a read-only file system
// refuses every file; a dry run works on a read-only file system.
func TestReadOnlyTarget(t *testing.T) {
	c := generate(t, gen.Config{Files: 4, Records: 120, DupRate: 0.5, Seed: 31, MeanPayload: 3 << 10,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}, NonCandidates: true})
	orig := rewritetest.Snapshot(t, c.dir)
	ref := t.TempDir()
	rewritetest.CopyDir(t, c.dir, ref)
	full := mustRun(t, Rewriter{Roots: []string{ref}, InPlace: true}, c.lines)
	rewritten := rewritetest.Snapshot(t, ref)

	ro := tmpfstest.Mount(t, "64m")
	rw := t.TempDir()
	names := c.res.Names
	onRO := names[:2]
	for i, n := range names {
		dst := rw
		if i < 2 {
			dst = ro
		}
		if err := os.WriteFile(filepath.Join(dst, n), orig[n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmpfstest.RemountReadOnly(t, ro)

	t.Run("dry run", func(t *testing.T) {
		o := mustRun(t, Rewriter{Roots: []string{ro, rw}, InPlace: true, DryRun: true}, c.lines)
		if o.stats != full.stats {
			t.Errorf("stats %+v, want %+v", o.stats, full.stats)
		}
	})
	t.Run("in place", func(t *testing.T) {
		o := run(t, Rewriter{Roots: []string{ro, rw}, InPlace: true, Jobs: 2}, c.lines)
		if o.err != nil {
			t.Fatalf("Run: %v", o.err)
		}
		checkWholeFileRefusals(t, o, onRO, syscall.EROFS)
		if o.stats.Rewritten != int64(len(names)-len(onRO)) {
			t.Errorf("stats %+v, want %d files rewritten", o.stats, len(names)-len(onRO))
		}
		wantRO, wantRW := map[string][]byte{}, map[string][]byte{}
		for i, n := range names {
			if i < 2 {
				wantRO[n] = orig[n]
			} else {
				wantRW[n] = rewritten[n]
			}
		}
		rewritetest.SameFiles(t, "read-only file system", rewritetest.Snapshot(t, ro), wantRO)
		rewritetest.SameFiles(t, "writable directory", rewritetest.Snapshot(t, rw), wantRW)
	})
	t.Run("a second run has nothing to do", func(t *testing.T) {
		done := tmpfstest.Mount(t, "64m")
		rewritetest.CopyDir(t, ref, done)
		tmpfstest.RemountReadOnly(t, done)
		o := mustRunLogged(t, Rewriter{Roots: []string{done}, InPlace: true, Jobs: 2}, c.lines, c.lines, full.tl)
		want := Stats{Lines: full.stats.Lines, Files: full.stats.Files, Untouched: full.stats.Files, AlreadyRevisit: full.stats.Revisits, NotSmaller: full.stats.NotSmaller}
		if o.stats != want {
			t.Errorf("stats %+v, want %+v", o.stats, want)
		}
	})
	t.Run("output dir", func(t *testing.T) {
		o := run(t, Rewriter{Roots: []string{c.dir}, OutputDir: filepath.Join(ro, "out"), Jobs: 2}, c.lines)
		if o.err != nil {
			t.Fatalf("Run: %v", o.err)
		}
		checkWholeFileRefusals(t, o, names, syscall.EROFS)
		rewritetest.SameFiles(t, "source", rewritetest.Snapshot(t, c.dir), orig)
	})
}

// TestDiskFull writes into an output directory on a 1 MB file system: the
// file too big for it stops the run (a full disk fails every later file
// too) and leaves nothing partial there, not even a temporary file (a
// small file written meanwhile by the walk beside it is whole); once
// there is room, the same run writes everything.
func TestDiskFull(t *testing.T) {
	src := t.TempDir()
	big, err := gen.Write(src, gen.Config{Prefix: "big", Files: 1, Records: 250, DupRate: 0.2, Seed: 41,
		MeanPayload: 24 << 10, MaxPayload: 256 << 10, Formats: []gen.Format{gen.WARC10Gz}})
	if err != nil {
		t.Fatal(err)
	}
	small, err := gen.Write(src, gen.Config{Prefix: "small", Files: 3, Records: 60, DupRate: 0.5, Seed: 42,
		MeanPayload: 2 << 10, MaxPayload: 8 << 10, Formats: []gen.Format{gen.WARC10, gen.WARC11Gz}})
	if err != nil {
		t.Fatal(err)
	}
	lines := slices.Clone(append(big.Expected, small.Expected...))
	rewritetest.SortByFile(lines)
	orig := rewritetest.Snapshot(t, src)
	if n := len(orig[big.Names[0]]); n < 2<<20 {
		t.Fatalf("the big file has %d bytes, the test needs more than 2 MB", n)
	}
	ref := t.TempDir()
	mustRun(t, Rewriter{Roots: []string{src}, OutputDir: ref}, lines)
	want := rewritetest.Snapshot(t, ref)
	delete(want, big.Names[0])
	total := 0
	for _, b := range want {
		total += len(b)
	}
	if total > 700<<10 || len(want) != 3 {
		t.Fatalf("the small files' new versions are %d files of %d bytes: they must fit 1 MB", len(want), total)
	}

	out := tmpfstest.Mount(t, "1m")
	o := run(t, Rewriter{Roots: []string{src}, OutputDir: out, Jobs: 1}, lines)
	var we *inplace.WriteError
	if !errors.As(o.err, &we) || we.File != big.Names[0] || !errors.Is(o.err, syscall.ENOSPC) {
		t.Fatalf("Run: %v, want a *inplace.WriteError of %s wrapping ENOSPC", o.err, big.Names[0])
	}
	if len(o.refused) != 0 {
		t.Errorf("refusals %v, want none: the run stopped", o.refused)
	}
	// Nothing partial: a small file the other walk finished before the
	// big one failed may be there, whole; no temporary file is.
	for name, b := range rewritetest.Snapshot(t, out) {
		if w, ok := want[name]; !ok || !bytes.Equal(b, w) {
			t.Errorf("the full output dir holds %s (%d bytes), which is not a whole new version of a small file", name, len(b))
		}
	}
	rewritetest.SameFiles(t, "source", rewritetest.Snapshot(t, src), orig)

	// With room, the same run finishes.
	roomy := t.TempDir()
	mustRun(t, Rewriter{Roots: []string{src}, OutputDir: roomy}, lines)
	rewritetest.SameFiles(t, "the output dir with room", rewritetest.Snapshot(t, roomy), rewritetest.Snapshot(t, ref))
}

// memfdCreate is the memfd_create system call's number where known.
var memfdCreate = map[string]uintptr{"amd64": 319, "arm64": 279, "riscv64": 279, "loong64": 279, "386": 356}

// failingFile returns an *os.File, named name, whose writes fail (EPERM)
// once they would take it past n bytes: a memfd, grown to n bytes and
// sealed against growing.
func failingFile(t *testing.T, name string, n int64) *os.File {
	t.Helper()
	nr, ok := memfdCreate[runtime.GOARCH]
	if !ok {
		t.Skipf("memfd_create's number on %s is not known", runtime.GOARCH)
	}
	p, _ := syscall.BytePtrFromString("refs-test")
	const mfdAllowSealing, fAddSeals, fSealShrink, fSealGrow = 2, 1033, 2, 4
	fd, _, errno := syscall.Syscall(nr, uintptr(unsafe.Pointer(p)), mfdAllowSealing, 0)
	if errno != 0 {
		t.Skipf("memfd_create: %v", errno)
	}
	if err := syscall.Ftruncate(int(fd), n); err != nil {
		t.Fatal(err)
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, fAddSeals, fSealShrink|fSealGrow); errno != 0 {
		t.Skipf("sealing a memfd: %v", errno)
	}
	return os.NewFile(fd, name)
}

// TestWriteFailsAfterN makes the new version of one file fail to be
// written after n bytes, through the Rewriter's create hook: the file is
// refused with the write error and left untouched, its temporary file is
// removed, and the other files are rewritten.
func TestWriteFailsAfterN(t *testing.T) {
	c := generate(t, gen.Config{Files: 3, Records: 90, DupRate: 0.5, Seed: 51, MeanPayload: 8 << 10,
		Formats: []gen.Format{gen.WARC10, gen.WARC10Gz, gen.WARC11}})
	orig := rewritetest.Snapshot(t, c.dir)
	ref := t.TempDir()
	rewritetest.CopyDir(t, c.dir, ref)
	o := mustRun(t, Rewriter{Roots: []string{ref}, InPlace: true}, c.lines)
	rewritten := rewritetest.Snapshot(t, ref)
	for _, victim := range c.res.Names[:2] {
		newSize := int64(len(rewritten[victim]))
		var firstRevisit int64 = -1
		for _, e := range o.log {
			if e.File == victim && firstRevisit < 0 {
				firstRevisit = e.NewOffset
			}
		}
		for _, n := range []int64{0, 1, firstRevisit + 10, newSize / 2, newSize - 1} {
			t.Run(fmt.Sprintf("%s, writes fail after %d bytes", victim, n), func(t *testing.T) {
				dir := t.TempDir()
				rewritetest.CopyDir(t, c.dir, dir)
				var made []string
				rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 2}
				rw.create = func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error) {
					f, err := atomicfile.CreateIn(root, name, perm)
					if err != nil || path.Base(name) != victim {
						return f, err
					}
					// The temporary file stays on disk, its name on the
					// failing file, so that Abort must remove it.
					tmp := filepath.Join(root.Name(), filepath.Dir(name), filepath.Base(f.File.Name()))
					made = append(made, tmp)
					f.File.Close()
					f.File = failingFile(t, tmp, n)
					return f, nil
				}
				res := run(t, rw, c.lines)
				if res.err != nil {
					t.Fatalf("Run: %v", res.err)
				}
				if len(made) != 1 {
					t.Fatalf("the hook made %d temporary files for %s, want 1", len(made), victim)
				}
				checkWholeFileRefusals(t, res, []string{victim}, syscall.EPERM)
				want := map[string][]byte{}
				for name := range rewritten {
					want[name] = rewritten[name]
				}
				want[victim] = orig[victim]
				rewritetest.SameFiles(t, "after the run", rewritetest.Snapshot(t, dir), want)
			})
		}
	}
}
