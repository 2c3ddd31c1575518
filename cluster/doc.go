// Package cluster runs the deduplication job over a collection spread
// across storage hosts, as jobs of a Slurm cluster (warcdedup cluster):
// the stages of warcdedup run (package stage), each task calling them for
// its host or hash range.
//
// A Plan is the job's Slurm jobs and their dependencies: hash (stage 1)
// on each host (pinned to it with --nodelist), resolve and number (stages
// 2 and 3) as a job array with a task per hash range on any node, rewrite
// (stage 4) and hash again on each host, verify (stage 5) and account
// once; comparing each duplicate once, between the rewrites and hash
// again, the collisions steps, which the monitor submits only when a
// rewrite kept a duplicate apart (Step.IfApart). Each Slurm task runs warcdedup cluster-task, which is a
// Task: it reads its inputs from the shared work directory,
// writes its outputs there atomically, and is idempotent, so that a task
// Slurm requeues or runs twice finishes the same way. Records on other
// hosts are read over HTTP (package source); a rewrite reads an original
// in the version of its file that its host's rewrite log names
// (remoteFiles, following its records with a rewritelog.Tail), since that
// host may have replaced the file meanwhile.
//
// With a crawl index (Params.Index, see crawl.go) the hosts' files are
// one crawl: each hash range joins its part of the index, committed
// originals take part in the resolution as kept copies and are read where
// the index says they are, and the account commits the verified crawl as
// warcdedup run --index does.
//
// Run submits the plan (or finds it submitted), follows the jobs through
// squeue with progress on a terminal, requeues failed tasks up
// to a bound, and, when the account is written, gives the Result of
// warcdedup run: the same report, fixity list and rewrite log.
package cluster
