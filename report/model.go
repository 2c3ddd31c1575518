// Package report is what a deduplication did, or would do, to a collection:
// the figures a preservation officer needs to decide and to account for it,
// kept as JSON (stats.json) and shown as one self-contained HTML page with
// SVG charts (report.html). Both are written by warcdedup run and assess
// into the work directory.
package report

import (
	"time"
)

// Report is the account of one run or assessment.
type Report struct {
	Title     string    `json:"title"`
	Generated time.Time `json:"generated"`
	// Mode says what the figures are: "run" (done), "dry run" and
	// "assess" (what a run would do), "sample" (estimated from a sample of
	// the files), "cdx" (estimated from CDX/CDXJ indexes alone).
	Mode        string   `json:"mode"`
	Collections []string `json:"collections"`
	Policy      string   `json:"policy"`    // replay, payload or uri
	Algorithm   string   `json:"algorithm"` // of the payload digests
	// Caveats are sentences the reader must see next to the figures (for
	// example "header digests are trusted: no payload was read").
	Caveats []string `json:"caveats,omitempty"`

	Totals   Totals    `json:"totals"`
	Estimate *Estimate `json:"estimate,omitempty"` // for sample and cdx modes
	// Conversion is what converting the ARC files to WARC first did, or
	// would do (conversion.go); nil without --convert-arc.
	Conversion *Conversion `json:"conversion,omitempty"`

	// Breakdowns of the duplication; each bucket counts the records listed
	// (candidates), their duplicates, and the bytes involved.
	ByMIME  []Bucket `json:"by_mime"`  // top MIME types by duplicate bytes, then "other"
	ByHost  []Bucket `json:"by_host"`  // top hosts by duplicate bytes, then "other"
	ByMonth []Bucket `json:"by_month"` // capture month, YYYY-MM, in order
	BySize  []Bucket `json:"by_size"`  // payload size ranges, in order ("< 1 kB", "1-10 kB", ...)
	// SameURL are duplicates whose original has their own URI (a re-fetch);
	// CrossURL the others (the same bytes under another URI).
	SameURL  Bucket `json:"same_url"`
	CrossURL Bucket `json:"cross_url"`

	// LargestClasses are the payload classes with the most duplicate bytes.
	LargestClasses []Class `json:"largest_classes"`
	// NotDeduplicable are the duplicates kept as they are, by reason:
	// with the revisits written they add up to the duplicates
	// (Totals.Duplicates = RevisitsWritten + the records here,
	// DuplicateBytes = RevisitedBytes + the bytes here).
	NotDeduplicable []Reason `json:"not_deduplicable"`
	// ServedApartWhy says why the responses of Totals.ServedApart are
	// not duplicates (the policy, and any hash collision).
	ServedApartWhy string `json:"served_apart_why,omitempty"`
	// FilesNotDeduplicated are the files of the collection a run does not
	// deduplicate, by kind: those it does not read (still being written,
	// indexes, other formats: not counted in Totals.Files), and those it
	// reads but cannot rewrite (Read: gzip members of several records).
	FilesNotDeduplicated []FileGroup `json:"files_not_deduplicated,omitempty"`

	Stages []Stage `json:"stages,omitempty"` // what the run did, in order, with times
	// Stopped says where and why the run stopped before its end
	// ("interrupted in step 5 of 8 (rewrite): ..."); "" for a run that
	// ran every stage. The figures of a stopped run are those of the
	// stages it finished only (an account not done leaves them 0).
	Stopped string  `json:"stopped,omitempty"`
	Crawls  []Crawl `json:"crawls,omitempty"` // with an index: per crawl
	// Exit is the run's exit status and, when not 0, why.
	Exit       int      `json:"exit_status"`
	ExitReason []string `json:"exit_reason,omitempty"`

	// Collection is what every run and undo of the work directory did to
	// the collection, and Runs lists them, oldest first, each with its
	// own report: the work directory's report (warcdedup run's) only.
	Collection *Collection `json:"collection,omitempty"`
	Runs       []Run       `json:"runs,omitempty"`
}

// Collection is what this toolchain's runs and undos did to a collection,
// all of them: counted from the rewrite log, which lists every record
// they rewrote.
type Collection struct {
	RevisitsWritten int64 `json:"revisits_written"` // by every run
	RecordsRestored int64 `json:"records_restored"` // by every undo
	// BytesSaved are the bytes the revisits written saved, less those
	// restoring records took back.
	BytesSaved    int64 `json:"bytes_saved"`
	FilesReplaced int64 `json:"files_replaced"` // files replaced once or more (fixity.tsv)
}

// Run is one run or undo of a work directory, as its own report (in Dir)
// tells it.
type Run struct {
	Dir     string    `json:"dir"` // relative to the work directory: runs/TIME-MODE
	Started time.Time `json:"started"`
	// Mode is "run", "dry run" or "undo".
	Mode            string `json:"mode"`
	Exit            int    `json:"exit_status"`
	Files           int64  `json:"files"`            // of the collection (run) or restored (undo)
	RevisitsWritten int64  `json:"revisits_written"` // (or that would be written)
	BytesSaved      int64  `json:"bytes_saved"`      // (or that would be); an undo's are negative
	FilesRewritten  int64  `json:"files_rewritten"`  // replaced by the run or the undo
	RecordsRestored int64  `json:"records_restored,omitempty"`
}

// Other is the label of the bucket that holds the groups after the top
// ones of a breakdown (ByMIME, ByHost); the HTML page adds the groups it
// has no room for to it.
const Other = "other"

// Totals are the collection's figures.
type Totals struct {
	Files       int64 `json:"files"`
	StoredBytes int64 `json:"stored_bytes"` // of the files
	// FilesInProgress are files a crawler was still writing (".open"),
	// not read and not counted in Files.
	FilesInProgress int64 `json:"files_in_progress,omitempty"`
	Records         int64 `json:"records"`        // candidate responses listed
	RecordBytes     int64 `json:"record_bytes"`   // their stored bytes
	Revisits        int64 `json:"revisits_found"` // revisit records already in the collection
	Duplicates      int64 `json:"duplicates"`     // responses that are duplicates under the policy
	DuplicateBytes  int64 `json:"duplicate_bytes"`
	RevisitsWritten int64 `json:"revisits_written"` // (or that would be written)
	BytesSaved      int64 `json:"bytes_saved"`      // (or that would be saved)
	FilesRewritten  int64 `json:"files_rewritten"`
	FilesRefused    int64 `json:"files_refused"`
	StaleLines      int64 `json:"stale_lines"`
	DamagedRecords  int64 `json:"damaged_records"`
	// UnreadableFiles are files no record of which could be read (their
	// damaged records are in DamagedRecords too).
	UnreadableFiles int64 `json:"unreadable_files"`
	Violations      int64 `json:"violations"` // found by verification; must be 0
	// RevisitedBytes are the stored bytes of the records that became
	// revisits (or would): with the kept duplicates' bytes, the
	// duplicate bytes.
	RevisitedBytes int64 `json:"revisited_bytes"`
	// ServedApart are responses that repeat an earlier capture's
	// payload but are not its duplicates: served differently under the
	// policy (another status, type, encoding or container), or other
	// bytes under the same digest (a hash collision). Each is the
	// original of a class of its own; not counted in Duplicates.
	ServedApart      int64 `json:"served_apart"`
	ServedApartBytes int64 `json:"served_apart_bytes"`
}

// FileGroup is a kind of file of the collection that a run does not
// deduplicate, how many and their bytes.
type FileGroup struct {
	Kind  string `json:"kind"`  // singular: "index", "file still being written"
	Kinds string `json:"kinds"` // plural: "indexes"
	Why   string `json:"why"`   // what it is, why it is passed over
	Read  bool   `json:"read"`  // read (listed, counted in Totals.Files), but not rewritable
	Files int64  `json:"files"`
	Bytes int64  `json:"bytes"`
}

// Estimate qualifies figures that were not measured on every record.
type Estimate struct {
	Method string `json:"method"` // how the figures were estimated, in one sentence
	// SampledFiles and SampledBytes say what was read.
	SampledFiles int64 `json:"sampled_files"`
	SampledBytes int64 `json:"sampled_bytes"`
	// BytesSaved is the estimate, with a range within which the true value
	// lies with the stated confidence.
	BytesSaved     int64   `json:"bytes_saved"`
	BytesSavedLow  int64   `json:"bytes_saved_low"`
	BytesSavedHigh int64   `json:"bytes_saved_high"`
	Confidence     float64 `json:"confidence"` // e.g. 0.95
	Duplicates     int64   `json:"duplicates"`
	DuplicatesLow  int64   `json:"duplicates_low"`
	DuplicatesHigh int64   `json:"duplicates_high"`
	// Records is the estimated number of candidate responses in the
	// whole collection (the duplicates' share is of it); 0 when Totals
	// count them all.
	Records int64 `json:"records,omitempty"`
}

// Bucket is one group of records in a breakdown.
type Bucket struct {
	Label          string `json:"label"`
	Records        int64  `json:"records"`
	Bytes          int64  `json:"bytes"` // stored bytes of those records
	Duplicates     int64  `json:"duplicates"`
	DuplicateBytes int64  `json:"duplicate_bytes"`
	BytesSaved     int64  `json:"bytes_saved"` // by the revisits written (or that would be)
}

// Class is one payload class (digest and ext).
type Class struct {
	Digest         string `json:"digest"`
	Ext            int    `json:"ext"`
	Copies         int64  `json:"copies"`
	Bytes          int64  `json:"stored_bytes"`    // of all its records
	DuplicateBytes int64  `json:"duplicate_bytes"` // of its duplicates
	MIME           string `json:"mime,omitempty"`
	URI            string `json:"original_uri"`
	Date           string `json:"original_date"`
}

// Reason is a kind of record that stays as it is, though it repeats a
// payload.
type Reason struct {
	Why     string `json:"why"` // e.g. "in an ARC file (convert it to WARC first)"
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
}

// Stage is one stage of a run: done by it (Took), done before it
// (Skipped: by an earlier run of the job or an assessment, which Note
// names), stopped (the run stopped in it: not done), or not run (the run
// stopped before it).
type Stage struct {
	Name    string        `json:"name"`
	Took    time.Duration `json:"took_ns"`
	Skipped bool          `json:"skipped,omitempty"`
	Stopped bool          `json:"stopped,omitempty"`
	NotRun  bool          `json:"not_run,omitempty"`
	Note    string        `json:"note,omitempty"`
}

// Done reports whether the stage is done, by this run or before it.
func (s *Stage) Done() bool { return !s.Stopped && !s.NotRun }

// Crawl is one crawl of a deduplication index (warcdedup run --index).
type Crawl struct {
	Name            string   `json:"name"`
	Committed       bool     `json:"committed"`
	Records         int64    `json:"records"`          // responses and revisits
	RevisitsWritten int64    `json:"revisits_written"` // by this toolchain
	BytesConserved  int64    `json:"bytes_conserved"`
	Size            int64    `json:"size"`
	Requires        []string `json:"requires,omitempty"` // crawls its revisits need for replay
}

// Add adds x's counts to b.
func (b *Bucket) Add(x Bucket) {
	b.Records += x.Records
	b.Bytes += x.Bytes
	b.Duplicates += x.Duplicates
	b.DuplicateBytes += x.DuplicateBytes
	b.BytesSaved += x.BytesSaved
}
