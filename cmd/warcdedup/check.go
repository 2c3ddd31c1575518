package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/internal/syssort"
	"warcdedup/replaycheck"
	"warcdedup/workdir"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "check that a sample of the revisits written replays through the collection's index",
		ArgsUsage: "--cdx INDEX [--sample N] COLLECTION",
		Description: `warcdedup check does what an access system does with a revisit, for a
random sample of the revisits the job wrote (the paper's step 6, "check a
random sample through the access system"): each revisit the rewrite log
says is in place is read from its file; its original is looked up in the
collection's CDX/CDXJ index (--cdx, updated after the job, plain or gzip)
with pywb's rule: the first earlier capture of the revisit's own URL with
its digest, else the captures of WARC-Refers-To-Target-URI with its
digest, not revisits, the one closest to WARC-Refers-To-Date; and the
original's payload, read where the index line says it is, is hashed
again. It must hash to the revisit's WARC-Payload-Digest: the digest of
the payload the revisit replaced, which the rewrite compared byte for
byte with that original before writing the revisit.

--sample N checks N revisits drawn at random (0: all of them); --seed
draws the same sample again. Each revisit that does not replay is named
on stderr (file, offset, and why: no such line in the index, a file or
offset that holds no response, a payload that changed), and the exit
status is 1; so is a log with no revisit in place. The summary is on
stdout; --json prints every revisit checked and its original.`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "cdx", Required: true, Usage: "the collection's CDX or CDXJ `INDEX`, updated after the job (repeatable)"},
			&cli.IntFlag{Name: "sample", Value: 100, Usage: "check `N` revisits drawn at random; 0 for all"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "draw the sample with `N`: the same revisits for the same N"},
			&cli.StringFlag{Name: "work-dir", Usage: "the job's work directory `DIR` (default: beside the collection, COLLECTION.warcdedup)"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			cmdutil.QuietFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cmdutil.Usage("name one collection: %s check --cdx INDEX COLLECTION (see --help)", c.App.Name)
			}
			coll := c.Args().First()
			wd := c.String("work-dir")
			if wd == "" {
				wd = workdir.Default(coll)
			}
			ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := replaycheck.Check(ctx, replaycheck.Options{Collection: coll, Log: filepath.Join(wd, workdir.LogFile),
				Indexes: c.StringSlice("cdx"), Sample: c.Int("sample"), Seed: c.Uint64("seed"),
				Sort: syssort.Sorter{TempDir: filepath.Join(wd, workdir.TmpDir), Compress: syssort.Compressor()}})
			if err != nil {
				return cli.Exit(fmt.Sprintf("check: %v", err), cmdutil.ExitFatal)
			}
			for _, r := range res.Revisits {
				if !r.OK && !c.Bool("quiet") {
					fmt.Fprintf(os.Stderr, "warcdedup: check: does not replay: %s\n", r.Problem)
				}
			}
			if c.Bool("json") {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return cli.Exit(err, cmdutil.ExitFatal)
				}
			} else {
				fmt.Printf("revisits in place: %d; checked: %d (seed %d); replay: %d; do not replay: %d; index lines read: %d\n",
					res.Live, res.Sampled, c.Uint64("seed"), res.Replay, res.Failed, res.Lines)
			}
			switch {
			case res.Live == 0:
				return cmdutil.Damaged("no revisit of %s is in place: nothing to check", filepath.Join(wd, workdir.LogFile))
			case res.Failed > 0:
				return cmdutil.Damaged("%d of %d revisits checked do not replay (see above)", res.Failed, res.Sampled)
			}
			return nil
		},
	}
}

func init() {
	manual.Commands["check"] = cmdutil.Manual{
		Exit: map[int]string{
			cmdutil.ExitOK:      "Every revisit checked replays: its original, found through the index with pywb's rule, has the payload the revisit replaced.",
			cmdutil.ExitDamaged: "Revisits checked do not replay (each named on stderr with why), or no revisit of the log is in place.",
			cmdutil.ExitFatal:   "The check stopped: bad usage, a rewrite log or index that could not be read.",
		},
		Examples: []cmdutil.Example{
			{Says: "After a job and its index update, check 200 revisits drawn at random through the updated index:",
				Run: "warcdedup run --cdx /archive/crawl.cdxj /archive/crawl\n" +
					"warcdedup check --sample 200 --cdx /archive/crawl.cdxj /archive/crawl"},
			{Says: "Check every revisit, and keep what was found as JSON:",
				Run: "warcdedup check --sample 0 --json --cdx index.cdxj coll > check.json"},
		},
		SeeAlso: []string{"warcdedup-run(1)", "warcdedup-commit(1)", "warccdx(1)"},
	}
}
