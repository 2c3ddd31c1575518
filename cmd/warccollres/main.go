// Command warccollres is stage 2 of the deduplication pipeline: it proves
// duplicates byte for byte and gives colliding payloads their own hash
// extension.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/collres"
	"warcdedup/internal/cmdutil"
	"warcdedup/manifest"
	"warcdedup/policy"
	"warcdedup/source"
)

const description = `warccollres reads warcsum's manifest sorted on digest, fetches every
record that shares its digest with another response line, re-hashes its
payload and compares the payloads byte for byte, and writes each line with
field 7, its class within the digest: 0 for the first class, 1, 2, ... for
each further one. Records of a class have identical payload bytes and, under
the default policy, replay the same way. A digest with one response is
passed through with ext 0 and never fetched.

--policy chooses which byte-identical records share a class:
  replay   (default) only those a replay tool that takes the HTTP status and
           headers from either record serves the same way: same container
           format (WARC or ARC), status, Content-Type, Content-Encoding,
           Transfer-Encoding, Content-Disposition and Location. ReplayWeb.page
           serves a revisit with its original's status and headers.
  payload  identical payload bytes are enough (the WARCrefs paper's rule;
           right for pywb, which takes a revisit's own headers).
  uri      only records of the same URI (OpenWayback resolves revisits
           within one URL).

Revisit lines (ext -1, written by warcsum for every revisit already in the
collection) pass through unchanged. With -p it also numbers the copies of
each class (fields 8-10, as warcsumproc does) in the same pass, keeping as
responses those that existing revisits refer to.

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
  LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "Every line was resolved and written.",
		cmdutil.ExitDamaged: "The output was written, but stale lines (whose record no longer matches them: a file missing or changed, an offset that starts no such record, a payload with another digest) were reported and left out, or the manifest was empty.",
		cmdutil.ExitFatal:   "The run stopped: bad usage, no --root, --locations or --url-template, a manifest that is malformed or not sorted, an interruption, or output that could not be written. No output file is left behind.",
	},
	Examples: []cmdutil.Example{
		{Says: "Prove the duplicates of a collection and number the copies in one pass, reading the records from disk:",
			Run: "warcsum -r coll |\n" +
				"  LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n > by-digest\n" +
				"warccollres -p --root coll -i by-digest -o numbered"},
		{Says: "Read the records from a storage host over HTTP, at most 8 requests at a time:",
			Run: "warccollres -p --per-host 8 -i by-digest -o numbered \\\n" +
				"  --url-template 'http://store1:8080/warcs/{file}'"},
	},
	SeeAlso: []string{"warcsum(1)", "warcsumproc(1)", "warcrefs(1)", "warcsumsplit(1)", "sort(1)"},
}

func main() {
	app := cmdutil.NewApp("warccollres", "prove duplicates byte for byte and resolve hash collisions", description,
		[]cli.Flag{
			&cli.BoolFlag{Name: "proc", Aliases: []string{"p"}, Usage: "also assign copy numbers (write the 10-field manifest)"},
			&cli.StringFlag{Name: "policy", Value: "replay", Usage: "which byte-identical records share a class, the `POLICY`: replay, payload or uri"},
			&cli.StringSliceFlag{Name: "root", Usage: "read the files under `DIR`, the directory field 1 is relative to (repeatable)"},
			&cli.StringFlag{Name: "locations", Usage: "`FILE` of \"name location\" lines (local path or URL)"},
			&cli.StringFlag{Name: "url-template", Usage: "`URL` of each file, {file} standing for field 1"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "resolve `N` clusters at once"},
			&cli.IntFlag{Name: "per-host", Value: 4, Usage: "at most `N` HTTP requests open to one host"},
			&cli.IntFlag{Name: "retries", Value: 5, Usage: "retry a transient HTTP failure `N` times"},
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "give up an HTTP attempt after `DURATION` without a byte"},
			&cli.Int64Flag{Name: "min-rate", Value: 64 << 10, Usage: "give up a record read over HTTP slower than `BYTES` a second (retries included); 0: no bound"},
			cmdutil.InputFlag,
			cmdutil.OutputFlag,
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "(--root DIR | --locations FILE | --url-template URL) [-i MANIFEST]"
	cmdutil.Main(app, manual)
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

	pol, err := policy.Parse(c.String("policy"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	log := cmdutil.NewLog(c)
	var progress collres.Progress
	// Nothing replaces the files while they are compared: they are kept
	// open between records.
	files := loc.Files(source.KeptOpen)
	defer files.Close()
	resolver := collres.Resolver{
		Source:   files,
		Policy:   pol,
		Jobs:     c.Int("jobs"),
		Number:   c.Bool("proc"),
		Stale:    log.Error,
		Warn:     log.Warn,
		Progress: &progress,
	}
	ctx, stopSignals := cmdutil.NotifyContext(context.Background(), os.Interrupt)
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
	if stats.Lines == 0 {
		return cmdutil.Damaged("the manifest is empty: nothing was resolved")
	}
	return nil
}
