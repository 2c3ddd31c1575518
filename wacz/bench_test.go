package wacz

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"warcdedup/scripts/gen"
)

// benchPackage is a package of generated WARC files (about 64 MB), and
// copies of its WARC members to replace them with.
func benchPackage(b *testing.B) (*Package, map[string]Replacement, string) {
	b.Helper()
	dir := b.TempDir()
	res, err := gen.Write(dir, gen.Config{Files: 4, Records: 3000, DupRate: 0.4, Seed: 1, MeanPayload: 20 << 10, Formats: []gen.Format{gen.WARC10Gz}})
	if err != nil {
		b.Fatal(err)
	}
	var warcs []string
	for _, n := range res.Names {
		warcs = append(warcs, filepath.Join(dir, n))
	}
	f, err := os.Create(filepath.Join(dir, "bench.wacz"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Create(f, CreateOptions{WARCs: warcs, ZipNum: true, TempDir: dir}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	p, err := Open(f.Name())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	repl := map[string]Replacement{}
	for _, w := range warcs {
		repl["archive/"+filepath.Base(w)] = Replacement{Path: w}
	}
	return p, repl, dir
}

// BenchmarkRebuild rebuilds a package with every WARC member replaced
// (by itself) and its ZipNum index brought through an (empty) log
// update: the copy, hashing and index pass a rewrite of it costs.
func BenchmarkRebuild(b *testing.B) {
	p, repl, dir := benchPackage(b)
	b.SetBytes(p.Size)
	start := cpuTime()
	for b.Loop() {
		f, err := os.Create(filepath.Join(dir, "new.wacz"))
		if err != nil {
			b.Fatal(err)
		}
		moves, err := PackageMoves(emptyLog(), "bench.wacz", nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := (&Rebuild{Source: p, Replace: repl, Index: NewLogUpdate(moves), TempDir: dir}).Write(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	reportCPU(b, start, p.Size)
}

// BenchmarkRebuildChecked is a package's rewrite as a run does it
// (stage.PackageRewrite): every WARC member replaced, the index written
// fresh, the new package read back and checked, its CRC-32 as read back
// equal to the one taken as it was written. The check: "written", a
// run's (each member's CRC-32 and size, datapackage.json against the
// SHA-256 taken as written: CheckOptions.Written) of a package no other
// requires, its replaced members copied by the kernel; "written-required",
// of one another requires, the whole file's SHA-256 (for its requires
// entry) taken by the check's read back, as a run takes it;
// "written-required-by-writer", the same with the SHA-256 taken as the
// package is written (every member copied through this process, the
// run's way before); "records", the checker that trusts nothing of the
// writer (every member's SHA-256, the index made again from the
// replaced members).
func BenchmarkRebuildChecked(b *testing.B) {
	p, repl, dir := benchPackage(b)
	for _, check := range []string{"written", "written-required", "written-required-by-writer", "records"} {
		b.Run(check, func(b *testing.B) {
			b.SetBytes(p.Size)
			start := cpuTime()
			for b.Loop() {
				f, err := os.Create(filepath.Join(dir, "new.wacz"))
				if err != nil {
					b.Fatal(err)
				}
				byWriter := check == "written-required-by-writer"
				res, err := (&Rebuild{Source: p, Replace: repl, FreshIndex: true, TempDir: dir, NoPackageSHA256: !byWriter}).Write(f)
				if err != nil {
					b.Fatal(err)
				}
				np, err := NewPackage(f, res.Size, "new.wacz")
				if err != nil {
					b.Fatal(err)
				}
				opt := CheckOptions{Written: res, TempDir: dir, PackageSHA256: check == "written-required"}
				if (len(res.SHA256) == 32) != byWriter || (len(res.CopiedFrom) > 0) == byWriter {
					b.Fatalf("whole-file SHA-256 %x, members copied by the kernel %v", res.SHA256, res.CopiedFrom)
				}
				if check == "records" {
					opt = CheckOptions{Records: true, TempDir: dir, RecordsOf: func(m string) bool { _, ok := repl[m]; return ok }}
				}
				r, err := Check(np, opt)
				if err != nil || r.Err() != nil {
					b.Fatal(err, r.Err())
				}
				if r.CRC32 != res.CRC32 {
					b.Fatal("the new package does not read back as written")
				}
				if check == "written-required" && len(r.SHA256) != 32 {
					b.Fatal("no whole-file SHA-256 read back")
				}
				f.Close()
			}
			reportCPU(b, start, p.Size)
		})
	}
}

// BenchmarkCheck checks a package: its hashes alone, with every index
// line compared with its record, and as a run's listing checks it (the
// WARC members' bytes deferred to the hash stage, which reads them
// anyway).
func BenchmarkCheck(b *testing.B) {
	p, _, _ := benchPackage(b)
	warc := func(name string) bool { m := p.Member(name); return m != nil && m.IsArchive() }
	for _, c := range []struct {
		name string
		opt  CheckOptions
	}{{"hashes", CheckOptions{}}, {"records", CheckOptions{Records: true}}, {"listing", CheckOptions{Deferred: warc}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(p.Size)
			start := cpuTime()
			for b.Loop() {
				r, err := Check(p, c.opt)
				if err != nil || r.Err() != nil {
					b.Fatal(err, r.Err())
				}
			}
			reportCPU(b, start, p.Size)
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation and the bytes per CPU
// second: figures a machine shared with other work does not skew as
// it skews wall time.
func reportCPU(b *testing.B, start time.Duration, size int64) {
	cpu := cpuTime() - start
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(size)*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
}

// BenchmarkRebuildAfterWait is the part of a package's rebuild that the
// packages requiring it wait for, in a chain (a crawl's packages): from
// the end of its own wait (Requires) to its new version synced, as the
// sync before its rename (atomicfile's Exchange) leaves it. "flushed"
// flushed the members while it waited (FlushBeforeWait), as a run's
// rebuild does; "unflushed" leaves them all to that sync.
func BenchmarkRebuildAfterWait(b *testing.B) {
	p, repl, dir := benchPackage(b)
	for _, flush := range []bool{true, false} {
		name := "unflushed"
		if flush {
			name = "flushed"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(p.Size)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f, err := os.Create(filepath.Join(dir, "new.wacz"))
				if err != nil {
					b.Fatal(err)
				}
				wb := &Rebuild{Source: p, Replace: repl, FreshIndex: true, TempDir: dir, NoPackageSHA256: true, FlushBeforeWait: flush,
					Requires: func() ([]Requirement, error) {
						b.StartTimer()
						return nil, nil
					}}
				if _, err := wb.Write(f); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				f.Close()
			}
		})
	}
}

// BenchmarkAsyncHashSmall is the SHA-256 of a small member (a
// datapackage.json, a pages.jsonl) on another core, as Check and the
// read back take it: the buffers made for it dominate.
func BenchmarkAsyncHashSmall(b *testing.B) {
	data := make([]byte, 4<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		h := newAsyncHash()
		h.Write(data)
		h.Sum()
	}
}
