// Command warccdx brings a CDX or CDXJ index written before warcrefs
// rewrote the collection up to date with warcrefs' rewrite log.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/cdx"
	"warcdedup/internal/cmdutil"
	"warcdedup/internal/fspath"
	"warcdedup/internal/syssort"
	"warcdedup/reindex"
)

const description = `warccdx reads the indexes (files, or standard input without any; plain or
gzip) and writes them, line for line in the same order and format, as the
indexer would write them for the rewritten files: every line of a file the
log names gets its record's new offset, a record the log made a revisit
also its new length, mime "warc/revisit" and the revisit's payload digest
(spelt as the index spells digests, with or without "sha1:"), a restored
record its line from before the revisit; lines of other files, header and
metadata lines pass byte for byte. Several indexes are written one after
the other; gzip input is written plain. Sort the output as the input was
sorted and it equals the re-run indexer's (tested with warcio.js
cdx-index).

Formats: CDXJ (pywb's cdxj-indexer, warcio.js) and space-separated CDX
named by a " CDX N b a m s k r M S V g" header, or headerless of 11, 10, 9
(and NetarchiveSuite's 7 or 8) fields; each line's format is detected.
A ZipNum index (pywb, cdxj-indexer, py-wacz and Browsertrix WACZ files:
gzip blocks of N lines in a .cdx.gz and a summary, .idx or .summary, of
one line per block) is read through its summary when the summary is
named: every block checked to be where the summary says.

With --in-place each INDEX is updated where it is instead, in its form:
CDX or CDXJ, plain or gzip, or a ZipNum (name its summary, or its .cdx.gz
when a summary beside it names it, and pywb's .loc when there is one):
its blocks rewritten with as many lines each as before (a block no line of
which changes is copied as it is), its summary with them, spelt as it was
("!meta" kept, digests recomputed). A sorted index stays sorted: an edit
reorders lines, as sorting afresh would, only among lines of the same
urlkey and timestamp (in CDX, and URL). Each index is replaced whole or left untouched: a line that
cannot be read or updated, a log entry without its line, a summary that
does not match its blocks (order, offsets, lengths, gzip members,
digests), or a .cdx.gz of several gzip members that no summary beside it
names, is reported with file and line or offset, and the index stays as it
was (exit status 1). A ZipNum's files are replaced together: their new
versions are written and synced beside them, then a journal
(.SUMMARY.pending) names them, then they are renamed; an update killed
after the journal is completed by the next warccdx or warcdedup --cdx on
that index (and not applied twice when it is the same log), one killed
before leaves the old files.

Index file names are matched to the log's (relative to the collection
root): the same name, else the index name's longest "/"-suffix that the
log names (absolute paths, URLs), else the base name (what indexers write)
when only one file of the log has it.

A log line whose record no line of that file has at its old offset is
reported (exit status 1): the index does not describe the files the log
rewrote, or lacks that record. Files the log names without any line in
the index are counted only: an index may cover part of the collection.
A line that cannot be read or updated is reported and written as read
(exit status 1), or with --strict stops the run.

After an in-place ARC to WARC conversion (warcdedup run --convert-arc),
--conversion WORKDIR/conversion.map makes each converted ARC file's lines
its WARC file's first: the WARC's name, its record's offset and length,
and the mime, status and digest a WARC indexer writes for it; a line for
each converted file's filedesc (a metadata record in the WARC, which ARC
indexes leave out) is added at the end (with --in-place, in its sorted
place, and a plain or gzip index keeps its form; a ZipNum, whose blocks
keep their number of lines, is left untouched if lines would be added).
The rewrite log (--log, if given) then applies to those lines. Index lines of a converted ARC whose record
the map cannot address are reported (exit status 1).

Memory does not grow with the log or the indexes: the indexes are read
twice, and what their lines point at is sorted by the system sort (LC_ALL=C
sort -S SIZE) on file and offset, followed through the log's runs side by
side (the log is in that order), and sorted back (about 100 bytes a line
in the temporary directory, -T DIR, else $TMPDIR or /tmp; an index on
standard input is copied there first). What is held is the names of the
log's files, one line's group for --in-place (the lines of one urlkey and
timestamp, at most 64 MiB) and a ZipNum block or two, and the sort's buffer
(--sort-memory, 64M unless given); and with --conversion, the conversion
map, about 100 bytes per ARC record.`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "Every line was written, updated where the log says so.",
		cmdutil.ExitDamaged: "Problems were reported: lines that could not be read or updated (written as read), or log entries whose record no line of that file has. Every line is written.",
		cmdutil.ExitFatal:   "The run stopped: bad usage (no --log), a log that could not be read, with --strict a line that could not be read or updated, or output that could not be written. No output file is left behind.",
	},
	Examples: []cmdutil.Example{
		{Says: "Bring the index of a collection up to date after warcdedup run:",
			Run: "warccdx --log coll.warcdedup/rewrite.log index.cdxj > index.new.cdxj"},
		{Says: "The same for gzip indexes, into a file that appears only when complete:",
			Run: "zcat index/*.cdxj.gz | warccdx --log rewrite.log -o index.cdxj"},
		{Says: "Update a WACZ's ZipNum index (index.idx and index.cdx.gz) where it is:",
			Run: "warccdx --log rewrite.log --in-place indexes/index.idx"},
		{Says: "Update an OutbackCDX index: the lines to delete, then those to add:",
			Run: "warccdx --log rewrite.log --outbackcdx-delete del.cdx \\\n" +
				"  --outbackcdx-add add.cdx index.cdx > /dev/null\n" +
				"curl --data-binary @del.cdx http://localhost:8080/coll/delete\n" +
				"curl --data-binary @add.cdx http://localhost:8080/coll"},
	},
	SeeAlso: []string{"warcrefs(1)", "warcdedup-run(1)", "warcdedup-undo(1)"},
}

func main() {
	app := cmdutil.NewApp("warccdx", "update CDX, CDXJ and ZipNum indexes with warcrefs' rewrite log", description,
		[]cli.Flag{
			&cli.StringFlag{Name: "log", Usage: "warcrefs' rewrite log `FILE` (required, unless --conversion)"},
			&cli.StringFlag{Name: "conversion", Usage: "the conversion map `FILE` of ARC files converted in place (WORKDIR/conversion.map): their lines become their WARC files'"},
			cmdutil.OutputFlag,
			&cli.StringFlag{Name: "format", Value: "auto", Usage: "`FORMAT` of every line: auto, cdxj or cdx"},
			&cli.StringFlag{Name: "cdx-fields", Usage: "the `LETTERS` of a headerless CDX index (\"N b a m s k r M S V g\")"},
			&cli.TimestampFlag{Name: "since", Layout: time.RFC3339, Usage: "apply only the log's runs started at or after `TIME` (RFC 3339): the index was written after the earlier ones"},
			&cli.StringSliceFlag{Name: "root", Usage: "collection `DIR` to read restored records from whose line the index lacks (repeatable)"},
			&cli.StringFlag{Name: "outbackcdx-delete", Usage: "write the CDX11 lines to POST to OutbackCDX's /{coll}/delete to `FILE`"},
			&cli.StringFlag{Name: "outbackcdx-add", Usage: "write the CDX11 lines to POST to OutbackCDX's /{coll} to `FILE` (after the deletions)"},
			&cli.BoolFlag{Name: "strict", Usage: "stop at the first line that cannot be read or updated"},
			&cli.BoolFlag{Name: "in-place", Usage: "update each INDEX where it is, in its form (ZipNum too), whole or not at all"},
			&cli.StringFlag{Name: "temporary-directory", Aliases: []string{"T"}, Usage: "the sort's temporary files go in `DIR` (default $TMPDIR, else /tmp)"},
			&cli.StringFlag{Name: "sort-memory", Usage: "buffer of the system sort (sort -S `SIZE`, e.g. 500M; default " + syssort.DefaultMemory + ")"},
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "--log FILE [INDEX...] | --log FILE --in-place INDEX..."
	cmdutil.Main(app, manual)
}

// fatal is err as the command's failure, exit status 2.
func fatal(err error) error { return cli.Exit(err, cmdutil.ExitFatal) }

func run(c *cli.Context) error {
	if c.String("log") == "" && c.String("conversion") == "" {
		return fatal(errors.New("say which rewrite log: --log FILE (or conversion map: --conversion FILE)"))
	}
	opts, err := indexOptions(c)
	if err != nil {
		return fatal(err)
	}
	var since time.Time
	if t := c.Timestamp("since"); t != nil {
		since = *t
	}
	start := time.Now()
	log := cmdutil.NewLog(c)
	u := reindex.Updater{Sort: syssort.Sorter{TempDir: c.String("temporary-directory"), Memory: c.String("sort-memory"), Compress: syssort.Compressor()}}
	if roots := c.StringSlice("root"); len(roots) > 0 {
		u.Records = &reindex.Files{Roots: roots}
	}
	if c.Bool("in-place") {
		return inPlace(c, log, opts, u, since, start)
	}
	conv, err := loadLogs(&u, c.String("log"), c.String("conversion"), since)
	if err != nil {
		return fatal(err)
	}
	cr := &copyRun{c: c, log: log, conv: conv, start: start,
		cp: &reindex.Copy{Updater: u, Options: opts, Strict: c.Bool("strict"), Report: log.Error, Conversion: conv}}
	defer cr.cleanUp()
	unmatched, err := cr.copy()
	if err != nil {
		return fatal(err)
	}
	return cr.report(unmatched)
}

// indexOptions are how the indexes are read: --format and --cdx-fields.
func indexOptions(c *cli.Context) (cdx.Options, error) {
	format, err := cdx.ParseFormat(c.String("format"))
	if err != nil {
		return cdx.Options{}, err
	}
	opts := cdx.Options{Format: format}
	if s := c.String("cdx-fields"); s != "" {
		if opts.Layout, err = cdx.ParseLayout(s); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// copyRun is the indexes updated into new ones (not --in-place): the
// outputs opened, the inputs read, the outputs committed, the report.
type copyRun struct {
	c       *cli.Context
	log     *cmdutil.Log
	cp      *reindex.Copy
	conv    *reindex.Conversion
	start   time.Time
	outputs []*cmdutil.Output
	// undo are the outputs' aborts and the inputs' removals, run in
	// reverse order once the command ends.
	undo []func()
}

func (cr *copyRun) cleanUp() {
	for i := len(cr.undo) - 1; i >= 0; i-- {
		cr.undo[i]()
	}
}

// copy writes the updated lines of every index, and the OutbackCDX
// deletions and additions if asked for, committing each output once
// all is written; unmatched is the number of log entries without their
// index line.
func (cr *copyRun) copy() (unmatched int64, err error) {
	if err := cr.openOutputs(); err != nil {
		return 0, err
	}
	inputs, err := cr.inputs()
	if err != nil {
		return 0, err
	}
	// Interrupted, the update stops and its temporary files (about 100
	// bytes a line) are removed, where the signal's kill left them.
	ctx, stopSignals := cmdutil.NotifyContext(cr.c.Context, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	if err := cr.cp.Indexes(ctx, inputs); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted before the indexes were written whole (%w)", err)
		}
		return 0, err
	}
	unmatched = cr.cp.Finish()
	for _, w := range []*cdx.Writer{cr.cp.Out, cr.cp.Delete, cr.cp.Add} {
		if w != nil {
			if err := w.Flush(); err != nil {
				return 0, err
			}
		}
	}
	for _, o := range cr.outputs {
		if err := o.Commit(); err != nil {
			return 0, err
		}
	}
	return unmatched, nil
}

// openOutputs opens the output and, if named, the OutbackCDX files.
func (cr *copyRun) openOutputs() error {
	out, err := cmdutil.CreateOutput(cr.c.String("output"))
	if err != nil {
		return err
	}
	cr.undo = append(cr.undo, out.Abort)
	cr.outputs = append(cr.outputs, out)
	cr.cp.Out = cdx.NewWriter(out)
	for _, b := range []struct {
		flag string
		w    **cdx.Writer
	}{{"outbackcdx-delete", &cr.cp.Delete}, {"outbackcdx-add", &cr.cp.Add}} {
		if name := cr.c.String(b.flag); name != "" {
			o, err := cmdutil.CreateOutput(name)
			if err != nil {
				return err
			}
			cr.undo = append(cr.undo, o.Abort)
			cr.outputs = append(cr.outputs, o)
			*b.w = cdx.NewWriter(o)
		}
	}
	return nil
}

// inputs are the indexes named, standard input if none.
func (cr *copyRun) inputs() ([]reindex.Input, error) {
	names := cr.c.Args().Slice()
	if len(names) == 0 {
		names = []string{"-"}
	}
	var inputs []reindex.Input
	for _, name := range names {
		in, err := indexInput(name, &cr.cp.Updater)
		if err != nil {
			return nil, err
		}
		cr.undo = append(cr.undo, in.Remove)
		inputs = append(inputs, in)
	}
	return inputs, nil
}

// report prints the summary (unless --quiet) and fails a run with
// problems.
func (cr *copyRun) report(unmatched int64) error {
	cp, log := cr.cp, cr.log
	if !log.Quiet {
		cp.Summary(log.Writer())
		conversionSummary(log.Writer(), cr.conv)
		if log.Verbose {
			for _, f := range cp.LogFiles() {
				if f.Lines == 0 {
					fmt.Fprintf(log.Writer(), "no index line: %s\n", f.Name)
				}
			}
		}
		fmt.Fprintf(log.Writer(), "time: %s\n", time.Since(cr.start).Round(time.Millisecond))
	}
	if cp.Problems > 0 {
		return cmdutil.Damaged("%d problems (%d log entries without their index line)", cp.Problems, unmatched)
	}
	return nil
}

// indexInput is an input: a ZipNum summary is read through its blocks;
// standard input, when the log is followed on disk (it is read twice),
// from a copy.
func indexInput(name string, u *reindex.Updater) (reindex.Input, error) {
	if name == "" || name == "-" {
		if u.Log != nil {
			return reindex.StreamInput("-", os.Stdin, u.Sort)
		}
		return reindex.Input{Name: "-", Open: func() (io.ReadCloser, error) { return io.NopCloser(os.Stdin), nil }}, nil
	}
	ix, err := reindex.Locate(name)
	switch {
	case err == nil && ix.Form == reindex.ZipNum && ix.Path == name:
		return reindex.Input{Name: name, Open: func() (io.ReadCloser, error) { return reindex.OpenZipNum(ix) }}, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return reindex.Input{}, err
	}
	return reindex.FileInput(name), nil
}

// inPlace updates each index named where it is.
func inPlace(c *cli.Context, log *cmdutil.Log, opts cdx.Options, u reindex.Updater, since time.Time, start time.Time) error {
	switch {
	case c.NArg() == 0:
		return cmdutil.Usage("--in-place updates the INDEX files named: name them")
	case c.IsSet("output") || c.IsSet("outbackcdx-delete") || c.IsSet("outbackcdx-add"):
		return cmdutil.Usage("--in-place writes no other output (-o, --outbackcdx-*): run without it for those")
	}
	// The log (and conversion map) as the journal of an interrupted
	// update records it.
	var note string
	if c.String("log") != "" {
		logFile, err := fspath.Abs(c.String("log"))
		if err != nil {
			return fatal(err)
		}
		fi, err := os.Stat(logFile)
		if err != nil {
			return fatal(err)
		}
		note = fmt.Sprintf("warccdx --log %s (%d bytes) --since %s", logFile, fi.Size(), since.Format(time.RFC3339))
	}
	if m := c.String("conversion"); m != "" {
		mapFile, err := fspath.Abs(m)
		if err != nil {
			return fatal(err)
		}
		fi, err := os.Stat(mapFile)
		if err != nil {
			return fatal(err)
		}
		note = strings.TrimPrefix(fmt.Sprintf("%s --conversion %s (%d bytes)", note, mapFile, fi.Size()), " ")
	}
	refused := 0
	for _, name := range c.Args().Slice() {
		ix, err := reindex.Locate(name)
		if err != nil {
			log.Error(fmt.Errorf("%s: left untouched: %w", name, err))
			refused++
			continue
		}
		prev, finished, err := reindex.FinishPending(ix)
		if err != nil {
			return fatal(err)
		}
		if finished && prev == note {
			log.Warn(fmt.Errorf("%s: completed the update with this log that an interruption had stopped; not applied again", ix.Path))
			continue
		} else if finished {
			log.Warn(fmt.Errorf("%s: completed an interrupted update (%s)", ix.Path, prev))
		}
		// Each index follows the log on its own.
		iu := u
		conv, err := loadLogs(&iu, c.String("log"), c.String("conversion"), since)
		if err != nil {
			return fatal(err)
		}
		p := &reindex.InPlace{Updater: iu, Options: opts, Report: log.Error, Note: note, Conversion: conv}
		err = p.Rewrite(ix, ix)
		if re := (*reindex.RefusedError)(nil); errors.As(err, &re) {
			log.Error(err)
			refused++
			continue
		} else if err != nil {
			return fatal(err)
		}
		if !log.Quiet {
			s := p.Stats
			fmt.Fprintf(log.Writer(), "%s (%s): %d lines, %d revisits, %d restored, %d moved", ix.Path, ix.Form, s.Lines, s.Revisits, s.Restored, s.Moved)
			if ix.Form == reindex.ZipNum {
				fmt.Fprintf(log.Writer(), "; %d blocks, %d rewritten", p.Blocks, p.BlocksRewritten)
			}
			fmt.Fprintln(log.Writer())
			conversionSummary(log.Writer(), conv)
		}
	}
	if !log.Quiet {
		fmt.Fprintf(log.Writer(), "time: %s\n", time.Since(start).Round(time.Millisecond))
	}
	if refused > 0 {
		return cmdutil.Damaged("%d of %d indexes left untouched", refused, c.NArg())
	}
	return nil
}
