package clustere2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/slurmtest"
	"warcdedup/internal/storagetest"
	"warcdedup/manifest"
	"warcdedup/scripts/gen"
)

// BenchmarkCluster measures warcdedup cluster on this machine: a generated
// collection (BENCH_SIZE_MB, default 1000, 40% duplicates, mean payload
// 30 KB, .warc.gz) spread over three storage hosts by MD5 placement, each
// with its nginx, on the three-node Slurm cluster of slurmtest (all
// sharing this machine's cores and disk). It prints, per stage, the wall
// time, each task's time and throughput, and the bytes that cross the
// network (records over HTTP) or the shared file system (manifests), and
// warcdedup run over the same files for comparison. Run it with
// scripts/bench-cluster.sh (BENCH_DIR keeps the collection between runs;
// BENCH_COMPARE_IN_RESOLVE=1 runs the cluster job with the comparing
// resolve, --compare-in-resolve; BENCH_ALTERNATE=N runs N rounds of
// both, alternating, and prints the medians of each).
func BenchmarkCluster(b *testing.B) {
	if os.Getenv("WARCDEDUP_TEST_CLUSTER") != "1" {
		b.Skip("set WARCDEDUP_TEST_CLUSTER=1 (scripts/bench-cluster.sh)")
	}
	sizeMB := 1000
	if v, err := strconv.Atoi(os.Getenv("BENCH_SIZE_MB")); err == nil && v > 0 {
		sizeMB = v
	}
	dir := os.Getenv("BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	src := filepath.Join(dir, fmt.Sprintf("cluster-%d", sizeMB))
	if _, err := os.Stat(filepath.Join(src, ".done")); err != nil {
		os.RemoveAll(src)
		cfg := gen.Config{Files: 24, Records: sizeMB * 1000 * 1000 / 33000, DupRate: 0.4, MeanPayload: 30000, Seed: 3,
			Formats: []gen.Format{gen.WARC10Gz}}
		if _, err := gen.Write(src, cfg); err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(src, ".done"), nil, 0o644)
	}
	// BENCH_ALTERNATE=N runs N rounds, each the job comparing each
	// duplicate once then with the comparing resolve, and gives the
	// medians of each: ratios within one run on a shared machine.
	paths := []bool{os.Getenv("BENCH_COMPARE_IN_RESOLVE") == "1"}
	rounds := 1
	if n, err := strconv.Atoi(os.Getenv("BENCH_ALTERNATE")); err == nil && n > 0 {
		paths, rounds = []bool{false, true}, n
	}
	times := map[bool][]float64{}
	for i := 0; i < b.N; i++ {
		for r := range rounds {
			for _, compare := range paths {
				base, err := os.MkdirTemp(dir, "run-")
				if err != nil {
					b.Fatal(err)
				}
				os.Chmod(base, 0o755)
				fmt.Printf("round %d, %s:\n", r+1, pathName(compare))
				times[compare] = append(times[compare], benchOnce(b, src, base, compare).Seconds())
				os.RemoveAll(base)
			}
		}
	}
	if len(paths) == 2 {
		once, cmp := median(times[false]), median(times[true])
		fmt.Printf("whole cluster job, medians of %d alternating rounds: %s %.1f s %v, %s %.1f s %v (ratio %.2f)\n", rounds,
			pathName(false), once, times[false], pathName(true), cmp, times[true], once/cmp)
	}
}

func pathName(compareInResolve bool) string {
	if compareInResolve {
		return "comparing resolve (--compare-in-resolve)"
	}
	return "each duplicate compared once"
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchOnce runs warcdedup run, then the cluster job, over a copy of src
// in base, prints what each stage did, and returns the cluster job's time.
func benchOnce(b *testing.B, src, base string, compareInResolve bool) time.Duration {
	// The baseline: warcdedup run over the whole collection.
	whole := filepath.Join(base, "whole")
	if out, err := exec.Command("cp", "-r", src, whole).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	os.Remove(filepath.Join(whole, ".done"))
	t0 := time.Now()
	run := exec.Command(filepath.Join(binDir, "warcdedup"), "run", "-q", "-j", "2", "--work-dir", filepath.Join(base, "run-work"), whole)
	if out, err := run.CombinedOutput(); err != nil {
		b.Fatalf("warcdedup run: %v\n%s", err, out)
	}
	runTime := time.Since(t0)
	os.RemoveAll(whole)

	roots := map[string]string{}
	for _, h := range hostNames {
		roots[h] = filepath.Join(base, h)
	}
	var stored int64
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() || strings.HasPrefix(fi.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		stored += fi.Size()
		dst := filepath.Join(roots[hostNames[storagetest.Slice(filepath.ToSlash(rel), len(hostNames))]], rel)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		return os.Link(p, dst)
	})
	if err != nil {
		b.Fatal(err)
	}
	// Hard links share the bytes with the pristine copy: the rewrite must
	// replace them, not write through them.
	c := slurmtest.Start(b, hostNames...)
	st := storagetest.Start(b, storageHosts(roots)...)
	var hf strings.Builder
	for _, h := range hostNames {
		fmt.Fprintf(&hf, "%s %s %s/warcs\n", h, roots[h], st.URL(h))
	}
	hosts := filepath.Join(base, "hosts")
	os.WriteFile(hosts, []byte(hf.String()), 0o644)
	work := filepath.Join(base, "work")
	b.ResetTimer()
	t0 = time.Now()
	args := []string{"cluster", "-q", "--poll", "500ms", "-j", "2", "--hard-links", "--keep-work", "--work-dir", work}
	if compareInResolve {
		// The comparing resolve, which reads every copy over HTTP.
		args = append(args, "--compare-in-resolve")
	}
	cmd := exec.Command(filepath.Join(binDir, "warcdedup"), append(args, hosts)...)
	cmd.Env = append(os.Environ(), c.Env()...)
	out, err := cmd.CombinedOutput()
	clusterTime := time.Since(t0)
	b.StopTimer()
	if err != nil {
		b.Fatalf("warcdedup cluster: %v\n%s", err, out)
	}
	printReport(b, work, stored, runTime, clusterTime)
	return clusterTime
}

// marker is what the bench reads of a task's result.
type marker struct {
	Node              string
	Started, Finished time.Time
	Hash              *struct {
		Stats struct{ Bytes, Listed int64 }
	}
	Resolve *struct {
		Stats struct{ Lines, Fetched, Compared int64 }
	}
	Rewrite *struct {
		Stats  struct{ Revisits, Rewritten, BytesBefore, BytesAfter int64 }
		Remote struct{ Reads, Moved, Bytes int64 }
	}
	After     *struct{ Bytes, Files, Cached int64 }
	HTTP      *struct{ Requests, Bytes int64 }
	NotNeeded bool `json:"not_needed"` // a collisions task the monitor found had no work: no Slurm job ran
}

func readMarkers(b *testing.B, work, step string) []marker {
	var out []marker
	names, _ := filepath.Glob(filepath.Join(work, "tasks", step, "*.json"))
	for _, n := range names {
		var m marker
		data, err := os.ReadFile(n)
		if err == nil {
			err = json.Unmarshal(data, &m)
		}
		if err != nil {
			b.Fatal(err)
		}
		if !m.NotNeeded {
			out = append(out, m)
		}
	}
	return out
}

func size(pattern string) int64 {
	var n int64
	names, _ := filepath.Glob(pattern)
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// clustered is what resolution reads over HTTP: the stored bytes of every
// record of a digest with two or more responses.
func clustered(b *testing.B, numbered string) (records, bytes int64) {
	f, err := os.Open(numbered)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r := manifest.NewReader(bufio.NewReader(f), numbered)
	var group []int64
	var digest string
	flush := func() {
		if len(group) >= 2 {
			for _, l := range group {
				records++
				bytes += l
			}
		}
		group = group[:0]
	}
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if l.IsRevisit() {
			continue
		}
		if l.Digest != digest {
			flush()
			digest = l.Digest
		}
		group = append(group, l.Length)
	}
	flush()
	return records, bytes
}

func mbps(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }

func span(ms []marker) time.Duration {
	var first, last time.Time
	for _, m := range ms {
		if first.IsZero() || m.Started.Before(first) {
			first = m.Started
		}
		if m.Finished.After(last) {
			last = m.Finished
		}
	}
	return last.Sub(first)
}

func printReport(b *testing.B, work string, stored int64, runTime, clusterTime time.Duration) {
	var lines []string
	p := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	p("collection: %.0f MB stored on 3 hosts; warcdedup run -j 2: %.1f s; warcdedup cluster -j 2: %.1f s", float64(stored)/1e6, runTime.Seconds(), clusterTime.Seconds())
	var records int64
	var stages time.Duration
	hashes := readMarkers(b, work, "hash@*")
	for _, m := range hashes {
		d := m.Finished.Sub(m.Started)
		p("  hash on %s: %.0f MB in %.2f s, %.0f MB/s", m.Node, float64(m.Hash.Stats.Bytes)/1e6, d.Seconds(), mbps(m.Hash.Stats.Bytes, d))
		records += m.Hash.Stats.Listed
	}
	stages += span(hashes)
	before := size(filepath.Join(work, "hosts", "*", "before.manifest"))
	facts := size(filepath.Join(work, "hosts", "*", "facts.manifest"))
	p("hash: %.2f s; %d records, the manifest %.0f bytes a line and the facts %.0f; written to the shared directory in 5 forms (before, facts, by digest, facts by file, the range parts): %.1f MB",
		span(hashes).Seconds(), records, float64(before)/float64(records), float64(facts)/float64(records),
		float64(size(filepath.Join(work, "hosts", "*", "*.manifest"))+size(filepath.Join(work, "hosts", "*", "range-*")))/1e6)
	resolves := readMarkers(b, work, "resolve")
	var fetched, compared, lineCount int64
	for _, m := range resolves {
		fetched += m.Resolve.Stats.Fetched
		compared += m.Resolve.Stats.Compared
		lineCount += m.Resolve.Stats.Lines
	}
	var httpRecords, httpBytes int64
	ranges, _ := filepath.Glob(filepath.Join(work, "ranges", "*", "numbered.manifest"))
	for _, n := range ranges {
		r, by := clustered(b, n)
		httpRecords += r
		httpBytes += by
	}
	stages += span(resolves)
	var readReq, readBytes int64
	for _, m := range resolves {
		if m.HTTP != nil {
			readReq += m.HTTP.Requests
			readBytes += m.HTTP.Bytes
		}
	}
	p("resolve: %d tasks in %.2f s (each %s); read over HTTP: %.1f MB in %d requests (a comparing resolve reads the %d records of digests with two copies or more, %.0f MB stored); %.0f MB of payload compared",
		len(resolves), span(resolves).Seconds(), taskTimes(resolves), float64(readBytes)/1e6, readReq, httpRecords, float64(httpBytes)/1e6,
		float64(compared)/1e6)
	p("  manifests: range parts read %.1f MB, numbered and by-host parts written %.1f MB", float64(size(filepath.Join(work, "hosts", "*", "range-*")))/1e6,
		float64(size(filepath.Join(work, "ranges", "*", "*")))/1e6)
	rewrites := readMarkers(b, work, "rewrite@*")
	for _, m := range rewrites {
		d := m.Finished.Sub(m.Started)
		r := m.Rewrite
		p("  rewrite on %s: %d revisits in %d files, %.0f MB -> %.0f MB in %.2f s (%.0f MB/s of files replaced); %d originals from other hosts, %.1f MB (%d in files replaced since)",
			m.Node, r.Stats.Revisits, r.Stats.Rewritten, float64(r.Stats.BytesBefore)/1e6, float64(r.Stats.BytesAfter)/1e6, d.Seconds(),
			mbps(r.Stats.BytesBefore, d), r.Remote.Reads, float64(r.Remote.Bytes)/1e6, r.Remote.Moved)
	}
	stages += span(rewrites)
	p("rewrite: %.2f s; the hosts read their originals parts of every range: %.1f MB (the numbered manifests: %.1f MB)", span(rewrites).Seconds(),
		float64(size(filepath.Join(work, "ranges", "*", "originals-*")))/1e6, float64(size(filepath.Join(work, "ranges", "*", "numbered.manifest")))/1e6)
	// Where each duplicate is compared once: the collisions resolved
	// again, and each host's second rewrite.
	if collides := readMarkers(b, work, "collide"); len(collides) > 0 {
		recollides := readMarkers(b, work, "recollide@*")
		stages += span(collides) + span(recollides)
		p("collisions: resolved again in %.2f s, rewritten in %.2f s (each %s)", span(collides).Seconds(), span(recollides).Seconds(), taskTimes(recollides))
	} else if _, err := os.Stat(filepath.Join(work, "tasks", "collide")); err == nil {
		p("collisions: not run, no Slurm job (the rewrites kept no duplicate apart)")
	}
	afters := readMarkers(b, work, "rehash@*")
	stages += span(afters)
	p("hash again: %.2f s (each %s)", span(afters).Seconds(), taskTimes(afters))
	for _, step := range []string{"verify", "account"} {
		ms := readMarkers(b, work, step)
		stages += span(ms)
		p("%s: %.2f s", step, span(ms).Seconds())
	}
	p("%s", httpByStage(b, work))
	p("the stages' own time: %.1f s; the rest (Slurm's scheduling, the monitor's polling): %.1f s", stages.Seconds(), (clusterTime - stages).Seconds())
	fmt.Println(strings.Join(lines, "\n"))
	b.ReportMetric(clusterTime.Seconds(), "cluster-s")
	b.ReportMetric(runTime.Seconds(), "run-s")
}

func taskTimes(ms []marker) string {
	var s []string
	for _, m := range ms {
		s = append(s, fmt.Sprintf("%.2f", m.Finished.Sub(m.Started).Seconds()))
	}
	return strings.Join(s, "/") + " s"
}

// httpByStage says what each stage's tasks read over HTTP from the
// storage hosts, as source.HTTP counted it (Marker.HTTP), in the order
// the steps ran.
func httpByStage(b *testing.B, work string) string {
	dirs, _ := filepath.Glob(filepath.Join(work, "tasks", "*"))
	type sum struct {
		first           time.Time
		requests, bytes int64
	}
	byKind := map[string]*sum{}
	var kinds []string
	for _, d := range dirs {
		step := filepath.Base(d)
		kind, _, _ := strings.Cut(step, "@")
		for _, m := range readMarkers(b, work, step) {
			s := byKind[kind]
			if s == nil {
				s = &sum{first: m.Started}
				byKind[kind] = s
				kinds = append(kinds, kind)
			}
			if m.Started.Before(s.first) {
				s.first = m.Started
			}
			if m.HTTP != nil {
				s.requests += m.HTTP.Requests
				s.bytes += m.HTTP.Bytes
			}
		}
	}
	slices.SortFunc(kinds, func(a, c string) int { return byKind[a].first.Compare(byKind[c].first) })
	var parts []string
	var total int64
	for _, k := range kinds {
		s := byKind[k]
		total += s.bytes
		parts = append(parts, fmt.Sprintf("%s %.1f MB in %d requests", k, float64(s.bytes)/1e6, s.requests))
	}
	return fmt.Sprintf("read over HTTP by stage: %s; in all %.1f MB", strings.Join(parts, ", "), float64(total)/1e6)
}
