// Package crawlindex is the index of what earlier crawls keep: their
// originals (every response left in a committed crawl), partitioned by
// digest range, and a registry of the crawls, committed one at a time when
// their run is verified, so that each new crawl is deduplicated against
// everything before it without hashing it again.
//
// The index is a directory of plain files; no server is needed:
//
//	DIR/CURRENT                     "gen-000007": the committed generation
//	DIR/gen-000007/registry.json    the crawls and their figures
//	DIR/gen-000007/crawls/NAME.json a crawl's files: size, SHA-256, stamp
//	DIR/gen-000007/originals/sha1-A.000005.manifest
//	                                a sorted run of partition sha1-A (the
//	                                originals whose digest starts with A),
//	                                written by generation 5: warcsum lines
//	                                (6 fields, files named CRAWL/PATH),
//	                                sorted on digest
//	DIR/gen-000007/CONTENTS         SHA-256, size and path of each of the
//	                                generation's files
//	DIR/gen-000007/COMMITTED        written once CURRENT named it
//	DIR/lock                        taken while a generation is made
//	DIR/runs/                       the runs and removals at work (see
//	                                RegisterRun)
//	DIR/commits/NAME.json           the generation that last committed or
//	                                removed crawl NAME (see commitsDir)
//
// A partition is the merge of its runs (see partition.go): a commit adds a
// run to each partition its crawl has digests in and links every other
// file (Commit); a compaction merges a partition's runs when the policy
// says (Compact, Policy). Either writes a new generation beside the
// current one (unchanged files are hard links: a file never changes once
// written), syncs it, and then renames a new CURRENT over the old: a crash
// leaves the old index or the new one, never a mix. The generation current
// when a commit starts is kept, with those after it, so that a run that
// started on it finishes reading it.
//
// An index that does not verify is refused, never taken for an empty one
// or read in part: Open checks CURRENT (missing while a generation says it
// was committed, naming a generation that is not there, or rolled back to
// one older than a generation that was committed, or than one the records
// in commits/ name once its directory is gone), the generation's files
// against its CONTENTS (each there, with its size), the registry (whole,
// each crawl an object with a name a crawl can have, committed once, of
// CURRENT's generation) and every crawl's list of files; the runs are
// checked, line by line, wherever they are read (the join, a commit's or a
// compaction's merge, Verify). A generation written before CONTENTS and
// COMMITTED were is read as it is, with the checks it allows; the next
// commit lists and marks its own. An index written before runs were
// (registry version 1: each partition one file, originals/sha1-A.manifest)
// is read as it is, each partition a run of generation 0.
package crawlindex

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Registry is what the index holds besides the originals.
type Registry struct {
	Version    int    `json:"version"`
	Generation int    `json:"generation"`
	Algorithm  string `json:"algorithm"` // of every digest in the index
	// Crawls are the committed crawls, in the order committed.
	Crawls []*Crawl `json:"crawls"`
	// Removed are the crawls removed from the index, with their figures.
	Removed []*Crawl `json:"removed,omitempty"`
}

// The layouts this package reads: registryVersion, which it writes (each
// partition a set of sorted runs), and registryVersionPartitions, the
// index as a warcdedup before runs wrote it (each partition a single
// file), read as it is: each partition is a run. The next commit writes
// registryVersion, which a warcdedup before runs refuses to read rather
// than read a partition's runs one after the other.
const (
	registryVersion           = 2
	registryVersionPartitions = 1
)

// Crawl is one committed (or removed) crawl.
type Crawl struct {
	Name string `json:"name"`
	// Location is where its files are: the directory they are relative
	// to, or the base URL that serves them.
	Location  string    `json:"location"`
	Committed time.Time `json:"committed"`
	Removed   time.Time `json:"removed,omitzero"`
	// Imported crawls come from CDX/CDXJ indexes: their lines are
	// candidates, taken only once a run has compared the bytes.
	Imported bool `json:"imported,omitempty"`
	// Log is the rewrite log of its run: what a later restore of its
	// revisits (index remove --restore, undo) appends to and follows.
	Log string `json:"log,omitempty"`
	// Source is the multi-WACZ JSON its run was named (its resources
	// the crawl's packages), if any: a later job that writes one of its
	// packages anew (their requires entries brought up to date) brings
	// the JSON's hash and size of it up to date too.
	Source string `json:"source,omitempty"`
	// Include and Exclude are the globs that chose its files.
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`

	Files           int64 `json:"files"`
	Size            int64 `json:"size"`             // bytes of its files now
	Records         int64 `json:"records"`          // responses and revisits
	Revisits        int64 `json:"revisits"`         // revisit records in it, its own and earlier
	RevisitsWritten int64 `json:"revisits_written"` // by its run
	BytesConserved  int64 `json:"bytes_conserved"`  // by its run
	Originals       int64 `json:"originals"`        // its lines in the index

	// Requires are the other crawls whose records its revisits need for
	// replay (a WACZ datapackage's relation.requires), with their files.
	Requires []Need `json:"requires,omitempty"`
}

// Need is a crawl another needs, and which of its files.
type Need struct {
	Crawl    string     `json:"crawl"`
	Revisits int64      `json:"revisits"` // revisits that refer to its records
	Files    []FileInfo `json:"files"`
}

// FileInfo is one file of a crawl as committed.
type FileInfo struct {
	Name   string `json:"name"` // relative to the crawl's location
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// Stamp identifies the file as committed (size, times, inode, device):
	// a file with the same stamp is unchanged.
	Stamp string `json:"stamp,omitempty"`
	// Requires, for a WACZ package whose RequiresKnown is set, are the
	// file names its relation.requires names by SHA-256 or size, as the
	// package was when recorded (its Stamp), each followed by a line
	// feed (a string: a FileInfo compares with ==; RequiredNames lists
	// them): a run need not open a package of that stamp to know it
	// requires none, whatever the size of the collection. Not known (an
	// older index, an import), the package is read.
	Requires      string `json:"-"`
	RequiresKnown bool   `json:"-"`
}

// RequiresOf is FileInfo.Requires for the file names names; false if
// one cannot be held so (a line feed in it): not known then.
func RequiresOf(names []string) (string, bool) {
	var b strings.Builder
	for _, n := range names {
		if strings.Contains(n, "\n") {
			return "", false
		}
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.String(), true
}

// RequiredNames are the file names f.Requires holds.
func (f FileInfo) RequiredNames() []string {
	if f.Requires == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(f.Requires, "\n"), "\n")
}

// CrawlFiles is a crawl's files, kept in crawls/NAME.json.
type CrawlFiles struct {
	Crawl string     `json:"crawl"`
	Files []FileInfo `json:"files"`
}

// Crawl returns the committed crawl of that name, or nil.
func (r *Registry) Crawl(name string) *Crawl {
	for _, c := range r.Crawls {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Totals are the sums over the committed crawls.
func (r *Registry) Totals() Crawl {
	var t Crawl
	for _, c := range r.Crawls {
		t.Files += c.Files
		t.Size += c.Size
		t.Records += c.Records
		t.Revisits += c.Revisits
		t.RevisitsWritten += c.RevisitsWritten
		t.BytesConserved += c.BytesConserved
		t.Originals += c.Originals
	}
	return t
}

// Dependents returns the committed crawls whose revisits need name.
func (r *Registry) Dependents(name string) []*Crawl {
	var out []*Crawl
	for _, c := range r.Crawls {
		for _, n := range c.Requires {
			if n.Crawl == name {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// check says what is wrong with a registry read: each crawl an object
// with a name a crawl can have, committed once, and what its revisits
// need named as a crawl.
func (r *Registry) check() []string {
	var problems []string
	seen := map[string]bool{}
	for what, list := range map[string][]*Crawl{"crawls": r.Crawls, "removed": r.Removed} {
		for i, c := range list {
			if c == nil {
				problems = append(problems, fmt.Sprintf("registry: %s[%d] is null, not a crawl", what, i))
				continue
			}
			if err := checkStoredName(c.Name); err != nil {
				problems = append(problems, fmt.Sprintf("registry: %s[%d]: %v", what, i, err))
				continue
			}
			if what == "crawls" {
				if seen[c.Name] {
					problems = append(problems, fmt.Sprintf("registry: crawl %s is committed twice", c.Name))
				}
				seen[c.Name] = true
			}
			for j, n := range c.Requires {
				if err := checkStoredName(n.Crawl); err != nil {
					problems = append(problems, fmt.Sprintf("registry: %s[%d] (%s) requires[%d]: %v", what, i, c.Name, j, err))
				}
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// RemovedCrawl returns the crawl of that name removed last from the
// index, or nil if none was.
func (r *Registry) RemovedCrawl(name string) *Crawl {
	for i := len(r.Removed) - 1; i >= 0; i-- {
		if r.Removed[i].Name == name {
			return r.Removed[i]
		}
	}
	return nil
}

func readJSON(name string, v any) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
