// Command warcrefs is stage 4 of the deduplication pipeline: it rewrites
// duplicate records as revisit records in place, or into a new directory.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/manifest"
	"warcdedup/refs"
)

const description = `warcrefs reads a post-processed manifest (10 fields, sorted on file and
offset; copy-1 lines are ignored) and rewrites every record whose copy
number is above 1 as a WARC revisit record (profile identical-payload-digest)
that refers to the URI and date of copy 1. Every other byte of the file is
copied unchanged; gzip members are never recompressed, and a revisit in a
.warc.gz file is a gzip member of its own.

Before a record is rewritten, warcrefs checks that the line's offset starts a
record of the line's length, that it is a response with the line's URI and
date, and that its payload hashes to the line's digest. If any check fails
for any line of a file, that file is left untouched and reported, and the run
goes on with the other files (exit status 1). A record that is already the
line's revisit (an earlier run's work) is skipped and counted, so running the
same manifest again changes nothing; a revisit that would not be smaller
than the record is not written. With --protect MANIFEST (the warcsum
--revisits manifest of the collection) records that revisits already in
the collection refer to are never rewritten, so no revisit ends up pointing
at a revisit. The same manifest lets a revisit name an original whose URI
holds whitespace exactly as that record spells it (the manifest escapes it
as %XX, which cannot be undone); without it such a revisit refers to the
escaped spelling.

The new version of a file is written next to its target under a temporary
name (.tmp-NAME-*), synced, re-read and checked (copied bytes equal the
source, every revisit reads back whole), then renamed over the target and the
directory synced: a crash at any instant leaves the old file or the complete
new one. Give exactly one of --in-place or --output-dir DIR (same relative
names; only files with rewrites are written there).

Sort the input with
  LC_ALL=C sort -k1,1 -k2,2n`

func main() {
	cmdutil.Main(cmdutil.NewApp("warcrefs", "rewrite duplicate records as WARC revisit records", description,
		[]cli.Flag{
			&cli.BoolFlag{Name: "in-place", Usage: "replace each file with its rewritten version"},
			&cli.StringFlag{Name: "output-dir", Usage: "write rewritten files under `DIR` with their relative names"},
			&cli.BoolFlag{Name: "dry-run", Usage: "check and report what would be rewritten; write nothing"},
			&cli.StringFlag{Name: "protect", Usage: "never rewrite a record a revisit in `MANIFEST` (warcsum --revisits) refers to"},
			&cli.StringFlag{Name: "log", Usage: "write \"file old-offset old-length new-offset new-length\" per rewritten record to `FILE`"},
			&cli.StringSliceFlag{Name: "root", Usage: "directory field 1 is relative to (repeatable)"},
			&cli.StringFlag{Name: "locations", Usage: "`FILE` of \"name local-path\" lines"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), Usage: "rewrite `N` files at once"},
			cmdutil.InputFlag,
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run))
}

func run(c *cli.Context) error {
	if c.Bool("in-place") == (c.String("output-dir") != "") {
		return cli.Exit("give exactly one of --in-place or --output-dir DIR", cmdutil.ExitFatal)
	}
	rw := refs.Rewriter{
		Roots:     c.StringSlice("root"),
		InPlace:   c.Bool("in-place"),
		OutputDir: c.String("output-dir"),
		DryRun:    c.Bool("dry-run"),
		Jobs:      c.Int("jobs"),
	}
	var err error
	if rw.Locations, err = cmdutil.Locations(c); err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if name := c.String("protect"); name != "" {
		f, err := os.Open(name)
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
		rw.Protect, err = refs.ReadProtection(manifest.NewReader(f, name))
		f.Close()
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
	}
	if len(rw.Roots) == 0 && rw.Locations == nil {
		return cli.Exit("say where the files are: --root DIR or --locations FILE", cmdutil.ExitFatal)
	}
	in, name, err := cmdutil.OpenInput(c.String("input"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer in.Close()
	var logOut *cmdutil.Output
	if n := c.String("log"); n != "" {
		if logOut, err = cmdutil.CreateOutput(n); err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
		defer logOut.Abort()
	}
	log := cmdutil.NewLog(c)
	rw.Refused, rw.Warn = log.Error, log.Warn
	var progress refs.Progress
	rw.Progress = &progress
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()
	stop := log.StartProgress(func(elapsed time.Duration) string {
		return fmt.Sprintf("files %d  revisits %d  %s read (%s/s)", progress.Files.Load(), progress.Revisits.Load(),
			cmdutil.Bytes(progress.Bytes.Load()), cmdutil.Bytes(int64(float64(progress.Bytes.Load())/elapsed.Seconds())))
	})
	start := time.Now()
	var stats refs.Stats
	if logOut != nil {
		w := cmdutil.BufferedWriter(logOut)
		stats, err = rw.Run(ctx, manifest.NewReader(in, name), w)
		// The log is kept even when the run stopped: it lists the files
		// that were replaced before it did.
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		if cerr := logOut.Commit(); err == nil {
			err = cerr
		}
	} else {
		stats, err = rw.Run(ctx, manifest.NewReader(in, name), nil)
	}
	stop()
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if !log.Quiet {
		stats.Summary(log.Writer(), rw.DryRun)
		fmt.Fprintf(log.Writer(), "time: %s\n", time.Since(start).Round(time.Millisecond))
	}
	if stats.Refused > 0 {
		return cmdutil.Damaged("%d files refused and left untouched", stats.Refused)
	}
	return nil
}
