// Command warccollres is stage 2 of the deduplication pipeline: it proves
// duplicates byte for byte and gives colliding payloads their own hash
// extension.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/collres"
	"warcdedup/internal/cmdutil"
	"warcdedup/manifest"
)

const description = `warccollres reads a manifest sorted on digest (6 fields), fetches every
record that shares its digest with another line, re-hashes its payload and
compares the payloads byte for byte, and writes each line with field 7, the
hash extension: 0 for the first byte-identical class of a digest, 1, 2, ...
for payloads that collide on the digest but differ in bytes. A digest seen
once is passed through with ext 0 and never fetched.

With -p it also numbers the copies of each class (fields 8-10, as
warcsumproc does) in the same pass.

A line whose record no longer matches it (missing file, offset that does not
start a record of that length, not a response, other URI or date, payload
that does not hash to the digest) is stale: it is reported, left out of the
output, and the exit status is 1.

Records are read from local files under --root (field 1 is relative to it;
repeat it to search several roots), from the paths or URLs of a --locations
file ("name location" per line), or from URLs made with --url-template, e.g.
'http://store1:8080/warcs/{file}'. Over HTTP exactly each record's bytes are
requested with a Range header, connections are kept alive, redirects are
followed, transient failures are retried with backoff and short bodies are
resumed, and at most --per-host requests are open to one host.

The input order is checked; sort it with
  LC_ALL=C sort -k6,6 -k5,5 -k1,1 -k2,2n`

func main() {
	cmdutil.Main(cmdutil.NewApp("warccollres", "prove duplicates byte for byte and resolve hash collisions", description,
		[]cli.Flag{
			&cli.BoolFlag{Name: "proc", Aliases: []string{"p"}, Usage: "also assign copy numbers (write the 10-field manifest)"},
			&cli.StringSliceFlag{Name: "root", Usage: "directory field 1 is relative to (repeatable)"},
			&cli.StringFlag{Name: "locations", Usage: "`FILE` of \"name location\" lines (local path or URL)"},
			&cli.StringFlag{Name: "url-template", Usage: "URL of each file, {file} standing for field 1"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), Usage: "resolve `N` clusters at once"},
			&cli.IntFlag{Name: "per-host", Value: 4, Usage: "at most `N` HTTP requests open to one host"},
			&cli.IntFlag{Name: "retries", Value: 5, Usage: "retry a transient HTTP failure `N` times"},
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "give up an HTTP attempt after this long without a byte"},
			cmdutil.InputFlag,
			cmdutil.OutputFlag,
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run))
}

func run(c *cli.Context) error {
	loc, err := cmdutil.Locator(c)
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	in, name, err := cmdutil.OpenInput(c.String("input"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer in.Close()
	out, err := cmdutil.CreateOutput(c.String("output"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer out.Abort()

	log := cmdutil.NewLog(c)
	var progress collres.Progress
	resolver := collres.Resolver{
		Source:   loc,
		Jobs:     c.Int("jobs"),
		Proc:     c.Bool("proc"),
		Stale:    log.Error,
		Warn:     log.Warn,
		Progress: &progress,
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()
	stop := log.StartProgress(func(elapsed time.Duration) string {
		return fmt.Sprintf("lines %d  records fetched %d  compared %s (%s/s)", progress.Lines.Load(), progress.Fetched.Load(),
			cmdutil.Bytes(progress.Bytes.Load()), cmdutil.Bytes(int64(float64(progress.Bytes.Load())/elapsed.Seconds())))
	})
	start := time.Now()
	w := cmdutil.BufferedWriter(out)
	stats, err := resolver.Run(ctx, manifest.NewReader(in, name), w)
	if err == nil {
		err = w.Flush()
	}
	stop()
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if err := out.Commit(); err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if !log.Quiet {
		stats.Summary(log.Writer())
		fmt.Fprintf(log.Writer(), "time: %s\n", time.Since(start).Round(time.Millisecond))
	}
	if stats.Stale > 0 {
		return cmdutil.Damaged("%d stale lines left out", stats.Stale)
	}
	return nil
}
