// Command warcdedup is the operator's entry point: the whole deduplication
// job on a collection (run), an assessment before anything is rewritten
// (assess), and its undoing (undo). The stage commands (warcsum,
// warccollres, warcsumproc, warcrefs, warcsumcmp) stay for those who
// script their own pipelines.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"warcdedup/assess"
	"warcdedup/cdx"
	"warcdedup/dedup"
	"warcdedup/digest"
	"warcdedup/internal/cmdutil"
	"warcdedup/internal/progress"
	"warcdedup/policy"
	"warcdedup/stage"
	"warcdedup/undo"
	"warcdedup/workdir"
)

const description = `warcdedup deduplicates collections of WARC and ARC files after the crawl:
every response whose payload another capture already holds is rewritten,
in the file where it is, as a WARC revisit record that points at the
capture kept, and nothing is lost. Run "warcdedup COMMAND --help" for each
command.`

// memoryLimit is the Go runtime's soft memory limit (GOMEMLIMIT, which
// overrides it): the job's live heap is bounded by its caches' budgets
// and buffers (about 60-100 MB, flat in the records: docs/scale.md), and
// the default GOGC would let the heap grow to twice that before a
// collection; near the limit the runtime collects sooner instead, so
// that the process stays under 150 MB resident (issue 22).
const memoryLimit = 120 << 20

// gcPercent is the collector's pacing (GOGC, which overrides it): the
// heap may grow to three times what is live, not twice, before a
// collection. The job allocates some 1 GB on the bench collection (each
// original's payload, each record's header) around a live heap of 30-45
// MB: half as many collections, their marking and the allocations' assists
// (about 0.1-0.3 s of CPU of 6 there). The memory limit still bounds the
// process: where the live heap is larger (56 MB at 10^6 records), the
// limit, not this, decides when it collects, as before.
const gcPercent = 200

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	app := cmdutil.NewApp("warcdedup", "deduplicate web archive collections after the crawl", description, nil, nil)
	app.Action = nil
	app.Commands = []*cli.Command{runCommand(), assessCommand(), undoCommand(), indexCommand(), clusterCommand(), clusterTaskCommand(), checkCommand(), commitCommand(), showCommand()}
	cmdutil.Main(app, manual)
}

// jobFlags are the flags of the commands that run the job.
func jobFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "work-dir", Usage: "keep the job's files in `DIR` (default: beside the first collection, COLLECTION.warcdedup)"},
		&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "read `N` files or clusters at once"},
		&cli.StringFlag{Name: "hash", Aliases: []string{"H"}, Value: "sha1", Usage: "payload digest `ALGO`: md5, sha1, sha256 or sha512"},
		&cli.StringFlag{Name: "policy", Value: "replay", Usage: "which byte-identical captures may become revisits of each other, the `POLICY`: replay, payload or uri"},
		&cli.StringFlag{Name: "sort-memory", Usage: "buffer of the system sort (sort -S `SIZE`, e.g. 2G or 25%)"},
		cmdutil.QuietFlag,
		cmdutil.VerboseFlag,
	}
}

// runHelp is the help of warcdedup run.
const runHelp = `warcdedup run deduplicates each COLLECTION (a directory of WARC and ARC
files, read with its subdirectories) in place:

  1     hash        list every response and existing revisit (warcsum)
        sort        by digest (the system sort, temporary files in the
                    work directory)
  2, 3  resolve     prove duplicates byte for byte, number the copies
                    (warccollres -p)
        sort        by file
  4     rewrite     duplicates become revisits, each file replaced only by
                    a checked, complete new version (warcrefs --in-place)
  5     hash again  of the files replaced, only the revisits written are
                    read; the records copied keep their listing (checked
                    byte for byte against the old file before the
                    replacement)
        verify      prove nothing was lost (warcsumcmp)
        indexes     with --cdx: each index updated in place (warccdx
                    --in-place)
        account     report.html, stats.json, fixity.tsv, deps.tsv

The numbers are those of the pipeline of commands (warcsum, warccollres,
warcsumproc, warcrefs, warcsumcmp), which do the same work one by one.

The work directory keeps every stage's output: the same command after an
interruption (even SIGKILL) resumes, without redoing finished stages or
files; run again on an unchanged collection, it has nothing to do. A run
that resumes a job hashed by assess or an interrupted run first checks the
files again: what was added or changed is hashed (the rest comes from the
cache); once the rewrite has begun, a file changed by another process is
named and left to the next run, never taken for records lost. It also
keeps what a preservation officer needs afterwards, of every run of the
collection: the manifests, the rewrite log (appended across runs), the
fixity list of every file any run replaced (size and SHA-256 before the
first replacement and now), the files whose originals each file's
revisits need now, the statistics and the report listing every run; and,
in runs/TIME-MODE/, each run's own report, fixity list and dependencies.

A file another process has open for writing (a crawler writing it under
its final name), or opens for writing while it is rewritten, is refused
and left untouched (Linux: a read lease held from its opening to the
rename); a file still being written under a .open name (Heritrix) is not
read, and is named in run.log. So is every other file that is not a WARC
or ARC file (indexes, WACZ packages, WARC files compressed with lz4 or zstd,
others): the summary counts them by kind. A WARC file compressed whole (one
gzip member holding several records) is read but not rewritten: the
summary says so (warcrecompress gives each record a member of its own). A
collection that cannot be written is found before anything is hashed.

The summary goes to standard output; progress, warnings and why the exit
status is not 0 to standard error. On a terminal the progress line says
which stage of how many is at work and, beside it, the whole job's bytes
done and time left. A run interrupted (Ctrl-C, SIGTERM) or stopped by a
failure says in which stage, and the command that resumes it; the stages
it did not reach are not reported done, its exit status is 2.

With --dry-run it does everything but rewrite, and reports what a run would
write and save (the same figures a run then gives).

With --convert-arc (a legacy ARC archive) a stage before the hash converts
each ARC file x.arc or x.arc.gz to x.warc.gz beside it (package migrate,
arc2warc's mapping): the WARC is written under a temporary name and synced,
proved record for record against the ARC (each record's type, URI, date and
block byte for byte; the warcsum listings of both equal in order), the
proof written to the work directory (convert/, conversion.map) and synced,
the WARC linked to its name (never over a file there), and only then the
ARC removed, or moved to --keep-arc DIR. Killed at any point, the same
command goes on; no ARC is removed before a WARC its proof names is in
place. An ARC that is damaged, cut short or holds no ARC record is left as
it is and named (exit status 1), and the job goes on with it as an ARC
file. An ARC whose WARC name is taken is never overwritten: if that WARC
proves to be its conversion it is adopted and the ARC retired, otherwise
both stay and the ARC is named (exit status 1). The job then deduplicates
the WARC files; the summary, stats.json and report.html say what was
converted. Each --cdx index follows the conversion, then the rewrite,
where it is and in its form: an ARC file's lines become its WARC's (name,
offsets, lengths, and the fields a WARC indexer writes), a line for each
filedesc is added in its sorted place, the lines sorted again where the new
names change the order (a ZipNum, whose blocks keep their number of lines,
is left untouched and named: write it anew with warccdx --conversion).
Undo gives back WARC records: the conversion is not undone (see warcdedup
undo). With --dry-run (or assess --convert-arc) nothing is
converted: what conversion and deduplication would save together is
estimated.

WACZ files in the collection are taken by their WARC members, named
PATH.wacz#archive/NAME: each package is checked first (one that is not what
its datapackage.json says is named and left untouched, exit status 1), and
a package whose members are rewritten is written anew beside itself (index,
datapackage.json and its digest up to date, relation.requires naming the
packages its revisits' originals are in), checked and renamed over itself.
A signed package is refused unless --unsign (its signature is removed and
recorded in datapackage.json).

The collection may also be WACZ files named as such (warcdedup run x.wacz,
or several packages of one directory) or a multi-WACZ JSON (run coll.json:
"resources" with name, path, hash, size and crawlId, as Browsertrix exports
them): only the packages named are read, the work directory is beside the
file named (x.wacz.warcdedup), and undo x.wacz or undo coll.json finds it.
A JSON's packages must be local .wacz files beneath its directory and have
the hash and size it gives (else an error naming the resource, nothing
changed); after the run its entries of the packages rewritten get their
new hash and size, and undo gives it back.

With --cdx INDEX (repeatable) each index of the collection is brought up to
date with the rewrite where it is, in the form it has: CDXJ or CDX, plain or
gzip, or a ZipNum (name its .idx summary or its .cdx.gz blocks): its lines
with their records' new offsets, lengths and revisit fields, exactly what
an indexer writes for the rewritten files, a sorted index still sorted, a
ZipNum's blocks of as many lines as before and its summary (and "!meta")
rewritten with them. Each index is replaced whole or left untouched: one
that does not match its blocks, names files that are not the collection's
or lacks a line the rewrite moved is named with file and line or offset
(exit status 1). The work directory keeps a copy of each as it was before
(indexes/). Run again on a finished job, the command updates the indexes it
names that are not up to date yet.

With --index DIR the collection is one crawl (named after its directory, or
--crawl NAME) of a crawl index: its duplicates of the originals of the
crawls committed to the index, and of each other, become revisits (bytes
compared with the committed original, read where the index says it is);
when the run is verified, the crawl is committed: its responses join the
index as originals for later crawls, atomically. Committed crawls are never
rewritten; a run on a committed, unchanged crawl has nothing to do (a file
whose times, mode or links changed is compared with its SHA-256 as
committed). The work
directory is DIR/work/NAME unless --work-dir. An index that does not verify,
another run of the same crawl in progress, or a name the index cannot hold
is refused when the run starts, before anything is rewritten; the crawls it
joined cannot be removed until it is committed. A crawl may be WACZ
packages: a directory of them, WACZ files named (with --crawl), or a
multi-WACZ JSON (the crawl its resources' crawlId, or --crawl); the commit
records its packages, and a later crawl's revisits of their records carry
WARC-Refers-To-Container: file://NAME.wacz, their package listing it in
relation.requires with its hash, size and crawlId. See warcdedup index.`

func runCommand() *cli.Command {
	return &cli.Command{
		Name:        "run",
		Usage:       "deduplicate collections in place, verify, and account for it",
		ArgsUsage:   "COLLECTION... | X.wacz... | COLL.json",
		Description: runHelp,
		Flags: append(jobFlags(),
			&cli.BoolFlag{Name: "dry-run", Usage: "rewrite nothing; report what would be rewritten and saved"},
			&cli.BoolFlag{Name: "compare-in-resolve", Hidden: true, Usage: "resolve reads and compares every copy, as cluster, crawl-index, WACZ and dry runs do (for tests and benchmarks; by default the rewrite compares each duplicate once)"},
			&cli.BoolFlag{Name: "compare-once", Hidden: true, Usage: "the default (kept for scripts that name it)"},
			&cli.BoolFlag{Name: "hard-links", Usage: "rewrite files with several hard links (the other names keep the old bytes)"},
			&cli.BoolFlag{Name: "unsign", Usage: "rewrite signed WACZ packages: deduplication invalidates their signature, which is removed and recorded in datapackage.json (by default they are refused)"},
			&cli.BoolFlag{Name: "keep-work", Usage: "keep the job's manifests (before, facts, by digest, numbered, by file, after) and saved.tsv once consumed, for inspection"},
			&cli.StringSliceFlag{Name: "cdx", Usage: "bring the `INDEX` of the collection (CDX or CDXJ, plain or gzip, or ZipNum: its .idx or .cdx.gz) up to date with the rewrite, in place (repeatable)"},
			&cli.StringFlag{Name: "index", Usage: "deduplicate the crawl against the crawls committed to the index in `DIR` (created if need be), and commit it when verified"},
			&cli.StringFlag{Name: "crawl", Usage: "with --index: the crawl's `NAME` (default: its directory's name, or the crawlId of a multi-WACZ JSON's resources)"},
			&cli.StringSliceFlag{Name: "include", Usage: "with --index: only the crawl's files matching `GLOB` (path or base name; repeatable)"},
			&cli.StringSliceFlag{Name: "exclude", Usage: "with --index: leave out the crawl's files matching `GLOB` (repeatable)"},
			&cli.BoolFlag{Name: "convert-arc", Usage: "first convert each ARC file to WARC in place, proved record for record before the ARC is removed, then deduplicate the WARC files"},
			&cli.StringFlag{Name: "keep-arc", Usage: "with --convert-arc: move each converted ARC file to `DIR` (its path below the collection kept) instead of removing it"},
		),
		Action: runAction,
	}
}

// runAction runs the job its flags describe and, when the job had
// nothing left to do, brings the indexes named up to date.
func runAction(c *cli.Context) error {
	opt, err := runOptions(c)
	if err != nil {
		return err
	}
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := dedup.Run(ctx, opt)
	var ixres *dedup.CDXResult
	if err == nil && res.NothingToDo && len(opt.CDX) > 0 && !opt.DryRun {
		// The job is done; the indexes named may not be.
		ixres, err = dedup.UpdateCDX(ctx, res.WorkDir, opt.CDX, opt.Display)
	}
	opt.Display.Close()
	if ixres != nil && ixres.Refused > 0 && res.Report.Exit == 0 {
		res.Report.Exit = cmdutil.ExitDamaged
		res.Report.ExitReason = append([]string{fmt.Sprintf("%d indexes left untouched (%s problems)", ixres.Refused, progress.Count(ixres.Problems))}, ixres.Reasons...)
	}
	if ixres != nil && !c.Bool("quiet") {
		defer fmt.Fprintf(os.Stdout, "indexes: %d, %s lines, %s changed\n", ixres.Indexes, progress.Count(ixres.Lines), progress.Count(ixres.Changed))
	}
	return jobEnd(c, res, err)
}

// runOptions are the job's options from run's flags, refusing flags that
// do not go together.
func runOptions(c *cli.Context) (dedup.Options, error) {
	opt, err := jobOptions(c)
	if err != nil {
		return opt, err
	}
	opt.DryRun = c.Bool("dry-run")
	opt.CompareInResolve = c.Bool("compare-in-resolve")
	if c.Bool("compare-once") && opt.CompareInResolve {
		return opt, cli.Exit("warcdedup run: --compare-once and --compare-in-resolve: choose one", cmdutil.ExitFatal)
	}
	opt.ConvertARC, opt.KeepARC = c.Bool("convert-arc"), c.String("keep-arc")
	opt.HardLinks = c.Bool("hard-links")
	opt.Unsign = c.Bool("unsign")
	opt.KeepWork = c.Bool("keep-work")
	opt.CDX = c.StringSlice("cdx")
	if err := dedup.CheckCDX(opt.CDX); err != nil {
		return opt, cmdutil.Usage("%v", err)
	}
	opt.Index, opt.Crawl = c.String("index"), c.String("crawl")
	if opt.ConvertARC && opt.Index != "" {
		return opt, cmdutil.Usage("--convert-arc converts a collection, not a crawl of an index: convert the crawl first (warcdedup run --convert-arc on its own), then run it with --index")
	}
	opt.Include, opt.Exclude = c.StringSlice("include"), c.StringSlice("exclude")
	if opt.Index == "" && (opt.Crawl != "" || len(opt.Include) > 0 || len(opt.Exclude) > 0) {
		return opt, cmdutil.Usage("--crawl, --include and --exclude name a crawl of an index: give --index DIR")
	}
	return opt, nil
}

// assessHelp is the help of warcdedup assess.
const assessHelp = `warcdedup assess tells, before anything is rewritten, what deduplicating
would find and save, in a report (report.html, stats.json) with the same
breakdowns a run gives: by MIME type, host, capture month and payload
size, the largest classes by bytes, same-URL against cross-URL
duplicates, and what stays as it is and why. Nothing in the collection
is written. Three ways, from the surest to the fastest:

  warcdedup assess COLLECTION...
      The whole job as a dry run (warcdedup run --dry-run): every file is
      hashed and every duplicate proven byte for byte; its revisit is built
      and measured, not written. The figures are those a run then gives,
      and a run in the same work directory reuses the hashing.

  warcdedup assess --sample P COLLECTION...
      An estimate for the whole collection with its range, from a sample
      drawn at random (--seed) in one of two ways (--sample-by):

      files: the dry run on P% of the files. It reads P% of the bytes.
      Duplicates within the files read are found; those across files not
      read are estimated from how the payloads found spread over the files
      read (Good-Toulmin's series). The range comes from the spread between
      the files read: wide when they are few, or unalike.

      digests: every file is hashed (the hash stage of a run), and the
      payloads of P% of the digest space (a hash of each digest, with the
      seed) are proven byte for byte and their revisits built and measured.
      Every payload of 1 MB or more is in the slice too. The listing of
      every capture, with each response's status and media type, predicts
      each payload's duplicates and savings; the estimate adds the slice's
      measured difference from the prediction, scaled up by 100/P, and its
      range is Student's t limits of that difference estimator's standard
      error, which rests on the number of payloads in the slice, not on
      the files.

      Measured by scripts/bench-assess-sample.sh at 25%, 90% ranges, seeds
      1 to 10, against the dry run of every file, on generated collections
      of 16 files: of 1.0 GB of WARC files (410 MB to save), every range of
      the bytes saved was within +/-0.02% of its estimate and held the
      truth, at 8.8 CPU seconds against 14.0 for the whole dry run; of
      1.1 GB mixing every format with ARC files and 10% of the duplicates
      served another way (212 MB to save), the ranges were within +/-1.4%
      and held the truth 10 times in 10 (the duplicates' 9 in 10), at 5.1
      CPU seconds against 8.6. Samples of 4 of the same 16 files took 3.3
      and 1.9 CPU seconds, and their ranges reached +/-97% and +/-135%.

      auto (the default) draws files when the sample holds 30 files or
      more, digests otherwise. Files go to WORKDIR/assess-sample.

  warcdedup assess --cdx INDEX...
      From existing CDX or CDXJ indexes (plain or gzip) alone, without
      reading any WARC file: each payload digest's earliest capture is the
      original, every later 2xx capture a duplicate, and its revisit's
      length is modelled. The digests are the indexes' (the records'
      WARC-Payload-Digest headers): trusted, not verified. Minutes for
      millions of lines; memory bounded (the system sort orders the lines,
      one pass reads them). A line that cannot be read is named (index and
      line) and left out: exit status 1. Files go to WORKDIR/assess-cdx,
      WORKDIR being beside the first index unless --work-dir is given.

The summary goes to standard output, progress and why the exit status is
not 0 to standard error; with --json the report's figures (those of its
stats.json) go to standard output instead of the summary.

With --convert-arc (a legacy ARC archive), the dry run of run
--convert-arc: nothing is converted, and the figures are those of the
collection as converted to WARC, where the duplicates ARC files hold can
become revisits. Each duplicate in an ARC file is converted in memory and
its revisit built and measured as the run would write it; the WARC size
of the other records is estimated from one in 16 converted. Under the
replay policy a payload with copies in an ARC and in a WARC file is two
originals in the estimate and one after the conversion: the estimate is
low by those copies (with --policy payload it is the run's figure). Not
with --sample or --cdx yet.`

func assessCommand() *cli.Command {
	return &cli.Command{
		Name:        "assess",
		Usage:       "estimate what deduplication would save, rewriting nothing",
		ArgsUsage:   "COLLECTION... | --cdx INDEX...",
		Description: assessHelp,
		Flags: append(jobFlags(),
			&cli.Float64Flag{Name: "sample", Usage: "estimate from a sample of `P` percent of the files, or of the payload digests (--sample-by)"},
			&cli.StringFlag{Name: "sample-by", Value: "auto", Usage: "with --sample, draw `WHAT`: files (read P% of them), digests (hash every file, prove and measure P% of the payloads), or auto (files when the sample holds 30 or more)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "draw the sample with `N`: the same files for the same N"},
			&cli.Float64Flag{Name: "confidence", Value: 0.95, Usage: "confidence `LEVEL` of a sample's range"},
			&cli.BoolFlag{Name: "cdx", Usage: "the operands are CDX or CDXJ index files: assess from them alone"},
			&cli.StringFlag{Name: "format", Value: "auto", Usage: "with --cdx, the indexes' `FORMAT`: auto (each line's), cdxj or cdx"},
			&cli.BoolFlag{Name: "json", Usage: "print the report's figures as JSON (those of stats.json) instead of the summary"},
			&cli.BoolFlag{Name: "convert-arc", Usage: "estimate what converting the ARC files to WARC (run --convert-arc) and deduplicating save together; nothing is converted"},
		),
		Action: assessAction,
	}
}

// assessAction assesses in the way the flags choose: from the indexes
// alone (--cdx), from a sample (--sample), or by the whole dry run.
func assessAction(c *cli.Context) error {
	a, err := newAssessment(c)
	if err != nil {
		return err
	}
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var res *assess.Result
	switch {
	case c.Bool("cdx"):
		res, err = a.indexes(ctx)
	case c.IsSet("sample"):
		res, err = a.sample(ctx)
	default:
		return a.dryRun(ctx)
	}
	return a.report(res, err)
}

// assessment is one warcdedup assess: the job's options and the flags
// of the way it assesses, checked before anything is read.
type assessment struct {
	c      *cli.Context
	opt    dedup.Options
	format cdx.Format      // of the indexes, with --cdx
	by     assess.SampleBy // what the sample draws, with --sample
}

// newAssessment reads the flags, refusing those that do not go together
// (the usage errors of assess, exit status 2).
func newAssessment(c *cli.Context) (*assessment, error) {
	if c.NArg() == 0 {
		return nil, cmdutil.Usage("name the collection, or the indexes with --cdx: %s assess COLLECTION... (see --help)", c.App.Name)
	}
	opt, err := jobOptions(c)
	if err != nil {
		return nil, err
	}
	opt.ConvertARC = c.Bool("convert-arc")
	a := &assessment{c: c, opt: opt}
	switch {
	case c.IsSet("sample") && c.Bool("cdx"):
		return nil, cmdutil.Usage("--sample reads WARC files and --cdx none: choose one (see --help)")
	case opt.ConvertARC && c.Bool("cdx"):
		return nil, cmdutil.Usage("--convert-arc reads the ARC files, --cdx none: assess the collection with --convert-arc")
	case opt.ConvertARC && c.IsSet("sample"):
		// The sample estimators model ARC files as files whose
		// duplicates stay; not yet as files converted first.
		return nil, cmdutil.Usage("--convert-arc estimates from every file (the dry run of run --convert-arc); --sample does not take it yet")
	case c.Bool("cdx"):
		if a.format, err = cdx.ParseFormat(c.String("format")); err != nil {
			return nil, cmdutil.Usage("%v", err)
		}
	case c.IsSet("sample"):
		if a.by, err = assess.ParseSampleBy(c.String("sample-by")); err != nil {
			return nil, cmdutil.Usage("%v", err)
		}
	}
	return a, nil
}

// indexes assesses from the CDX or CDXJ indexes named, reading no WARC.
func (a *assessment) indexes(ctx context.Context) (*assess.Result, error) {
	opt := a.opt
	res, err := assess.Index(ctx, assess.IndexOptions{Indexes: opt.Collections,
		Dir: filepath.Join(workDir(opt), "assess-cdx"), Policy: opt.Policy, Format: a.format,
		SortMemory: opt.SortMemory, Jobs: opt.Jobs, Display: opt.Display})
	opt.Display.Close()
	return res, err
}

// sample estimates from a sample of the files or of the payload digests.
func (a *assessment) sample(ctx context.Context) (*assess.Result, error) {
	c := a.c
	res, err := assess.Sample(ctx, assess.SampleOptions{Job: a.opt, Dir: filepath.Join(workDir(a.opt), "assess-sample"),
		Percent: c.Float64("sample"), Seed: c.Uint64("seed"), Confidence: c.Float64("confidence"), By: a.by})
	a.opt.Display.Close()
	return res, err
}

// dryRun is the whole job with nothing rewritten, ending as a run does.
func (a *assessment) dryRun(ctx context.Context) error {
	a.opt.DryRun = true
	full, err := dedup.Run(ctx, a.opt)
	a.opt.Display.Close()
	return jobEnd(a.c, full, err)
}

// report prints what an index or sample assessment found, as JSON or as
// a summary, and says why the exit status is not 0.
func (a *assessment) report(res *assess.Result, err error) error {
	c := a.c
	switch {
	case res == nil || res.Report == nil:
	case c.Bool("json"):
		if jerr := printJSON(os.Stdout, res.Report); jerr != nil {
			return jerr
		}
	case !c.Bool("quiet"):
		assess.Summary(os.Stdout, res)
	}
	switch {
	case err != nil:
		return cli.Exit(err.Error(), cmdutil.ExitFatal)
	case res.Report != nil && res.Report.Exit != 0:
		exitReasons(res.Report.Exit, res.Report.ExitReason)
		return cli.Exit("", res.Report.Exit)
	}
	return nil
}

// workDir is the work directory a job's flags name, or the default beside
// the first operand.
func workDir(opt dedup.Options) string {
	if opt.WorkDir != "" {
		return opt.WorkDir
	}
	return workdir.Default(opt.Collections[0])
}

// jobOptions reads the flags every job command has.
func jobOptions(c *cli.Context) (dedup.Options, error) {
	if c.NArg() == 0 {
		return dedup.Options{}, cmdutil.Usage("name the collection: %s %s COLLECTION... (see --help)", c.App.Name, c.Command.Name)
	}
	algo, err := digest.ParseLabel(c.String("hash"))
	if err != nil {
		return dedup.Options{}, cmdutil.Usage("%v", err)
	}
	pol, err := policy.Parse(c.String("policy"))
	if err != nil {
		return dedup.Options{}, cmdutil.Usage("%v", err)
	}
	return dedup.Options{
		Command:        commandLine(),
		Collections:    c.Args().Slice(),
		WorkDir:        c.String("work-dir"),
		Jobs:           c.Int("jobs"),
		Algorithm:      algo,
		Policy:         pol,
		SortMemory:     c.String("sort-memory"),
		Display:        progress.New(os.Stderr, "warcdedup", c.Bool("quiet")),
		ConvertOptions: dedup.ConvertOptions{Software: "warcdedup " + cmdutil.Version},
	}, nil
}

// undoHelp is the help of warcdedup undo.
const undoHelp = `warcdedup undo restores, in place, every revisit that warcdedup run wrote
in the files at each PATH (a collection, a directory in it, or a file) as
the record it replaced, byte for byte uncompressed: its header by rule
from the revisit's, or as the revisit kept it when the rule would not give
it back (fields Warcdedup-Added-Fields, Warcdedup-Original-Header,
Warcdedup-Original-Trailer), its payload from the original it refers to,
read now and re-hashed against the revisit's WARC-Payload-Digest. The
rewrite log of the work directory says which revisits are the toolchain's.

In a .warc.gz file each restored record is a gzip member of its own: the
member it had, rebuilt bit for bit, when the log describes it (the tenth
field of its entry: length, gzip header, SHA-256, logged by the run) and
a zlib setting makes it again (levels 1-9, memLevel 8 or 9, flushed before
the finish or not: the members of Heritrix, NetarchiveSuite, wget,
warcprox); otherwise a member compressed afresh, and the reason counted:
no description, no setting matched (another compressor, such as gowarc's),
no zlib (a build without cgo). So a file is given back bit for bit (its
SHA-256 from before the earliest run undone, its "# file" line in the log)
wherever it is uncompressed or every member is rebuilt. For each file
restored, undo says "restored bit for bit" or "records equal, bytes differ
(N members recompressed)": the summary counts both and names the first
ten that differ, undo.json holds the figures (BitExact, BytesDiffer,
Stats.Members) and run.log a line per file. A file whose every member was
rebuilt and whose bytes still differ is named (exit status 1).

Each file is replaced only by a complete, checked new version, as the run
replaces them; a file whose revisit cannot be restored (its original is
gone or changed), or that is not the version the rewrite log's last entry
for it describes, is left untouched and named (exit status 1).
Interrupted, even by kill -9, the same command first completes the log
from its journal and then restores what is left. The log gets a
"restored" entry per record (warccdx brings indexes up to date from it),
and undo-fixity.tsv the size and SHA-256 of every replaced file before
and after (kept with undo.json in runs/TIME-undo/); the work directory's
fixity.tsv, deps.tsv (the revisits restored no longer need their
originals) and report are brought up to date.

Before it exits 0, undo reads again every file named that the log names:
no revisit the log wrote may be left in it, and it must have the size and
SHA-256 the log records for its last replacement; any that is not is
named (exit status 1). A log shorter than it was when last left whole
(rewrite.log.size) is refused (exit status 2): it has lost entries, and
undo could not know every revisit to restore.

With --all, other tools' revisits (identical-payload-digest profile) whose
original is in the collection become whole records too: a complete,
self-contained copy of the crawl.

With --cdx INDEX (repeatable), as run has it, each index (CDX or CDXJ, plain
or gzip, or ZipNum) is brought up to date with the undo: the restored
records' lines are full records' lines again, every other line of a restored
file moves with its record. An index that run --cdx updated is known to the
work directory, and gets every entry of the log it lacks (an undo without
--cdx in between, an interrupted one); any other is taken to be of the files
as they were when the undo began. Each index is replaced whole or left
untouched and named (exit status 1).

The work directory is found beside the collection holding the first PATH
(COLLECTION.warcdedup), or given with --work-dir. A crawl run with --index
has its work directory in the index (INDEX/work/CRAWL): give --index. A
crawl committed to the index is refused: its responses are originals of
later crawls at the offsets the index records; take it out first
(warcdedup index remove), then undo it.

After run --convert-arc, undo gives back the WARC records the revisits
replaced, in the WARC files: it does not convert back to ARC. The WARC
holds every byte of every ARC record (each conversion was proved record
for record), and an ARC rebuilt from it would not be the file retired;
with --keep-arc the ARC files are in that directory, byte for byte, and
the summary says which it is.`

func undoCommand() *cli.Command {
	return &cli.Command{
		Name:        "undo",
		Usage:       "turn the revisits a run wrote back into the records they replaced",
		ArgsUsage:   "PATH...",
		Description: undoHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "work-dir", Usage: "the job's work directory `DIR` (default: beside the collection, COLLECTION.warcdedup)"},
			&cli.StringFlag{Name: "index", Usage: "the crawl index `DIR` the crawl was run with: its work directory there"},
			&cli.BoolFlag{Name: "all", Usage: "also make other tools' revisits whole records"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "restore `N` files at once"},
			&cli.StringFlag{Name: "sort-memory", Usage: "buffer of the system sort (sort -S `SIZE`, e.g. 2G or 25%)"},
			&cli.BoolFlag{Name: "hard-links", Usage: "restore files with several hard links (the other names keep the old bytes)"},
			&cli.StringSliceFlag{Name: "cdx", Usage: "bring the `INDEX` of the collection (CDX or CDXJ, plain or gzip, or ZipNum) up to date with the undo, in place (repeatable)"},
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		},
		Action: undoAction,
	}
}

// undoAction undoes what the runs of the paths named rewrote.
func undoAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return cmdutil.Usage("name what to undo: %s undo PATH... (a collection, a directory or a file in it; see --help)", c.App.Name)
	}
	if err := dedup.CheckCDX(c.StringSlice("cdx")); err != nil {
		return cmdutil.Usage("%v", err)
	}
	display := progress.New(os.Stderr, "warcdedup", c.Bool("quiet"))
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := undo.Run(ctx, undo.Options{Paths: c.Args().Slice(), WorkDir: c.String("work-dir"), Index: c.String("index"), All: c.Bool("all"),
		HardLinks: c.Bool("hard-links"), Jobs: c.Int("jobs"), SortMemory: c.String("sort-memory"), Display: display,
		CDX: c.StringSlice("cdx")})
	display.Close()
	return undoEnd(c, res, err)
}

// undoEnd reports an undo: its summary on standard output and, on
// standard error, why the exit status is not 0.
func undoEnd(c *cli.Context, res *undo.Result, err error) error {
	if res == nil {
		return cli.Exit(fmt.Sprint(err), cmdutil.ExitFatal)
	}
	var stopped string
	if err != nil {
		// Stopped: the status is 2 and the first reason says
		// where and how to go on, whatever the files refused.
		stopped = undoStopped(err, res)
		res.Exit, res.ExitReason = cmdutil.ExitFatal, append([]string{stopped}, res.ExitReason...)
	}
	if !c.Bool("quiet") {
		if stopped != "" {
			fmt.Fprintf(os.Stdout, "not finished: %s\n", stopped)
		}
		undo.Summary(os.Stdout, res)
		if note, nerr := dedup.UndoConversionNote(res.WorkDir); nerr != nil {
			fmt.Fprintf(os.Stderr, "warcdedup: %v\n", nerr)
		} else if note != "" {
			fmt.Fprintln(os.Stdout, note)
		}
	}
	exitReasons(res.Exit, res.ExitReason)
	if res.Exit != 0 {
		return cli.Exit("", res.Exit)
	}
	return nil
}

// undoStopped says that an undo stopped, and how it goes on: the files
// it restored are whole and logged, the one it was at is untouched, and
// the same command restores the rest.
func undoStopped(err error, res *undo.Result) string {
	how := fmt.Sprintf("stopped: %v; once that is mended, ", err)
	if progress.Interrupted(err) {
		how = "interrupted: "
	}
	left := ""
	if n := res.Stats.Refused; n > 0 {
		left = fmt.Sprintf("; %s it was restoring left untouched", progress.Plural(n, "file", ""))
	}
	return fmt.Sprintf("%s%s restored before it stopped, each whole and logged%s; run the same command to finish: %s",
		how, progress.Plural(res.Stats.Restored, "file", ""), left, commandLine())
}

func runtimeCPUs() int { return runtime.NumCPU() }

// exitReasons says, on standard error, why the exit status is not 0.
func exitReasons(status int, reasons []string) {
	stage.ExitReasons(os.Stderr, "warcdedup", status, reasons)
}

// jobEnd ends a command that ran the job (run, assess without --sample,
// cluster): its summary on standard output (unless -q), why the exit
// status is not 0 on standard error, and that status returned: the one
// the report holds and prints, also for a job that stopped (2).
func jobEnd(c *cli.Context, res *stage.Result, err error) error {
	if res == nil {
		if err == nil {
			return nil
		}
		return cli.Exit(err.Error(), cmdutil.ExitFatal)
	}
	if err != nil && res.Report.Exit == 0 {
		res.Report.Exit, res.Report.ExitReason = cmdutil.ExitFatal, []string{err.Error()}
	}
	switch {
	case c.Bool("json"):
		if jerr := printJSON(os.Stdout, res.Report); jerr != nil {
			return jerr
		}
	case !c.Bool("quiet"):
		stage.Summary(os.Stdout, res)
	}
	exitReasons(res.Report.Exit, res.Report.ExitReason)
	if res.Report.Exit != 0 {
		return cli.Exit("", res.Report.Exit)
	}
	return nil
}

// commandLine is the command as it was run, its words quoted for a
// shell where need be: what an interrupted job names as the command that
// resumes it.
func commandLine() string {
	words := []string{"warcdedup"}
	for _, a := range os.Args[1:] {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// shellQuote quotes a word for a POSIX shell when it holds anything but
// letters, digits and -_./=:,+@%.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
