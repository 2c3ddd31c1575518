// Command warcsumcmp compares two manifests of one collection, taken before
// and after deduplication, and proves nothing was lost.
package main

import (
	"bufio"
	"fmt"
	"os"
	"syscall"

	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/verify"
)

const description = `warcsumcmp BEFORE AFTER compares the manifests of a collection taken
before and after a rewrite, both written by warcsum (with its revisit lines;
any order of lines), and proves that nothing was lost:

  - every record of BEFORE is present in AFTER with the same URI, date and
    digest, either as itself or as a revisit whose Refers-To URI and date
    name a response in AFTER with the same digest (and, when BEFORE has
    field 7, the same ext class); each record of AFTER stands for one
    record of BEFORE;
  - every revisit of BEFORE is still in AFTER, and one that referred to a
    response still does (the rewrite did not turn its original into a
    revisit);
  - every payload class keeps a response of its own.

With --order it checks a conversion instead (ARC to WARC, the paper's step
4): the two manifests, each of one file in file order, must list the same
URI, date and digest in the same order; offsets and lengths may differ.

It prints every violation on stdout and a summary on stderr, and exits 1 if
there is any.

Memory does not grow with the manifests: without --order the comparison is
a series of merge joins over files sorted by the system sort (LC_ALL=C
sort -S SIZE), in the temporary directory (-T DIR, else $TMPDIR or /tmp),
which holds at most about three times BEFORE and AFTER together while it
runs and nothing after. What it holds in memory at a time is the records of
one URI and date, the payload classes of one digest, and the sort's buffer
(--sort-memory, 64M unless given). With --order the two manifests are read
side by side.`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "Nothing was lost: every record of BEFORE is in AFTER, as itself or as a revisit that resolves (with --order: the same records in the same order).",
		cmdutil.ExitDamaged: "Violations were found (each printed on standard output), or BEFORE was empty: nothing was compared.",
		cmdutil.ExitFatal:   "The run stopped: bad usage (not two manifests), or a manifest that could not be read or is malformed.",
	},
	Examples: []cmdutil.Example{
		{Says: "Prove that a rewrite lost nothing:",
			Run: "warcsum -r coll > before\n" +
				"# ... warccollres, warcrefs ...\n" +
				"warcsum -r coll > after\n" +
				"warcsumcmp before after"},
		{Says: "Prove that a conversion kept every record, in order:",
			Run: "warcsumcmp --order <(warcsum x.arc.gz) <(warcsum warcs/x.warc.gz)"},
	},
	SeeAlso: []string{"warcsum(1)", "warcrefs(1)", "arc2warc(1)", "warcdedup-run(1)"},
}

func main() {
	app := cmdutil.NewApp("warcsumcmp", "prove that a rewrite lost no record", description,
		[]cli.Flag{
			&cli.BoolFlag{Name: "order", Usage: "compare record by record in order (a conversion), not by URI and date"},
			&cli.StringFlag{Name: "temporary-directory", Aliases: []string{"T"}, Usage: "the sort's temporary files go in `DIR` (default $TMPDIR, else /tmp)"},
			&cli.StringFlag{Name: "sort-memory", Usage: "buffer of the system sort (sort -S `SIZE`, e.g. 500M; default " + syssort.DefaultMemory + ")"},
			cmdutil.QuietFlag, cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "BEFORE AFTER"
	cmdutil.Main(app, manual)
}

func run(c *cli.Context) error {
	if c.NArg() != 2 {
		return cli.Exit("give two manifests: BEFORE AFTER", cmdutil.ExitFatal)
	}
	open := func(name string) (*manifest.Reader, func(), error) {
		f, name, err := cmdutil.OpenInput(name)
		if err != nil {
			return nil, nil, err
		}
		// A work directory's manifests are kept gzip-compressed (gzfile).
		r, err := gzfile.NewReader(f, name)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return manifest.NewReader(r, name), func() { f.Close() }, nil
	}
	before, closeBefore, err := open(c.Args().Get(0))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer closeBefore()
	after, closeAfter, err := open(c.Args().Get(1))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer closeAfter()
	sorts := verify.Options{Sort: syssort.Sorter{TempDir: c.String("temporary-directory"), Memory: c.String("sort-memory"), Compress: syssort.Compressor()}}
	// Interrupted, the comparison stops and removes its temporary files
	// (up to about three times the two manifests), which a kill by the
	// signal left in the temporary directory.
	ctx, stopSignals := cmdutil.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	compare := func(before, after *manifest.Reader, violation func(string)) (verify.Stats, error) {
		return sorts.RewriteAgainst(ctx, before, after, nil, violation)
	}
	if c.Bool("order") {
		compare = verify.Order
	}
	out := bufio.NewWriter(os.Stdout)
	stats, err := compare(before, after, func(v string) { fmt.Fprintln(out, v) })
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: nothing was proved (%w)", err)
		}
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if !c.Bool("quiet") {
		stats.Summary(os.Stderr)
	}
	if stats.Violations > 0 {
		return cmdutil.Damaged("%d violations: records were lost", stats.Violations)
	}
	if stats.Before == 0 {
		return cmdutil.Damaged("the before-manifest is empty: nothing was compared")
	}
	return nil
}
