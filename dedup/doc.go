// Package dedup is warcdedup run on one machine: the
// deduplication job on a collection as a list of stages (package stage:
// hash, sort, resolve and number, sort again, rewrite in place, hash
// again and verify, update the indexes, account; with a crawl index, join
// and commit), run one after the other, each one's outputs kept in the
// work directory (package workdir) so that an interrupted run resumes
// after the last stage done (state.json). Around the stages it keeps what
// a preservation officer needs of every run of the collection (records.go:
// the fixity list, the dependencies, the reports), the crawl index mode
// (crawl.go), the CDX indexes' update (cdx.go) and the collection's
// changes under a run (changes.go). The undo is package undo, which opens
// the job's state and collection again as the run reads them (reopen.go)
// and lists the collection with the same Hash stage to find each
// revisit's original.
package dedup
