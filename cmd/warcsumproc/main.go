// Command warcsumproc is stage 3 of the deduplication pipeline: it numbers
// the copies of each payload class.
package main

import (
	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/manifest"
	"warcdedup/sumproc"
)

const description = `warcsumproc reads the 7-field manifest written by warccollres, sorted on
digest, ext, date, file, offset, and writes the 10-field form: the first
line of each (digest, ext) class, the earliest capture, is copy 1 with "- -";
every later line is copy 2, 3, ... with the URI and date of copy 1, the
record its revisit will point at. Two kinds of later captures stay responses
(copy 1 too): those that a revisit already in the collection refers to (its
revisit line, which sorts first in its digest, says so; revisit lines pass
through), and those with copy 1's own URI and date (a revisit naming its
own URI and date is dropped by ReplayWeb.page). A line naming the same file
and offset as the line before it is the same record listed twice: it is
reported and listed once.

--stats FILE writes JSON: records, unique payloads, duplicates, duplication
rate by count and by stored bytes, an estimate of the bytes a rewrite would
save, and the largest classes. --deps FILE writes "file original-file count"
lines: the files that hold the originals each file's revisits will need.

The input order is checked; sort it with
  LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "The numbered manifest, and the --stats and --deps files, were written.",
		cmdutil.ExitDamaged: "The manifest was empty: nothing was numbered (the outputs are written, empty).",
		cmdutil.ExitFatal:   "The run stopped: bad usage, a manifest that is malformed or not sorted, or output that could not be written. None of the output files is left behind.",
	},
	Examples: []cmdutil.Example{
		{Says: "Resolve without -p, sort again on the classes, and number the copies, with the statistics and the files each file's revisits will need:",
			Run: "warccollres --root coll -i by-digest |\n" +
				"  LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n |\n" +
				"  warcsumproc --stats stats.json --deps deps.tsv > numbered"},
		{Says: "List only the duplicates, the records a rewrite would make revisits:",
			Run: "warccollres -q --root coll -i by-digest |\n" +
				"  LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n |\n" +
				"  warcsumproc --dups-only -o duplicates"},
	},
	SeeAlso: []string{"warccollres(1)", "warcrefs(1)", "warcsum(1)", "sort(1)"},
}

func main() {
	app := cmdutil.NewApp("warcsumproc", "number the copies of each payload", description,
		[]cli.Flag{
			&cli.BoolFlag{Name: "dups-only", Usage: "leave copy-1 lines out"},
			&cli.StringFlag{Name: "stats", Usage: "write duplication statistics as JSON to `FILE`"},
			&cli.StringFlag{Name: "deps", Usage: "write which files hold the originals each file needs to `FILE`"},
			cmdutil.InputFlag,
			cmdutil.OutputFlag,
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "[-i MANIFEST]"
	cmdutil.Main(app, manual)
}

func run(c *cli.Context) error {
	in, name, err := cmdutil.OpenInput(c.String("input"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer in.Close()
	log := cmdutil.NewLog(c)
	var outputs []*cmdutil.Output
	create := func(name string) (*cmdutil.Output, error) {
		o, err := cmdutil.CreateOutput(name)
		if err == nil {
			outputs = append(outputs, o)
		}
		return o, err
	}
	defer func() {
		for _, o := range outputs {
			o.Abort()
		}
	}()
	out, err := create(c.String("output"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	var deps sumproc.Deps
	if c.String("deps") != "" {
		deps = sumproc.Deps{}
	}
	w := manifest.NewWriter(out)
	stats, err := sumproc.Process(manifest.NewReader(in, name), w, sumproc.Options{DupsOnly: c.Bool("dups-only"), Warn: log.Warn}, deps)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if n := c.String("stats"); n != "" {
		o, err := create(n)
		if err == nil {
			err = stats.WriteJSON(o)
		}
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
	}
	if n := c.String("deps"); n != "" {
		o, err := create(n)
		if err == nil {
			err = deps.Write(o)
		}
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
	}
	// Everything was written: make the files appear together.
	for _, o := range outputs {
		if err := o.Commit(); err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
	}
	if !log.Quiet {
		stats.Summary(log.Writer())
	}
	if stats.Records == 0 && stats.Revisits == 0 {
		return cmdutil.Damaged("the manifest is empty: nothing was numbered")
	}
	return nil
}
