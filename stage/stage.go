package stage

import (
	"fmt"
	"sync"
)

// The stages of the job, as progress, the report, a run's state.json and
// a cluster job's plan name them. The comments give the stage numbers of
// the README's pipeline (see the package comment).
const (
	ConvertName      = "convert ARC to WARC" // with --convert-arc, before 1
	HashName         = "hash"                // 1
	SortByDigestName = "sort by digest"
	JoinName         = "join the index"     // with a crawl index
	ResolveName      = "resolve and number" // 2 and 3
	SortByFileName   = "sort by file"
	RewriteName      = "rewrite" // 4
	// After a resolve that read nothing: the digests whose duplicates the
	// rewrite found apart from their original, resolved byte for byte and
	// rewritten again (Collide).
	CollideName          = "resolve the collisions"
	RewriteCollisionName = "rewrite the collisions"
	HashAgainName        = "hash again"     // 5
	VerifyName           = "verify"         // 5
	CDXName              = "update indexes" // the CDX indexes --cdx names (kept in state.json: the name stays)
	AccountName          = "account"
	CommitName           = "commit" // with a crawl index
	// A dry run with --convert-arc: what the conversion would do to the
	// listing and the revisits, estimated after the rewrite.
	EstimateConversionName = "estimate the conversion"
)

// Messages take what a stage reports as it works: each damaged record,
// stale line, refused file or record lost (Error), each warning (Warn),
// and details looked up afterwards (Note). warcdedup run shows them and
// keeps them in its run log; a cluster task writes them to Slurm's output
// of its job. They are called from the stage's workers at once.
type Messages interface {
	Error(err error)
	Warn(err error)
	Note(format string, args ...any)
}

// firstOf keeps messages as they come from workers: the first limit of
// them, or every one if limit is 0.
type firstOf struct {
	limit int
	mu    sync.Mutex
	list  []string
}

func (f *firstOf) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limit == 0 || len(f.list) < f.limit {
		f.list = append(f.list, err.Error())
	}
}

// KeepFirst is how many messages of a kind a stage keeps for the exit
// reasons (the run log has them all); a cluster job keeps as many of its
// tasks' together.
const KeepFirst = 100

// First lists the first n of a stage's messages, indented, for the exit
// reasons: "  a", "  b", "  and 4 more".
func First(s []string, n int) []string {
	out := make([]string, 0, min(n, len(s))+1)
	for _, m := range s[:min(n, len(s))] {
		out = append(out, "  "+m)
	}
	if len(s) > n {
		out = append(out, fmt.Sprintf("  and %d more", len(s)-n))
	}
	return out
}
