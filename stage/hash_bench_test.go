package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warcdedup/internal/progress"
	"warcdedup/internal/warctest"
	"warcdedup/warcsum"
)

type benchMessages struct{}

func (benchMessages) Error(error)         {}
func (benchMessages) Warn(error)          {}
func (benchMessages) Note(string, ...any) {}

// BenchmarkHashCompressed lists 8 files of 2,000 small responses each as
// a run's hash stages do (the manifests gzip-compressed, the cache kept):
// read, each file read and its entry made, and replayed, each file's entry
// checked and written out, as the hash again does for files the rewrite
// left or whose entries it derived.
func BenchmarkHashCompressed(b *testing.B) {
	dir := b.TempDir()
	var inputs []warcsum.Input
	for f := range 8 {
		var recs []string
		for i := range 2000 {
			recs = append(recs, warctest.Response(fmt.Sprintf("http://example.com/%d/page/%d?q=%d", f, i, i*7919),
				"2024-01-01T00:00:00Z", strings.Repeat(fmt.Sprint(i%500), 50)))
		}
		name := fmt.Sprintf("f%d.warc.gz", f)
		path := warctest.WriteFile(b, dir, name, warctest.Gzip(recs...))
		inputs = append(inputs, warcsum.Input{Path: path, Name: name, Size: fileSize(b, path)})
	}
	hash := func(b *testing.B, cache string, i int) {
		h := Hash{Inputs: inputs, Jobs: 2, Cache: cache, Compress: true,
			Manifest: filepath.Join(b.TempDir(), fmt.Sprint("m", i)), Facts: filepath.Join(b.TempDir(), fmt.Sprint("f", i)),
			Messages: benchMessages{}, Meter: progress.Discard}
		if _, err := h.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("read", func(b *testing.B) {
		cpu := startCPU()
		for i := range b.N {
			hash(b, filepath.Join(b.TempDir(), fmt.Sprint("cache", i)), i)
		}
		cpu.report(b)
	})
	b.Run("replayed", func(b *testing.B) {
		cache := filepath.Join(b.TempDir(), "cache")
		hash(b, cache, -1)
		b.ResetTimer()
		cpu := startCPU()
		for i := range b.N {
			hash(b, cache, i)
		}
		cpu.report(b)
	})
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// cpuClock is the process's CPU time (user and system) since it started:
// on a shared machine it moves less with the load than the elapsed time.
type cpuClock time.Duration

func startCPU() cpuClock {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpuClock(time.Duration(ru.Utime.Nano() + ru.Stime.Nano()))
}

// report gives the CPU time an op took since c.
func (c cpuClock) report(b *testing.B) {
	now := startCPU()
	b.ReportMetric(float64(time.Duration(now-c).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
