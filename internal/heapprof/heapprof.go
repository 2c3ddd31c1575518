// Package heapprof writes heap profiles of a job's stages, for finding
// what grows with the number of records, files or crawls (issue 22's
// scale work): with WARCDEDUP_HEAPPROFILE set to a directory, each stage
// watched writes there the profile of its largest live heap, as
// NN-STAGE.heap (go tool pprof -sample_index=inuse_space), and appends
// to stages.tsv the stage's peak resident set and largest live heap (on
// Linux the kernel's high-water mark, VmHWM, reset when the stage starts:
// the process's peak within the stage, not before it). It is a tool for
// profiling, off unless the variable is set, and costs nothing then.
package heapprof

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env is the variable naming the directory profiles go to.
const Env = "WARCDEDUP_HEAPPROFILE"

// interval is how often the live heap is looked at; a profile is written
// when it has grown by a tenth since the last one of the stage.
const interval = 250 * time.Millisecond

var (
	mu  sync.Mutex
	seq int
)

// Stage starts watching the stage name, if profiles are asked for; the
// function returned stops it (and writes the stage's profile at its
// end, so that a stage whose heap never grew past its start still has
// one). Errors of writing a profile are printed to stderr: profiling
// never stops a job.
func Stage(name string) (stop func()) {
	dir := os.Getenv(Env)
	if dir == "" {
		return func() {}
	}
	mu.Lock()
	seq++
	n := seq
	file := filepath.Join(dir, fmt.Sprintf("%02d-%s.heap", n, slug(name)))
	mu.Unlock()
	resetPeakRSS()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var peak, largest uint64
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				if peak == 0 {
					write(file)
				}
				metrics.Read(sample)
				largest = max(largest, sample[0].Value.Uint64())
				note(dir, n, name, largest)
				return
			case <-t.C:
			}
			metrics.Read(sample)
			live := sample[0].Value.Uint64()
			largest = max(largest, live)
			if live > peak+peak/10 {
				peak = live
				write(file)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// write writes the heap profile of now to file, replacing the stage's
// earlier one.
func write(file string) {
	runtime.GC() // the profile's in-use figures are those of the last GC
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Env, err)
	}
}

// resetPeakRSS sets the process's VmHWM back to its resident set now
// (Linux 4.0 on; elsewhere, or refused, the peak stays the process's).
func resetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is the process's VmHWM in bytes, 0 where unknown.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// note appends the stage's peak resident set and largest live heap to
// dir/stages.tsv: NN, stage, peak RSS MB, live heap MB.
func note(dir string, n int, name string, live uint64) {
	f, err := os.OpenFile(filepath.Join(dir, "stages.tsv"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "%02d\t%s\t%.1f\t%.1f\n", n, name, float64(peakRSS())/(1<<20), float64(live)/(1<<20))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Env, err)
	}
}

// slug is a stage's name as a file name.
func slug(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, name)
}
