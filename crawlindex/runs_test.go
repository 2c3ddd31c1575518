package crawlindex

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/manifest"
)

// randomDigests are n distinct sha1 digests drawn from rng, spread over
// every partition.
func randomDigests(rng *rand.Rand, n int) []string {
	return randomDigestsIn(rng, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
}

// randomDigestsIn are n distinct sha1 digests drawn from rng, spread over
// the partitions of the first characters given.
func randomDigestsIn(rng *rand.Rand, n int, first string) []string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		v := make([]byte, 32)
		for i := range v {
			v[i] = alphabet[rng.IntN(32)]
		}
		v[0] = first[rng.IntN(len(first))]
		d := "sha1:" + string(v)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// joinByHand is what Join must give: every line of the index whose digest
// the crawl has, in digest order.
func joinByHand(index []string, crawl []string) []string {
	want := map[string]bool{}
	for _, d := range crawl {
		want[d] = true
	}
	var out []string
	for _, l := range index {
		f := strings.Fields(l)
		if want[f[5]] {
			out = append(out, l)
		}
	}
	return out
}

// joined runs Join of a crawl of the digests against ix.
func joined(t *testing.T, ix *Index, work string, digests []string) []string {
	t.Helper()
	name := originals(t, work, "probe", digests...)
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if _, err := ix.Join(context.Background(), f, name, &out); err != nil {
		t.Fatal(err)
	}
	if out.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

// sortedLines sorts manifest lines as the index holds them.
func sortedLines(lines []string) []string {
	parsed := make([]manifest.Line, len(lines))
	for i, l := range lines {
		parsed[i], _ = manifest.Parse([]byte(l))
	}
	slices.SortFunc(parsed, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) })
	out := make([]string, len(parsed))
	for i := range parsed {
		out[i] = parsed[i].String()
	}
	return out
}

// fileLines are the lines of a crawl's originals file.
func fileLines(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// verifyClean fails the test on any problem VerifyIndex finds.
func verifyClean(t *testing.T, ix *Index) VerifyStats {
	t.Helper()
	st, err := ix.VerifyIndex(func(p string) { t.Errorf("verify: %s", p) })
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runsOf is the current generation's run files by partition key.
func runsOf(t *testing.T, ix *Index) map[string][]string {
	t.Helper()
	parts, err := ix.partitions()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range parts {
		for _, r := range p.runs {
			out[p.key] = append(out[p.key], filepath.Base(r.path))
		}
	}
	return out
}

// TestCommitAddsRuns proves that a commit adds one run to each partition
// its crawl has digests in and links every other run of the generation
// before (the same file), that the index's originals are every crawl's
// lines merged in digest order, and that the join of the runs gives what
// a join of all the lines by hand gives.
func TestCommitAddsRuns(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	all := randomDigests(rng, 400)
	var lines []string
	for i, name := range []string{"c1", "c2", "c3", "c4"} {
		// Each crawl shares a quarter of its digests with the one before.
		ds := all[i*75 : i*75+100]
		before, _ := Open(dir)
		ix, err := Commit(dir, Change{Add: &Crawl{Name: name, Location: "/data/" + name}, Originals: originals(t, work, name, ds...)})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fileLines(t, filepath.Join(work, name+".originals"))...)
		if got := indexLines(t, ix); !slices.Equal(got, sortedLines(lines)) {
			t.Fatalf("after %s: %d lines, want %d", name, len(got), len(lines))
		}
		touched := map[string]bool{}
		for _, d := range ds {
			touched[mustPartition(d)] = true
		}
		for key, runs := range runsOf(t, ix) {
			n := 0
			for _, r := range runs {
				_, gen, _ := parseRunName(r)
				if gen == ix.Registry.Generation {
					n++
					continue
				}
				// An older run: the very file of the generation before.
				a, errA := os.Stat(filepath.Join(ix.gen, originalsDir, r))
				b, errB := os.Stat(filepath.Join(before.gen, originalsDir, r))
				if errA != nil || errB != nil || !os.SameFile(a, b) {
					t.Errorf("after %s: %s is not the generation before's (%v %v)", name, r, errA, errB)
				}
			}
			if want := map[bool]int{true: 1}[touched[key]]; n != want {
				t.Errorf("after %s: partition %s has %d runs of the commit, want %d", name, key, n, want)
			}
		}
		if k := ix.Registry.Crawl(name); k.Originals != 100 {
			t.Errorf("%s: %d originals counted", name, k.Originals)
		}
		st := verifyClean(t, ix)
		if st.Originals != int64(len(lines)) || st.Runs < st.Partitions {
			t.Errorf("verify: %+v", st)
		}
		probe := append(slices.Clone(all[i*50:i*50+60]), randomDigests(rng, 10)...)
		if got, want := joined(t, ix, t.TempDir(), probe), joinByHand(sortedLines(lines), probe); !slices.Equal(got, want) {
			t.Errorf("after %s: join gave %d lines, by hand %d", name, len(got), len(want))
		}
	}
}

// TestRemoveRewritesItsRuns proves that removing a crawl rewrites only
// the runs that hold its lines (the others stay the same files), and that
// a replaced crawl's lines are those the change gives, wherever its old
// ones were (in a run of its own, or merged with others' by a
// compaction).
func TestRemoveRewritesItsRuns(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	all := randomDigests(rng, 300)
	byCrawl := map[string][]string{}
	for i, name := range []string{"jan", "feb", "mar"} {
		if _, err := Commit(dir, Change{Add: &Crawl{Name: name, Location: "/data/" + name}, Originals: originals(t, work, name, all[i*100:i*100+100]...)}); err != nil {
			t.Fatal(err)
		}
		byCrawl[name] = fileLines(t, filepath.Join(work, name+".originals"))
	}
	before, _ := Open(dir)
	ix, err := Commit(dir, Change{Remove: "feb"})
	if err != nil {
		t.Fatal(err)
	}
	for key, runs := range runsOf(t, ix) {
		for _, r := range runs {
			_, gen, _ := parseRunName(r)
			if gen == 2 || gen == ix.Registry.Generation {
				t.Errorf("partition %s: run %s after feb's removal", key, r)
			}
			a, _ := os.Stat(filepath.Join(ix.gen, originalsDir, r))
			b, _ := os.Stat(filepath.Join(before.gen, originalsDir, r))
			if !os.SameFile(a, b) {
				t.Errorf("%s was rewritten, it holds none of feb's lines", r)
			}
		}
	}
	if got, want := indexLines(t, ix), sortedLines(append(slices.Clone(byCrawl["jan"]), byCrawl["mar"]...)); !slices.Equal(got, want) {
		t.Errorf("after feb's removal: %d lines, want %d", len(got), len(want))
	}
	verifyClean(t, ix)

	// Merged whole: jan's and mar's lines share the runs; replacing jan
	// rewrites them with mar's lines and jan's new ones.
	if ix, _, err = Compact(dir, CompactOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	for key, runs := range runsOf(t, ix) {
		if len(runs) != 1 {
			t.Errorf("partition %s after a full compaction: %v", key, runs)
		}
	}
	newJan := originals(t, t.TempDir(), "jan", all[:50]...)
	ix, err = Commit(dir, Change{Replace: map[string][]FileInfo{"jan": {{Name: "f.warc.gz", Size: 5}}}, Originals: newJan})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := indexLines(t, ix), sortedLines(append(fileLines(t, newJan), byCrawl["mar"]...)); !slices.Equal(got, want) {
		t.Errorf("after jan's replacement: %d lines, want %d", len(got), len(want))
	}
	if k := ix.Registry.Crawl("jan"); k.Originals != 50 || k.Size != 5 {
		t.Errorf("jan after its replacement: %+v", k)
	}
	verifyClean(t, ix)
}

// TestPolicyPlan proves which runs of a partition the policy merges.
func TestPolicyPlan(t *testing.T) {
	const mb = 1 << 20
	pol := Policy{Fanout: 4, Base: 1 * mb} // class 0 below 4 MB, 1 below 16, 2 below 64
	for _, tt := range []struct {
		name  string
		sizes []int64 // oldest first
		want  []int   // indexes of the runs merged
	}{
		{"one run", []int64{100 * mb}, nil},
		{"fewer than four of a class", []int64{50 * mb, 1 * mb, 2 * mb, 3 * mb}, nil},
		{"four of class 0", []int64{50 * mb, 1 * mb, 2 * mb, 3 * mb, 1 * mb}, []int{1, 2, 3, 4}},
		{"four of class 0 make one of class 1, with three there: all merged",
			[]int64{8 * mb, 9 * mb, 10 * mb, 1 * mb, 1 * mb, 1 * mb, 2 * mb}, []int{0, 1, 2, 3, 4, 5, 6}},
		{"four of class 0 make one of class 0", []int64{20 * mb, 100, 100, 100, 100}, []int{1, 2, 3, 4}},
		{"the smallest merge first", []int64{20 * mb, 20 * mb, 20 * mb, 20 * mb, 1, 2, 3, 4}, []int{4, 5, 6, 7}},
		{"classes apart are not merged", []int64{40 * mb, 10 * mb, 2 * mb, 3 * mb}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var runs []*run
			for i, s := range tt.sizes {
				runs = append(runs, &run{key: "sha1-A", gen: i + 1, size: s})
			}
			var got []int
			for _, r := range pol.plan(runs) {
				got = append(got, r.gen-1)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("merges %v, want %v", got, tt.want)
			}
		})
	}
	for size, want := range map[int64]int{0: 0, 4*mb - 1: 0, 4 * mb: 1, 64 * mb: 3, math.MaxInt64: 21} {
		if c := pol.class(size); c != want {
			t.Errorf("a run of %d bytes: class %d, want %d", size, c, want)
		}
	}
}

// TestCompaction commits 30 crawls of varied sizes (in four partitions,
// for fewer files to sync) under a small policy
// and proves after each commit that the originals are every crawl's
// lines, that no partition holds more runs than the policy allows
// (fanout-1 a size class), that the join is right, and that each line
// was rewritten by compactions no more often than its class can climb.
func TestCompaction(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	pol := Policy{Fanout: 3, Base: 8 << 10} // class 0 below 24 kB, then 72, 216 kB
	var lines []string
	var written, rewritten int64
	for i := range 30 {
		n := 20 + rng.IntN(400)
		name := fmt.Sprintf("c%02d", i)
		ds := randomDigestsIn(rng, n, "ABCD")
		ix, err := CommitWith(dir, Change{Add: &Crawl{Name: name, Location: "/x"}, Originals: originals(t, work, name, ds...)}, CommitOptions{NoCompact: true})
		if err != nil {
			t.Fatal(err)
		}
		written += int64(n)
		ix, st, err := Compact(dir, CompactOptions{Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		rewritten += st.Lines
		lines = append(lines, fileLines(t, filepath.Join(work, name+".originals"))...)
		if got := indexLines(t, ix); !slices.Equal(got, sortedLines(lines)) {
			t.Fatalf("after %s: %d lines, want %d", name, len(got), len(lines))
		}
		parts, _ := ix.partitions()
		for _, p := range parts {
			perClass := map[int]int{}
			for _, r := range p.runs {
				perClass[pol.class(r.size)]++
			}
			for c, k := range perClass {
				if k >= pol.Fanout {
					t.Errorf("after %s: partition %s has %d runs of class %d", name, p.key, k, c)
				}
			}
		}
		verifyClean(t, ix)
		if i%10 == 9 {
			probe := append(randomDigestsIn(rng, 20, "ABCD"), ds[:min(30, len(ds))]...)
			if got, want := joined(t, ix, t.TempDir(), probe), joinByHand(sortedLines(lines), probe); !slices.Equal(got, want) {
				t.Errorf("after %s: join gave %d lines, by hand %d", name, len(got), len(want))
			}
		}
	}
	// Partitions of about 200 kB of lines in the end (130 bytes each),
	// 7 kB a commit: class 0 merges rewrite a line while class 0 fills
	// (to 24 kB, merged three runs at a time), then a climb a class.
	perLine := float64(rewritten) / float64(written)
	t.Logf("%d lines committed, %d rewritten by compactions: %.2f a line", written, rewritten, perLine)
	if perLine > 4 {
		t.Errorf("each line rewritten %.2f times on average", perLine)
	}
	ix, st, err := Compact(dir, CompactOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := indexLines(t, ix); !slices.Equal(got, sortedLines(lines)) || st.Generations != 1 {
		t.Errorf("after a full compaction: %d lines, want %d; %+v", len(got), len(lines), st)
	}
	for key, runs := range runsOf(t, ix) {
		if len(runs) != 1 {
			t.Errorf("partition %s after a full compaction: %v", key, runs)
		}
	}
}

// copyDir copies a directory tree (files, not links).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLayout1 reads an index as warcdedup wrote it before runs
// (testdata/layout1, written by the crawlindex of commit bffa7bd: crawls
// dec, jan, feb committed, dec removed; generations 3 and 4, each
// partition one file, registry version 1) and proves that it is read as it
// is: it verifies, each partition is a run of generation 0, the join and
// the originals are what its partitions hold; that a commit into it keeps
// its partitions as runs (the same files) beside the commit's, in layout
// 2; that removing a crawl rewrites the old partitions that hold it; and
// that a full compaction merges old runs and new into one a partition,
// nothing lost.
func TestLayout1(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	copyDir(t, filepath.Join("testdata", "layout1"), dir)
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Registry.Version != registryVersionPartitions || ix.Registry.Generation != 4 || len(ix.Registry.Crawls) != 2 || ix.Registry.RemovedCrawl("dec") == nil {
		t.Fatalf("registry %+v", ix.Registry)
	}
	if st := verifyClean(t, ix); st.Originals != 5 || st.Partitions != 3 || st.Runs != 3 {
		t.Errorf("verify: %+v", st)
	}
	jan := fileLines(t, originals(t, work, "jan", digestOf('A', 1), digestOf('B', 2), digestOf('A', 3)))
	feb := fileLines(t, originals(t, work, "feb", digestOf('B', 4), digestOf('C', 5)))
	before := indexLines(t, ix)
	if want := sortedLines(append(slices.Clone(jan), feb...)); !slices.Equal(before, want) {
		t.Fatalf("originals of layout 1:\n%s\nwant\n%s", strings.Join(before, "\n"), strings.Join(want, "\n"))
	}
	for _, runs := range runsOf(t, ix) {
		if _, gen, _ := parseRunName(runs[0]); len(runs) != 1 || gen != 0 {
			t.Errorf("runs of layout 1: %v", runs)
		}
	}
	if got := joined(t, ix, work, []string{digestOf('B', 2), digestOf('C', 5), digestOf('D', 9)}); len(got) != 2 {
		t.Errorf("join of layout 1: %v", got)
	}

	mar := originals(t, work, "mar", digestOf('A', 7), digestOf('D', 8))
	if ix, err = Commit(dir, Change{Add: &Crawl{Name: "mar", Location: "/data/mar"}, Originals: mar}); err != nil {
		t.Fatal(err)
	}
	if ix.Registry.Version != registryVersion || ix.Registry.Generation != 5 {
		t.Errorf("after a commit: version %d, generation %d", ix.Registry.Version, ix.Registry.Generation)
	}
	runs := runsOf(t, ix)
	if got := fmt.Sprint(runs); got != "map[sha1-A:[sha1-A.manifest sha1-A.000005.manifest] sha1-B:[sha1-B.manifest] sha1-C:[sha1-C.manifest] sha1-D:[sha1-D.000005.manifest]]" {
		t.Errorf("runs after a commit: %s", got)
	}
	a, _ := os.Stat(filepath.Join(dir, "gen-000004", originalsDir, "sha1-A.manifest"))
	b, _ := os.Stat(filepath.Join(ix.gen, originalsDir, "sha1-A.manifest"))
	if !os.SameFile(a, b) {
		t.Errorf("the partition of layout 1 was not kept as it is")
	}
	all := sortedLines(append(append(slices.Clone(jan), feb...), fileLines(t, mar)...))
	if got := indexLines(t, ix); !slices.Equal(got, all) {
		t.Errorf("after a commit: %d lines, want %d", len(got), len(all))
	}
	verifyClean(t, ix)

	// feb's lines are in sha1-B.manifest (with jan's) and sha1-C.manifest.
	if ix, err = Commit(dir, Change{Remove: "feb", Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(runsOf(t, ix)); got != "map[sha1-A:[sha1-A.manifest sha1-A.000005.manifest] sha1-B:[sha1-B.000006.manifest] sha1-D:[sha1-D.000005.manifest]]" {
		t.Errorf("runs after feb's removal: %s", got)
	}
	rest := sortedLines(append(slices.Clone(jan), fileLines(t, mar)...))
	if got := indexLines(t, ix); !slices.Equal(got, rest) {
		t.Errorf("after feb's removal: %d lines, want %d", len(got), len(rest))
	}
	verifyClean(t, ix)

	if ix, _, err = Compact(dir, CompactOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(runsOf(t, ix)); got != "map[sha1-A:[sha1-A.000007.manifest] sha1-B:[sha1-B.000006.manifest] sha1-D:[sha1-D.000005.manifest]]" {
		t.Errorf("runs after a full compaction: %s", got)
	}
	if got := indexLines(t, ix); !slices.Equal(got, rest) {
		t.Errorf("after a full compaction: %d lines, want %d", len(got), len(rest))
	}
	verifyClean(t, ix)
}
