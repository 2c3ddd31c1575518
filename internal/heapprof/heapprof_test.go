package heapprof

import (
	"fmt"
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
	// The stages are numbered in the process (a test run again counts on).
	first, second := strings.Split(lines[0], "\t"), strings.Split(lines[1], "\t")
	n, _ := strconv.Atoi(first[0])
	if len(first) != 4 || len(second) != 4 || first[1] != "holds 64 MB" || second[1] != "holds nothing" || second[0] != fmt.Sprintf("%02d", n+1) {
		t.Fatalf("stages.tsv:\n%s", data)
	}
	if rss, live := mb(lines[0], 2), mb(lines[0], 3); rss < 64 || live < 64 {
		t.Errorf("the stage that held 64 MB: peak RSS %.1f MB, live heap %.1f MB", rss, live)
	}
	if rss, live := mb(lines[1], 2), mb(lines[1], 3); rss >= 64 || live >= 64 {
		t.Errorf("the stage that held nothing: peak RSS %.1f MB, live heap %.1f MB (the first stage's peak?)", rss, live)
	}
	for _, f := range []string{first[0] + "-holds-64-MB.heap", second[0] + "-holds-nothing.heap"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	t.Logf("stages.tsv:\n%s", data)
}
