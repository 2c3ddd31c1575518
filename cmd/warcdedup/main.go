// Command warcdedup is the operator's entry point: the whole deduplication
// job on a collection (run), an assessment before anything is rewritten
// (assess), and its undoing (undo). The stage commands (warcsum,
// warccollres, warcsumproc, warcrefs, warcsumcmp) stay for those who
// script their own pipelines.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/urfave/cli/v2"

	"warcdedup/dedup"
	"warcdedup/digest"
	"warcdedup/internal/cmdutil"
	"warcdedup/internal/progress"
	"warcdedup/policy"
)

const description = `warcdedup deduplicates collections of WARC and ARC files after the crawl:
every response whose payload another capture already holds is rewritten,
in the file where it is, as a WARC revisit record that points at the
capture kept, and nothing is lost. Run "warcdedup COMMAND --help" for each
command.`

func main() {
	app := cmdutil.NewApp("warcdedup", "deduplicate web archive collections after the crawl", description, nil, nil)
	app.Action = nil
	app.Commands = []*cli.Command{runCommand(), undoCommand(), clusterCommand(), clusterTaskCommand()}
	cmdutil.Main(app)
}

// jobFlags are the flags of the commands that run the job.
func jobFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "work-dir", Usage: "keep the job's files in `DIR` (default: beside the first collection, COLLECTION.warcdedup)"},
		&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "read `N` files or clusters at once"},
		&cli.StringFlag{Name: "hash", Aliases: []string{"H"}, Value: "sha1", Usage: "payload digest `ALGO`: md5, sha1, sha256 or sha512"},
		&cli.StringFlag{Name: "policy", Value: "replay", Usage: "which byte-identical captures may become revisits of each other: `replay`, payload or uri"},
		&cli.StringFlag{Name: "sort-memory", Usage: "buffer of the system sort (sort -S `SIZE`, e.g. 2G or 25%)"},
		cmdutil.QuietFlag,
		cmdutil.VerboseFlag,
	}
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "deduplicate collections in place, verify, and account for it",
		ArgsUsage: "COLLECTION...",
		Description: `warcdedup run deduplicates each COLLECTION (a directory of WARC and ARC
files, read with its subdirectories) in place:

  1. hash      list every response and existing revisit (warcsum)
  2. sort      by digest (the system sort, temporary files in the work directory)
  3. resolve   prove duplicates byte for byte, number the copies (warccollres -p)
  4. sort      by file
  5. rewrite   duplicates become revisits, each file replaced only by a
               checked, complete new version (warcrefs --in-place)
  6. hash      again: only the files replaced are read
  7. verify    prove nothing was lost (warcsumcmp)
  8. account   report.html, stats.json, fixity.tsv, deps.tsv

The work directory keeps every stage's output: the same command after an
interruption (even SIGKILL) resumes, without redoing finished stages or
files; run again on an unchanged collection, it has nothing to do. It also
keeps what a preservation officer needs afterwards: the manifests, the
rewrite log (appended across runs), the fixity list of every replaced file
(size and SHA-256 before and after), the files each file's revisits depend
on, the statistics and the report.

With --dry-run it does everything but rewrite, and reports what a run would
write and save (the same figures a run then gives).`,
		Flags: append(jobFlags(),
			&cli.BoolFlag{Name: "dry-run", Usage: "rewrite nothing; report what would be rewritten and saved"},
			&cli.BoolFlag{Name: "hard-links", Usage: "rewrite files with several hard links (the other names keep the old bytes)"},
		),
		Action: func(c *cli.Context) error {
			opt, err := jobOptions(c)
			if err != nil {
				return err
			}
			opt.DryRun = c.Bool("dry-run")
			opt.HardLinks = c.Bool("hard-links")
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := dedup.Run(ctx, opt)
			opt.Display.Close()
			if res != nil {
				dedup.Summary(os.Stderr, res)
			}
			switch {
			case err != nil:
				return cli.Exit(err, cmdutil.ExitFatal)
			case res.Report.Exit != 0:
				return cli.Exit("", res.Report.Exit)
			}
			return nil
		},
	}
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
		Collections: c.Args().Slice(),
		WorkDir:     c.String("work-dir"),
		Jobs:        c.Int("jobs"),
		Algorithm:   algo,
		Policy:      pol,
		SortMemory:  c.String("sort-memory"),
		Display:     progress.New(os.Stderr, "warcdedup", c.Bool("quiet")),
	}, nil
}

func undoCommand() *cli.Command {
	return &cli.Command{
		Name:      "undo",
		Usage:     "turn the revisits a run wrote back into the records they replaced",
		ArgsUsage: "PATH...",
		Description: `warcdedup undo restores, in place, every revisit that warcdedup run wrote
in the files at each PATH (a collection, a directory in it, or a file) as
the record it replaced, byte for byte when uncompressed: its header by rule
from the revisit's, or as the revisit kept it when the rule would not give
it back (fields Warcdedup-Added-Fields, Warcdedup-Original-Header,
Warcdedup-Original-Trailer), its payload from the original it refers to,
read now and re-hashed against the revisit's WARC-Payload-Digest. The
rewrite log of the work directory says which revisits are the toolchain's.

Each file is replaced only by a complete, checked new version, as the run
replaces them; a file whose revisit cannot be restored (its original is
gone or changed) is left untouched and named (exit status 1). Interrupted,
the same command restores what is left. The log gets a "restored" entry per
record (warccdx brings indexes up to date from it), and undo-fixity.tsv the
size and SHA-256 of every replaced file before and after.

With --all, other tools' revisits (identical-payload-digest profile) whose
original is in the collection become whole records too: a complete,
self-contained copy of the crawl.

The work directory is found beside the collection holding the first PATH
(COLLECTION.warcdedup), or given with --work-dir.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "work-dir", Usage: "the job's work directory `DIR` (default: beside the collection, COLLECTION.warcdedup)"},
			&cli.BoolFlag{Name: "all", Usage: "also make other tools' revisits whole records"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "restore `N` files at once"},
			&cli.StringFlag{Name: "sort-memory", Usage: "buffer of the system sort (sort -S `SIZE`, e.g. 2G or 25%)"},
			&cli.BoolFlag{Name: "hard-links", Usage: "restore files with several hard links (the other names keep the old bytes)"},
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cmdutil.Usage("name what to undo: %s undo PATH... (a collection, a directory or a file in it; see --help)", c.App.Name)
			}
			display := progress.New(os.Stderr, "warcdedup", c.Bool("quiet"))
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := dedup.Undo(ctx, dedup.UndoOptions{Paths: c.Args().Slice(), WorkDir: c.String("work-dir"), All: c.Bool("all"),
				HardLinks: c.Bool("hard-links"), Jobs: c.Int("jobs"), SortMemory: c.String("sort-memory"), Display: display})
			display.Close()
			if res != nil {
				dedup.UndoSummary(os.Stderr, res)
			}
			switch {
			case err != nil:
				return cli.Exit(err, cmdutil.ExitFatal)
			case res.Exit != 0:
				return cli.Exit("", res.Exit)
			}
			return nil
		},
	}
}
