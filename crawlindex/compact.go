package crawlindex

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Policy says when a partition's runs are merged: its runs fall in size
// classes a factor Fanout apart (class 0 below Base x Fanout bytes, class
// k from Base x Fanout^k), and once a class holds Fanout runs they are
// merged into one, of a higher class (the merge is planned again with
// it, so that merges cascade as far as they must, each run merged once).
// A line is thus rewritten about once per class it climbs: the cost of a
// commit, amortised over the commits, is its own lines written once plus
// a rewrite per class, log_Fanout of the partition's size in units of
// Base (2 at 10^8 originals of commits of 10^6 each, 4 at 10^10), and a
// partition holds at most Fanout-1 runs a class.
type Policy struct {
	Fanout int   // runs of a class merged at once (at least 2)
	Base   int64 // bytes: runs below Base x Fanout are of class 0
}

// The default Policy: 8 runs of a class merged at once; class 0 below
// 32 MiB a run (a commit of 10^6 originals writes about 4.4 MB a
// partition).
const (
	DefaultFanout = 8
	DefaultBase   = 4 << 20
)

func (p Policy) withDefaults() Policy {
	if p.Fanout < 2 {
		p.Fanout = DefaultFanout
	}
	if p.Base <= 0 {
		p.Base = DefaultBase
	}
	return p
}

// class is the size class of a run of size bytes.
func (p Policy) class(size int64) int {
	c := 0
	for limit := p.Base; limit <= math.MaxInt64/int64(p.Fanout); c++ {
		if limit *= int64(p.Fanout); size < limit {
			break
		}
	}
	return c
}

// plan returns the runs of a partition to merge now, oldest first, or nil.
// With several merges due (in classes apart), the one of the smallest
// runs comes first; the next compaction plans the others.
func (p Policy) plan(runs []*run) []*run {
	type group struct {
		size int64
		runs []*run
	}
	groups := make([]*group, len(runs))
	for i, r := range runs {
		groups[i] = &group{size: max(r.size, 0), runs: []*run{r}}
	}
	for {
		byClass := map[int][]int{}
		due := -1
		for i, g := range groups {
			c := p.class(g.size)
			byClass[c] = append(byClass[c], i)
			if len(byClass[c]) >= p.Fanout && (due < 0 || c < due) {
				due = c
			}
		}
		if due < 0 {
			break
		}
		merged := &group{}
		var rest []*group
		for i, g := range groups {
			if slices.Contains(byClass[due], i) {
				merged.size += g.size
				merged.runs = append(merged.runs, g.runs...)
			} else {
				rest = append(rest, g)
			}
		}
		groups = append(rest, merged)
	}
	var best *group
	for _, g := range groups {
		if len(g.runs) > 1 && (best == nil || g.size < best.size) {
			best = g
		}
	}
	if best == nil {
		return nil
	}
	slices.SortFunc(best.runs, func(a, b *run) int { return a.gen - b.gen })
	return best.runs
}

// CompactOptions say how Compact works.
type CompactOptions struct {
	// Full merges every partition's runs into one, whatever the policy.
	Full bool
	// Policy is when runs are merged (the zero Policy: the defaults).
	Policy Policy
	step   func(string) error // see CommitOptions
}

// CompactStats count what a compaction did.
type CompactStats struct {
	Generations int   // generations made (one per round of merges)
	Merges      int   // partitions' runs merged
	RunsMerged  int   // runs read by the merges
	Lines       int64 // lines rewritten
	Bytes       int64 // bytes written
	Took        time.Duration
}

// Compact merges the runs of the index in dir as the policy calls for
// (every partition's into one with Full), under the index's lock, each
// round of merges a generation of its own, made as a commit's is (a crash
// leaves the generation before or the new one). It returns the index as
// compacted. Commit compacts after each change; Compact is for an index
// whose compaction was left (CommitOptions.NoCompact, a compaction that
// failed) or to merge it whole.
func Compact(dir string, opt CompactOptions) (*Index, CompactStats, error) {
	lk, err := lock(dir)
	if err != nil {
		return nil, CompactStats{}, err
	}
	defer lk.Close()
	base, err := Open(dir)
	if err != nil {
		return nil, CompactStats{}, err
	}
	if err := mark(base.gen); err != nil {
		return nil, CompactStats{}, err
	}
	defer cleanup(base.Dir, base.Registry.Generation)
	return compact(base, opt.Policy, opt.Full, opt.step)
}

// compact compacts the index ix is the current generation of, as the
// policy calls for: a generation a round, until no merge is due. The
// index's lock must be held.
func compact(ix *Index, pol Policy, full bool, step func(string) error) (*Index, CompactStats, error) {
	start := time.Now()
	pol = pol.withDefaults()
	var st CompactStats
	for {
		parts, err := ix.partitions()
		if err != nil {
			return ix, st, err
		}
		plans := map[string][]*run{}
		for _, p := range parts {
			switch {
			case full && len(p.runs) > 1:
				plans[p.key] = p.runs
			case !full:
				if m := pol.plan(p.runs); m != nil {
					plans[p.key] = m
				}
			}
		}
		if len(plans) == 0 {
			st.Took = time.Since(start)
			return ix, st, nil
		}
		next, err := compactRound(ix, parts, plans, step, &st)
		if err != nil {
			return ix, st, err
		}
		ix = next
		st.Generations++
		if full {
			st.Took = time.Since(start)
			return ix, st, nil
		}
	}
}

// compactRound makes a generation in which each planned partition's runs
// are merged into one; every other file is linked. The merges run side by
// side, one a core.
func compactRound(ix *Index, parts []*partition, plans map[string][]*run, step func(string) error, st *CompactStats) (*Index, error) {
	b, err := newBuilder(ix, step)
	if err != nil {
		return nil, err
	}
	defer b.abort()
	type merge struct {
		key  string
		runs []*run
	}
	var merges []merge
	for _, p := range parts {
		m := plans[p.key]
		var keep []*run
		for _, r := range p.runs {
			if !slices.Contains(m, r) {
				keep = append(keep, r)
			}
		}
		if err := b.linkRuns(keep); err != nil {
			return nil, err
		}
		if m != nil {
			merges = append(merges, merge{p.key, m})
		}
	}
	if err := b.linkLists(nil); err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	work := make(chan merge)
	for range min(runtime.GOMAXPROCS(0), len(merges)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range work {
				lines, n, err := mergeRuns(b, m.key, m.runs)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				st.Merges++
				st.RunsMerged += len(m.runs)
				st.Lines += lines
				st.Bytes += n
				mu.Unlock()
			}
		}()
	}
	for _, m := range merges {
		mu.Lock()
		failed := len(errs) > 0
		mu.Unlock()
		if failed {
			break
		}
		work <- m
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return b.publish()
}

// mergeRuns writes the new generation's run of a partition: the runs
// merged, read as bytes (see rawRun).
func mergeRuns(b *builder, key string, runs []*run) (lines, size int64, err error) {
	m, err := b.base.openRawMerger(runs, true)
	if err != nil {
		return 0, 0, err
	}
	defer m.close()
	w, err := b.createRun(key)
	if err != nil {
		return 0, 0, err
	}
	defer w.abort()
	for {
		l, ok, err := m.next()
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		if err := w.writeRaw(l); err != nil {
			return 0, 0, err
		}
	}
	if err := w.close(); err != nil {
		return 0, 0, err
	}
	return w.lines, w.h.h.Size(), nil
}
