package heapprof

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestStagePeaks proves that each stage's line in stages.tsv gives its
// own peak: a stage that held 64 MB reports at least that resident and
// live, and the stage after it, which held nothing, reports less than
// that, since the high-water mark is reset when a stage starts.
func TestStagePeaks(t *testing.T) {
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("no /proc/self/clear_refs")
	}
	dir := t.TempDir()
	t.Setenv(Env, dir)
	stop := Stage("holds 64 MB")
	held := make([]byte, 64<<20)
	for i := range held {
		held[i] = byte(i)
	}
	stop()
	runtime.KeepAlive(held)
	held = nil
	debug.FreeOSMemory()
	Stage("holds nothing")()
	data, err := os.ReadFile(filepath.Join(dir, "stages.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("stages.tsv:\n%s", data)
	}
	mb := func(line string, field int) float64 {
		f := strings.Split(line, "\t")
		v, err := strconv.ParseFloat(f[field], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return v
	}
	if !strings.HasPrefix(lines[0], "01\tholds 64 MB\t") || !strings.HasPrefix(lines[1], "02\tholds nothing\t") {
		t.Fatalf("stages.tsv:\n%s", data)
	}
	if rss, live := mb(lines[0], 2), mb(lines[0], 3); rss < 64 || live < 64 {
		t.Errorf("the stage that held 64 MB: peak RSS %.1f MB, live heap %.1f MB", rss, live)
	}
	if rss, live := mb(lines[1], 2), mb(lines[1], 3); rss >= 64 || live >= 64 {
		t.Errorf("the stage that held nothing: peak RSS %.1f MB, live heap %.1f MB (the first stage's peak?)", rss, live)
	}
	for _, f := range []string{"01-holds-64-MB.heap", "02-holds-nothing.heap"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	t.Logf("stages.tsv:\n%s", data)
}
