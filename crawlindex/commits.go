package crawlindex

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"warcdedup/atomicfile"
)

// The index records, beside its generations, what each crawl's last
// commit or removal made of it:
//
//	DIR/commits/NAME.json  {"crawl", "op": "committed" or "removed",
//	                        "generation", "at"}
//
// written once the generation that committed or removed the crawl is
// CURRENT (so a record never tells of a change that did not happen).
// A generation directory lost with CURRENT set back to an older one (a
// snapshot of the generations restored, an old generation copied over a
// damaged one) leaves no later generation for Open to find, and the
// older generation verifies: it is whole, only older. The records
// outlive it: a crawl recorded as committed in a generation after
// CURRENT's that CURRENT's registry does not hold is a crawl whose
// revisits the index forgot, and a removal recorded after it one whose
// files may be gone. Open refuses such an index, naming each crawl, so
// that no command (a run's join and commit, remove, import, compact)
// acts on it, and index verify reports it.
//
// Each commit first brings the records up to its base generation (a
// record a crash kept from being written, an index of a warcdedup that
// wrote none), so that an index is protected from its next commit on.
const commitsDir = "commits"

// commitRecord is a crawl's record in commits/.
type commitRecord struct {
	Crawl      string    `json:"crawl"`
	Op         string    `json:"op"` // opCommitted or opRemoved
	Generation int       `json:"generation"`
	At         time.Time `json:"at"`
}

const (
	opCommitted = "committed"
	opRemoved   = "removed"
)

// readCommitRecords reads the index's records. A record that cannot be
// read is a problem (the index is refused until it is mended), not one
// left out.
func readCommitRecords(dir string) ([]commitRecord, []string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, commitsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var recs []commitRecord
	var problems []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue // an atomicfile's temporary file, or not a record
		}
		path := filepath.Join(dir, commitsDir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		var r commitRecord
		if err := json.Unmarshal(data, &r); err != nil || r.Crawl != name || (r.Op != opCommitted && r.Op != opRemoved) {
			problems = append(problems, fmt.Sprintf("%s: not a record of crawl %s's commit (%s)", path, name, whyNot(err, data)))
			continue
		}
		recs = append(recs, r)
	}
	return recs, problems, nil
}

func whyNot(err error, data []byte) string {
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(data))
}

// checkCommitRecords compares the records with the generation ix is
// (see commitsDir): each crawl the index forgot, each removal it undid,
// and a generation recorded after CURRENT's, as problems.
func (ix *Index) checkCommitRecords() ([]string, error) {
	recs, problems, err := readCommitRecords(ix.Dir)
	if err != nil || len(recs) == 0 {
		return problems, err
	}
	reg := ix.Registry
	cur := reg.Generation
	restore := fmt.Sprintf("restore the index's later generations and CURRENT naming the latest from a backup; until then no command changes the index (the records are %s)",
		filepath.Join(ix.Dir, commitsDir))
	latest := commitRecord{}
	for _, r := range recs {
		if r.Generation > latest.Generation {
			latest = r
		}
		switch {
		case r.Op == opCommitted && reg.Crawl(r.Crawl) == nil && r.Generation > cur:
			problems = append(problems, fmt.Sprintf("crawl %s was committed in generation %d, but CURRENT names generation %d, which does not hold it: the index was set back or lost its latest generations and forgot crawl %s (whose revisits may need crawls it would let be removed); %s",
				r.Crawl, r.Generation, cur, r.Crawl, restore))
		case r.Op == opCommitted && reg.Crawl(r.Crawl) == nil && reg.RemovedCrawl(r.Crawl) == nil:
			problems = append(problems, fmt.Sprintf("crawl %s was committed in generation %d, but the registry of generation %d neither holds it nor says it was removed: this is not the index that committed it; %s",
				r.Crawl, r.Generation, cur, restore))
		case r.Op == opRemoved && reg.Crawl(r.Crawl) != nil && r.Generation > cur:
			problems = append(problems, fmt.Sprintf("crawl %s was removed in generation %d, but CURRENT names generation %d, which still holds it (its files may be deleted): the index was set back or lost its latest generations; %s",
				r.Crawl, r.Generation, cur, restore))
		}
	}
	if len(problems) == 0 && latest.Generation > cur {
		problems = append(problems, fmt.Sprintf("generation %d was committed (crawl %s %s in it), but CURRENT names generation %d: the index was set back or lost its latest generations; %s",
			latest.Generation, latest.Crawl, latest.Op, cur, restore))
	}
	return problems, nil
}

// writeCommitRecord records the crawl's commit or removal in generation
// gen, durably.
func writeCommitRecord(dir string, r commitRecord) error {
	d := filepath.Join(dir, commitsDir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(&r)
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(filepath.Join(d, r.Crawl+".json"), 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(append(data, '\n')); err != nil {
		return err
	}
	return f.Commit()
}

// recordChange records what a committed change made of its crawls:
// the crawl it added, the crawl it removed, in ix's generation.
func recordChange(ix *Index, ch Change) error {
	now := time.Now().UTC().Truncate(time.Second)
	if ch.Add != nil {
		if err := writeCommitRecord(ix.Dir, commitRecord{Crawl: ch.Add.Name, Op: opCommitted, Generation: ix.Registry.Generation, At: now}); err != nil {
			return err
		}
	}
	if ch.Remove != "" {
		return writeCommitRecord(ix.Dir, commitRecord{Crawl: ch.Remove, Op: opRemoved, Generation: ix.Registry.Generation, At: now})
	}
	return nil
}

// recordBase brings the records up to the generation base is, which Open
// verified against them: a committed crawl without a record (or whose
// record is an earlier removal) and a removed one recorded as committed
// get a record of base's generation, the latest in which each was so.
func recordBase(base *Index) error {
	if base.gen == "" {
		return nil
	}
	recs, _, err := readCommitRecords(base.Dir)
	if err != nil {
		return err
	}
	op := map[string]string{}
	for _, r := range recs {
		op[r.Crawl] = r.Op
	}
	now := time.Now().UTC().Truncate(time.Second)
	reg := base.Registry
	for _, k := range reg.Crawls {
		if op[k.Name] != opCommitted {
			if err := writeCommitRecord(base.Dir, commitRecord{Crawl: k.Name, Op: opCommitted, Generation: reg.Generation, At: now}); err != nil {
				return err
			}
		}
	}
	for _, k := range reg.Removed {
		if op[k.Name] == opCommitted && reg.Crawl(k.Name) == nil {
			if err := writeCommitRecord(base.Dir, commitRecord{Crawl: k.Name, Op: opRemoved, Generation: reg.Generation, At: now}); err != nil {
				return err
			}
		}
	}
	return nil
}
