package refs

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"warcdedup/internal/rewritetest"
	"warcdedup/originals"
	"warcdedup/rewritelog"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/scripts/gen"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// warcrefsBinary builds cmd/warcrefs once per test process.
func warcrefsBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "refs-test-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "warcrefs")
		out, err := exec.Command("go", "build", "-o", binPath, "warcdedup/cmd/warcrefs").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func writeManifest(t *testing.T, lines []manifest.Line) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dups.manifest")
	if err := os.WriteFile(p, rewritetest.ManifestText(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func hashFile(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func hashDir(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	m := map[string][32]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m[e.Name()] = hashFile(t, filepath.Join(dir, e.Name()))
	}
	return m
}

// TestCrashSafety kills warcrefs --in-place (SIGKILL) at instants spread
// over a whole run and checks that every file is then either its old self
// or its complete new version, byte for byte, whatever else is left
// (temporary files); and that running again finishes the job and removes
// the temporary files of the files it processes.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: kills warcrefs 25 times")
	}
	start := time.Now()
	bin := warcrefsBinary(t)
	c := generate(t, gen.Config{Files: 4, Records: 1300, DupRate: 0.5, Seed: 61, MeanPayload: 30 << 10,
		MaxPayload: 1 << 20, Formats: warcFormats, NonCandidates: true})
	if c.res.TotalBytes < 20<<20 || c.res.TotalBytes > 50<<20 {
		t.Fatalf("the collection has %d bytes, the test wants 20 to 50 MB", c.res.TotalBytes)
	}
	mf := writeManifest(t, c.lines)
	originals := writeManifest(t, c.all) // sorted on digest
	names := c.res.Names
	origHash := hashDir(t, c.dir)
	logs := t.TempDir()
	args := func(dir, log string) []string {
		return []string{"--in-place", "--root", dir, "-i", mf, "--originals", originals, "--log", filepath.Join(logs, log), "-q", "-j", "2"}
	}

	// The complete rewrite, and how long it takes.
	ref := t.TempDir()
	rewritetest.CopyDir(t, c.dir, ref)
	t0 := time.Now()
	if out, err := exec.Command(bin, args(ref, "ref.log")...).CombinedOutput(); err != nil {
		t.Fatalf("warcrefs: %v\n%s", err, out)
	}
	full := time.Since(t0)
	refHash := hashDir(t, ref)
	for _, n := range names {
		if refHash[n] == origHash[n] {
			t.Fatalf("the complete run left %s as it was", n)
		}
	}
	t.Logf("collection: %s; a complete run takes %v; setup took %v", c.res.Summary(), full, time.Since(start))

	const runs = 25
	dir := filepath.Join(t.TempDir(), "coll")
	states := map[string]int{}
	for i := range runs {
		delay := full * time.Duration(i) / (runs - 1)
		os.RemoveAll(dir)
		rewritetest.CopyDir(t, c.dir, dir)
		log := fmt.Sprintf("run-%d.log", i)
		cmd := exec.Command(bin, args(dir, log)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		var ee *exec.ExitError
		killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled()
		if err != nil && !killed {
			t.Fatalf("run %d: warcrefs: %v\n%s", i, err, stderr.Bytes())
		}

		// Every file is old or new, never in between.
		got := hashDir(t, dir)
		newFiles, temps := 0, 0
		for name, h := range got {
			switch {
			case strings.HasPrefix(name, atomicfile.TempPrefix):
				temps++
			case h == refHash[name]:
				newFiles++
			case h != origHash[name]:
				t.Errorf("run %d, killed after %v: %s is neither the old nor the new version", i, delay, name)
			}
		}
		for _, n := range names {
			if _, ok := got[n]; !ok {
				t.Errorf("run %d, killed after %v: %s is gone", i, delay, n)
			}
		}
		state := fmt.Sprintf("%d of %d files new, %d temporary files", newFiles, len(names), temps)
		if !killed {
			state += " (finished before the kill)"
		}
		states[state]++

		// A leftover of a run killed at another instant, for a file the
		// next run processes, and a file that is no leftover of warcrefs.
		leftover := filepath.Join(dir, atomicfile.TempPrefix+names[i%len(names)]+"-1234567")
		other := filepath.Join(dir, atomicfile.TempPrefix+"notes.txt")
		os.WriteFile(leftover, []byte("partial"), 0o600)
		os.WriteFile(other, []byte("not warcrefs's"), 0o600)

		// Running again, with the same log, completes the job: the
		// originals the killed run moved are found through the log.
		if out, err := exec.Command(bin, args(dir, log)...).CombinedOutput(); err != nil {
			t.Fatalf("run %d: the run after the kill: %v\n%s", i, err, out)
		}
		// The log lists every replaced file once, whether the kill came
		// before, during or after its entries were written.
		checkLogOnce(t, filepath.Join(logs, log), names)
		if err := os.Remove(other); err != nil {
			t.Errorf("run %d: a file warcrefs did not make was removed: %v", i, err)
		}
		got = hashDir(t, dir)
		for name, h := range got {
			switch {
			case strings.HasPrefix(name, atomicfile.TempPrefix):
				t.Errorf("run %d: %s left after the second run", i, name)
			case h != refHash[name]:
				t.Errorf("run %d: %s differs from the complete rewrite after the second run", i, name)
			}
		}
		if len(got) != len(names) {
			t.Errorf("run %d: %d files after the second run, want %d", i, len(got), len(names))
		}
		if t.Failed() {
			break
		}
	}
	for s, n := range states {
		t.Logf("%2d kills left %s", n, s)
	}
	t.Logf("%d kills in %v", len(states), time.Since(start).Round(time.Second))
}

// checkLogOnce checks that the log at path has one "# file" line for each
// of names, and no journal is left.
func checkLogOnce(t *testing.T, path string, names []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if fr, ok, err := rewritelog.ParseFixity([]byte(line)); ok {
			if err != nil {
				t.Fatal(err)
			}
			seen[fr.File]++
		}
	}
	for _, n := range names {
		if seen[n] != 1 {
			t.Errorf("%s: %s is listed %d times, want once", path, n, seen[n])
		}
	}
	if _, err := os.Stat(path + ".pending"); err == nil {
		t.Errorf("%s.pending left after a finished run", path)
	}
}

// TestCommandExitStatus runs the command on a clean manifest (status 0), a
// stale one (status 1, the refused file named with the offset, the others
// rewritten) and an unsorted one (status 2).
func TestCommandExitStatus(t *testing.T) {
	bin := warcrefsBinary(t)
	c := generate(t, gen.Config{Files: 2, Records: 60, DupRate: 0.5, Seed: 71, MeanPayload: 3 << 10,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}})
	stale := append([]manifest.Line(nil), c.dups...)
	stale[0].Digest = rewritetest.FormatDigest(stale[0].Algorithm(), []byte("changed"))
	unsorted := append([]manifest.Line(nil), c.dups...)
	unsorted[0], unsorted[1] = unsorted[1], unsorted[0]
	originalsFile := writeManifest(t, c.all)
	tests := []struct {
		name    string
		lines   []manifest.Line
		status  int
		stderr  string
		changed int // files rewritten
	}{
		{"a clean manifest", c.dups, 0, "", 2},
		{"a stale line", stale, 1, fmt.Sprintf("warcrefs: error: %s: offset %d: left untouched: %s", stale[0].File, stale[0].Offset, originals.ErrNoOriginal), 1},
		{"an unsorted manifest", unsorted, 2, "not sorted by file, offset", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rewritetest.CopyDir(t, c.dir, dir)
			cmd := exec.Command(bin, "--in-place", "--root", dir, "-i", writeManifest(t, tt.lines), "--originals", originalsFile, "-q")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tt.status || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit status %d, stderr %q; want %d and %q", status, stderr.String(), tt.status, tt.stderr)
			}
			changed := 0
			for name, h := range hashDir(t, dir) {
				if h != hashFile(t, filepath.Join(c.dir, name)) {
					changed++
				}
			}
			if changed != tt.changed {
				t.Errorf("%d files changed, want %d", changed, tt.changed)
			}
		})
	}
}
