package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/internal/progress"
	"warcdedup/migrate"
	"warcdedup/replica"
	"warcdedup/workdir"
)

func commitCommand() *cli.Command {
	return &cli.Command{
		Name:      "commit",
		Usage:     "bring a second copy of the collection up to date with a verified job",
		ArgsUsage: "--to COPY COLLECTION",
		Description: `warcdedup commit brings COPY, a second copy of COLLECTION (a directory
holding the same files, on another disk or host), up to date with the job
that warcdedup run finished and verified on COLLECTION: the last step of
the paper's plan, taken only when the job is done.

The files the job changed are read from its work directory: the rewrite
log's "# file" lines (each replaced file's size and SHA-256 before and
after, every run and undo) and, after run --convert-arc, the conversion
map (each ARC file, the WARC that replaced it). First every such file of
COPY is checked: it must be a version the job knew (the one it started
from, or a later one), and the collection's must be the last version. If
one is not (someone changed the copy, or the collection since the job),
nothing is copied and the exit status is 1. So it is when a file holding
originals the revisits need (the work directory's deps.tsv) that the job
did not change differs between COPY and the collection, or is missing
from COPY: the revisits copied would point at records COPY lacks. COPY
must be another directory than the collection (not it under another
name, inside it or holding it), and no other job may work on it
meanwhile: the commit takes COPY's collection lock, as run and undo take
theirs.

Then each file is copied atomically: to a temporary name in COPY, synced,
read back and checked against the SHA-256 the log gives its last version,
renamed over its name, the directory synced. A converted ARC file leaves
COPY only once its WARC is there, right after it (COPY needs room for one
more file, not for every WARC beside every ARC). Interrupted (even SIGKILL), the same
command goes on: files COPY already holds in their last version are
skipped. The summary (stdout) says what was copied, what was up to date
and what was removed; --json prints it as JSON.

A job on WACZ packages is refused, each package named: the rewrite log
has their WARC members, not the packages (indexes, datapackage.json), so
there is no version of a package to check the copy's against; copy the
packages whole, or run the job on the copy.

On a cluster, run it per storage host with that host's COLLECTION and
COPY and the job's work directory.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Required: true, Usage: "the second copy's `DIR`"},
			&cli.StringFlag{Name: "work-dir", Usage: "the job's work directory `DIR` (default: beside the collection, COLLECTION.warcdedup)"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			cmdutil.QuietFlag,
		},
		Action: commit,
	}
}

// commit is warcdedup commit: the job's changes and originals read from
// its work directory, then the second copy brought up to date with them.
func commit(c *cli.Context) error {
	if c.NArg() != 1 {
		return cmdutil.Usage("name one collection: %s commit --to COPY COLLECTION (see --help)", c.App.Name)
	}
	coll := c.Args().First()
	wd := c.String("work-dir")
	if wd == "" {
		wd = workdir.Default(coll)
	}
	if err := replica.JobVerified(wd); err != nil {
		return cli.Exit(err, cmdutil.ExitDamaged)
	}
	fatal := func(err error) error { return cli.Exit(err, cmdutil.ExitFatal) }
	changes, err := replica.Changes(filepath.Join(wd, workdir.LogFile), filepath.Join(wd, migrate.MapFile))
	if err != nil {
		return fatal(err)
	}
	originals, err := replica.Originals(filepath.Join(wd, workdir.DepsFile))
	if err != nil {
		return fatal(err)
	}
	display := progress.New(os.Stderr, "warcdedup", c.Bool("quiet"))
	stage := display.Start("commit to "+c.String("to"), "bytes", 0)
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := replica.Commit(ctx, replica.Options{Collection: coll, Copy: c.String("to"),
		Originals: originals, Progress: stage.Counter()}, changes)
	stage.Done("")
	display.Close()
	if res != nil {
		if c.Bool("json") {
			if jerr := res.JSON(os.Stdout); jerr != nil && err == nil {
				err = jerr
			}
		} else {
			commitSummary(res, len(changes))
		}
	}
	switch {
	case errors.Is(err, replica.ErrRefused):
		if !c.Bool("json") {
			for _, f := range res.Files {
				fmt.Fprintf(os.Stderr, "warcdedup: commit: %s\n", f.Reason)
			}
		}
		return cli.Exit(fmt.Sprintf("commit: %v", err), cmdutil.ExitDamaged)
	case err != nil:
		return fatal(err)
	}
	return nil
}

func commitSummary(res *replica.Result, changed int) {
	fmt.Printf("second copy %s: %d files the job changed: %d copied (%s), %d already up to date, %d converted ARC files removed\n",
		res.Copy, changed, res.Copied, cmdutil.Bytes(res.Bytes), res.UpToDate, res.Removed)
	if res.Refused > 0 {
		fmt.Printf("refused: %d files do not match; nothing copied\n", res.Refused)
	}
}

func init() {
	manual.Commands["commit"] = cmdutil.Manual{
		Exit: map[int]string{
			cmdutil.ExitOK:      "The second copy holds, for every file the job changed, its last version, checked by SHA-256 (and no converted ARC file).",
			cmdutil.ExitDamaged: "Refused, nothing copied: a file of the second copy is no version the job knew (changed since), a collection's file is not the job's last version, or the job is not finished and verified.",
			cmdutil.ExitFatal:   "The commit stopped: bad usage, a failure it names, or an interruption. Every file of the copy is a version the job knew; the same command goes on.",
		},
		Examples: []cmdutil.Example{
			{Says: "Deduplicate one copy, check it, then bring the second copy up to date:",
				Run: "warcdedup run /archive/a/crawl\n" +
					"warcdedup commit --to /archive/b/crawl /archive/a/crawl"},
			{Says: "The same with the work directory elsewhere, the result as JSON:",
				Run: "warcdedup commit --json --work-dir /scratch/crawl.warcdedup \\\n" +
					"  --to /mnt/copy2/crawl /archive/crawl"},
		},
		SeeAlso: []string{"warcdedup-run(1)", "warcdedup-check(1)"},
	}
}
