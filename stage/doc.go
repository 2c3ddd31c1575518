// Package stage is the deduplication job's stages, each a small type of
// explicit inputs and outputs (work files in, work files out, figures and
// messages back), called by warcdedup run (package dedup) on one machine,
// by warcdedup cluster (package cluster) in its Slurm tasks, per storage
// host and per hash range, and by warcdedup undo. Each stage wraps the
// package that does its work; a record is followed from one stage to the
// next through the work files that package workdir names:
//
//  1. Hash (hash.go, package warcsum): every response and existing
//     revisit of the files listed, with its digest, into a manifest in
//     file order, and each response's status and media type (the facts).
//     The manifest is then sorted on digest (internal/syssort); with a
//     crawl index, Join (join.go) adds the index's originals of its
//     digests.
//  2. and 3. Resolve (resolve.go, package collres): the copies numbered:
//     the numbered manifest, on digest, sorted again on file for the
//     rewrite. Where each duplicate is compared once (warcdedup run, by
//     default), from
//     the manifest alone, reading nothing; otherwise (cluster, a crawl
//     index, WACZ) the lines of each digest read and compared byte for
//     byte, collisions split into classes.
//  4. Rewrite (rewrite.go, package refs): each duplicate (copy > 1) in
//     place as a revisit of its class's copy 1 once compared with it byte
//     for byte, every file replaced only by a checked, complete new
//     version, each replacement in the rewrite log; saved.tsv lists each
//     revisit written and its length. After a resolve that read nothing,
//     a duplicate its original does not match stays as it is, listed
//     (Apart); Collide (collide.go) resolves just those digests byte for
//     byte and a second Rewrite does what the new numbering allows.
//  5. Hash again (Hash, of the files replaced only the revisits written
//     are read) and Verify (verify.go, package verify): nothing was lost.
//
// Then Account (account.go) adds it up into the report, and with a crawl
// index Commit (commit.go) commits the verified crawl.
//
// The numbers are those of the WARCrefs paper and of the README's
// pipeline of commands (warcsum, warccollres, warcsumproc, warcrefs,
// warcsumcmp); warcdedup run --help and cluster --help give the same.
//
// What a caller adds is where its files are and how its work is shown:
// run shows stages on a terminal and keeps their figures for a resumed
// run; a cluster task writes a progress file and its result for the
// monitor. Neither carries a copy of a stage.
//
// A stage to come slots in between these: an ARC-to-WARC conversion
// (package migrate) before Hash, whose outputs are the files Hash lists;
// WACZ packages as inputs (package wacz), whose members Hash lists by the
// names warcsum gives them ("x.wacz#archive/...").
package stage
