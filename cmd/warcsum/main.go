// Command warcsum writes the hash manifest of WARC and ARC files: one line
// per response record with its file, offset, length, URI, date and payload
// digest. It is the first stage of the deduplication pipeline.
package main

import (
	"bufio"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/digest"
	"warcdedup/internal/cmdutil"
	"warcdedup/warcsum"
)

const description = `warcsum reads WARC (0.17 to 1.1) and ARC (v1, v2) files, plain or gzip,
and writes one manifest line per candidate record:

  file offset length uri date algo:digest

Field 1 is the path relative to the directory argument it was found under,
or the base name of a file named directly. A directory's files ending in
.warc, .warc.gz, .arc or .arc.gz (any case) are read, its subdirectories
too with -r. A PATH of - reads a list of paths, one per line, from standard
input (as does -i FILE). Output order is argument order, then file order,
whatever -j is.

Candidates are WARC response records and ARC HTTP records with a 2xx status
(--all-statuses: every status but 206) that are not truncated or segmented.
The payload is the HTTP entity body as stored. A WARC-Payload-Digest that
does not match the payload is reported and counted; the computed digest is
listed. Damaged records are reported with file and offset and never listed.

Every revisit record is listed too, as a revisit line:

  file offset length uri date algo:digest -1 0 refers-to-uri refers-to-date

(the digest is "-" when the revisit names none in this run's algorithm, the
date "*" when it names none). The later stages keep every response such a
line refers to, so an existing revisit never ends up pointing at a revisit,
and warcsumcmp proves it still resolves. --responses-only leaves them out.

Sort the output for the next stage with:
  LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "Every file was read to the end and the manifest was written.",
		cmdutil.ExitDamaged: "The manifest was written, but damaged records (reported on standard error with file and offset, and not listed) or files that could not be read to the end were found, or the files held no record at all. The manifest lists everything else.",
		cmdutil.ExitFatal:   "The run stopped: bad usage, an unknown --hash, no WARC or ARC file found, or a manifest that could not be written. No output file is left behind.",
	},
	Examples: []cmdutil.Example{
		{Says: "Hash a collection and sort the manifest on digest, as warccollres reads it:",
			Run: "warcsum -r coll |\n" +
				"  LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n > by-digest"},
		{Says: "Hash with SHA-256, four files at a time, into a file that appears only when complete:",
			Run: "warcsum -r -H sha256 -j 4 -o coll.manifest coll"},
		{Says: "Hash the files a list names (field 1 is then each file's base name):",
			Run: "find coll -name '*.warc.gz' -newer last-run |\n" +
				"  warcsum -o new.manifest -"},
	},
	SeeAlso: []string{"warccollres(1)", "warcsumproc(1)", "warcsumcmp(1)", "warcdedup(1)", "sort(1)"},
}

func main() {
	app := cmdutil.NewApp("warcsum", "list the payload digests of WARC/ARC response records", description,
		[]cli.Flag{
			&cli.StringFlag{Name: "hash", Aliases: []string{"H"}, Value: "sha1", Usage: "payload digest `ALGO`: md5, sha1, sha256 or sha512"},
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "read subdirectories of directory arguments"},
			&cli.BoolFlag{Name: "skip-empty", Usage: "leave out records with an empty payload (they all share one digest)"},
			&cli.BoolFlag{Name: "all-statuses", Usage: "list every HTTP status but 206, not only 2xx"},
			&cli.BoolFlag{Name: "trust-header", Usage: "reuse a WARC-Payload-Digest of the requested algorithm instead of hashing"},
			&cli.BoolFlag{Name: "responses-only", Usage: "leave revisit records out (unsafe: later stages then cannot keep the records existing revisits refer to)"},
			&cli.BoolFlag{Name: "revisits", Hidden: true, Usage: "revisit lines are always listed now; accepted for old scripts"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "read `N` files in parallel"},
			cmdutil.InputFlag,
			cmdutil.OutputFlag,
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "[FILE|DIR|-]..."
	cmdutil.Main(app, manual)
}

func run(c *cli.Context) error {
	algo, err := digest.ParseLabel(c.String("hash"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	paths, err := inputPaths(c)
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if len(paths) == 0 {
		return cli.Exit("no input: name files or directories, or - to read paths from standard input", cmdutil.ExitFatal)
	}
	inputs, err := warcsum.Collect(paths, c.Bool("recursive"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if len(inputs) == 0 {
		hint := ""
		if !c.Bool("recursive") {
			hint = " (subdirectories are read with -r)"
		}
		return cli.Exit(fmt.Sprintf("no WARC or ARC file found in %s%s", strings.Join(paths, ", "), hint), cmdutil.ExitFatal)
	}
	log := cmdutil.NewLog(c)
	out, err := cmdutil.CreateOutput(c.String("output"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer out.Abort()

	opt := warcsum.Options{
		Algorithm:     algo,
		SkipEmpty:     c.Bool("skip-empty"),
		AllStatuses:   c.Bool("all-statuses"),
		TrustHeader:   c.Bool("trust-header"),
		ResponsesOnly: c.Bool("responses-only"),
		Damage:        log.Error,
		Warn:          log.Warn,
	}
	var progress warcsum.Progress
	stop := log.StartProgress(func(elapsed time.Duration) string {
		return progressLine(&progress, elapsed)
	})
	start := time.Now()
	cmdutil.SpareProcForInflate(c.Int("jobs"))
	runner := warcsum.Runner{
		Options:     opt,
		Jobs:        c.Int("jobs"),
		Progress:    &progress,
		OnFileError: func(in warcsum.Input, err error) { log.Error(err) },
	}
	stats, err := runner.Run(inputs, out)
	stop()
	if err != nil {
		return cli.Exit(fmt.Errorf("writing the manifest: %w", err), cmdutil.ExitFatal)
	}
	if err := out.Commit(); err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if !log.Quiet {
		elapsed := time.Since(start)
		stats.Summary(log.Writer())
		fmt.Fprintf(log.Writer(), "time: %s (%s/s)\n", elapsed.Round(time.Millisecond), cmdutil.Bytes(int64(float64(stats.Bytes)/elapsed.Seconds())))
	}
	if stats.Failed() {
		return cmdutil.Damaged("%d damaged records, %d files not read to the end", stats.Damaged, stats.FilesFailed)
	}
	if stats.Records == 0 {
		// Files that hold no record at all: nothing was checked, which a
		// pipeline must not take for a clean collection.
		return cmdutil.Damaged("%d files read, but they hold no record", stats.Files)
	}
	return nil
}

// inputPaths gathers the paths from the arguments, from -i FILE, and from
// standard input when an argument is -.
func inputPaths(c *cli.Context) ([]string, error) {
	var paths []string
	readList := func(name string) error {
		f, name, err := cmdutil.OpenInput(name)
		if err != nil {
			return err
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			if p := strings.TrimRight(s.Text(), "\r"); p != "" {
				paths = append(paths, p)
			}
		}
		if err := s.Err(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	if c.IsSet("input") {
		if err := readList(c.String("input")); err != nil {
			return nil, err
		}
	}
	for _, a := range c.Args().Slice() {
		if a == "-" {
			if err := readList("-"); err != nil {
				return nil, err
			}
			continue
		}
		paths = append(paths, a)
	}
	return paths, nil
}

func progressLine(p *warcsum.Progress, elapsed time.Duration) string {
	done := p.Bytes.Load()
	rate := float64(done) / elapsed.Seconds()
	eta := "?"
	if rate > 0 && p.TotalBytes > done {
		eta = time.Duration(float64(p.TotalBytes-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	return fmt.Sprintf("files %d/%d  %s/%s  %s/s  ETA %s", p.Files.Load(), p.TotalFiles,
		cmdutil.Bytes(done), cmdutil.Bytes(p.TotalBytes), cmdutil.Bytes(int64(rate)), eta)
}
