package stage

import (
	"bufio"
	"context"
	"fmt"

	"warcdedup/atomicfile"
	"warcdedup/internal/progress"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/verify"
	"warcdedup/workdir"
)

// Verify proves that nothing was lost (warcsumcmp), the second half of
// stage 5: every record of the manifest before is in the manifest after,
// as itself or as a revisit that resolves to an original of the same
// digest. Each record lost goes into the violations file, and to
// Messages.
type Verify struct {
	Before, After *manifest.Reader
	// External, if not nil, are originals outside the collection that
	// revisits may refer to: a crawl index's committed originals the
	// resolution kept, as their records spell them.
	External   *manifest.Reader
	Violations string // whole or not at all
	Total      int64  // records before, for the progress
	Messages   Messages
	Meter      progress.Meter
	// Sort is how the comparison's merge joins sort: in the work
	// directory, with the job's memory and threads.
	Sort syssort.Sorter
}

// VerifyBudget is what the comparison's temporary files hold in memory
// together (Sort.Budget, where Sort.InMemory is 0): the manifests of a
// collection of some 5 x 10^4 records, about a GB, are then compared
// without a sort process, a compressed temporary file or a pipe (those of
// the bench collection, 30,000 records: seven files of 31 MB in all, 27
// MB at once, the largest the join by digest's 9 MB). Its files hold 40
// MiB at most, less than the eight of 8 MiB each before, so that verify
// stays under the rewrite's peak (130 MB at 10^6 records, issue 22's 150
// MB a process); the files beyond it go through the system sort as
// before, in the same order, or, up to VerifyInMemory together, are read
// back and sorted here (syssort.Sorter.InMemory, Budget).
const (
	VerifyBudget   = 40 << 20
	VerifyInMemory = 8 << 20
)

// Run verifies, stopped when ctx is done.
func (v *Verify) Run(ctx context.Context) (verify.Stats, error) {
	out, err := atomicfile.Create(v.Violations, 0o644)
	if err != nil {
		return verify.Stats{}, err
	}
	defer out.Abort()
	bw := bufio.NewWriter(out)
	v.Meter.Begin("records", v.Total)
	sorter := v.Sort
	if sorter.InMemory == 0 {
		sorter.InMemory, sorter.Budget = VerifyInMemory, syssort.NewBudget(VerifyBudget)
	}
	st, err := verify.Options{Sort: sorter}.RewriteAgainst(ctx, v.Before, v.After, v.External, func(lost string) {
		fmt.Fprintln(bw, lost)
		v.Messages.Error(fmt.Errorf("lost: %s", lost))
	})
	if err == nil {
		v.Meter.Set(v.Total)
		err = bw.Flush()
	}
	if err == nil {
		err = out.CommitRenamed()
	}
	return st, err
}

// VerifyNote says what a Verify found, for the report's stage.
func VerifyNote(st verify.Stats) string {
	return fmt.Sprintf("%s violations", progress.Count(st.Violations))
}

// VerifyReasons are why the exit status is not 0, as far as the
// verification goes: records lost.
func VerifyReasons(st verify.Stats) []string {
	if st.Violations == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s violations: records lost (see %s)", progress.Count(st.Violations), workdir.Violations)}
}
