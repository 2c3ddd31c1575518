// Command warcrecompress rewrites WARC and ARC files as one gzip member per
// record, so that they can be deduplicated.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/urfave/cli/v2"

	"warcdedup/collock"
	"warcdedup/internal/cmdutil"
	"warcdedup/recompress"
	"warcdedup/warcsum"
)

const description = `warcrecompress FILE|DIR... makes WARC and ARC files deduplicable. warcsum
and warcrefs address a record by its own gzip member; a file compressed as
one member for all its records (gzip x.warc), or with members holding
several records, is reported by them as damaged ("the file must be
recompressed with one member per record"). warcrecompress reads such a
file as one inflated stream and writes it again with one gzip member per
record: the records byte for byte, the line ends between them with the
record before, only the compression changing.

Before a file is replaced, the new version is written beside it under a
temporary name, synced and checked: read as warcsum reads it, every record
must be whole in a member of its own and their number the file's, and its
inflated bytes must equal the file's. It then takes the file's owner, group
and mode, and is renamed over the file, unless the file changed meanwhile.
A file with any damage (a record that cannot be read whole, bytes that are
no record, a gzip member that fails its checks) is left untouched and
reported: recompressing it would drop those bytes. So is a file with more
than one hard link (in place), and a symbolic link to a file in another
directory (a link to a file in its own directory replaces that file).

In place (the default), a file already stored one record per member and an
uncompressed file (.warc, .arc: their records are addressable as they are)
are left as they are. With -o DIR every file is written into DIR and left
as it is: a gzip file under its own name, an uncompressed one as NAME.gz
(the way to gzip a plain .warc for deduplication). Directories are searched
for .warc, .warc.gz, .arc and .arc.gz files (-r: also subdirectories, kept
under DIR with -o). --dry-run reads and checks every file and writes
nothing.`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "Every file is stored one record per gzip member (recompressed now, or already), or is uncompressed.",
		cmdutil.ExitDamaged: "Files were refused and left untouched: damaged, with several hard links, a link out of its directory, changed while read, or (with -o) an output that exists.",
		cmdutil.ExitFatal:   "The run stopped: bad usage, no input, two inputs that would be written to one file, or an interruption. Files not reported as recompressed are untouched.",
	},
	Examples: []cmdutil.Example{
		{Says: "See which files of a collection need recompressing, then recompress them in place:",
			Run: "warcrecompress -n -v -r coll\n" +
				"warcrecompress -r coll"},
		{Says: "Gzip an uncompressed WARC file one record per member (writes gz/plain.warc.gz):",
			Run: "warcrecompress -o gz plain.warc"},
	},
	SeeAlso: []string{"warcsum(1)", "warcrefs(1)", "arc2warc(1)", "gzip(1)"},
}

func main() {
	app := cmdutil.NewApp("warcrecompress", "rewrite WARC/ARC files as one gzip member per record", description,
		[]cli.Flag{
			&cli.StringFlag{Name: "output-dir", Aliases: []string{"o"}, Usage: "write the new versions into `DIR` and leave the files as they are"},
			&cli.BoolFlag{Name: "force", Usage: "with -o: overwrite files in DIR"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "read and check, write nothing"},
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "read subdirectories of directory arguments"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "recompress `N` files at once"},
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "[-o DIR] FILE|DIR..."
	cmdutil.Main(app, manual)
}

// inputFile is one file to recompress, and what came of it.
type inputFile struct {
	in  warcsum.Input
	opt recompress.Options
	res recompress.Result
	err error
}

func run(c *cli.Context) error {
	inputs, err := warcsum.Collect(c.Args().Slice(), c.Bool("recursive"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if len(inputs) == 0 {
		return cli.Exit("no input: name WARC or ARC files or directories", cmdutil.ExitFatal)
	}
	outDir := c.String("output-dir")
	if c.Bool("force") && outDir == "" {
		return cli.Exit("--force only applies to -o DIR", cmdutil.ExitFatal)
	}
	jobs := make([]*inputFile, len(inputs))
	outputs := map[string]string{}
	for i, in := range inputs {
		opt := recompress.Options{Force: c.Bool("force"), DryRun: c.Bool("dry-run")}
		if outDir != "" {
			// Keep the layout of a directory argument under DIR.
			opt.OutputDir = filepath.Join(outDir, filepath.Dir(filepath.FromSlash(in.Name)))
			key := filepath.Join(opt.OutputDir, filepath.Base(in.Path))
			if prev, dup := outputs[key]; dup {
				return cli.Exit(fmt.Sprintf("%s and %s would both be written to %s", prev, in.Path, key), cmdutil.ExitFatal)
			}
			outputs[key] = in.Path
		}
		jobs[i] = &inputFile{in: in, opt: opt}
	}
	if outDir == "" && !c.Bool("dry-run") {
		// In place: one job at a time rewrites a directory's files
		// (package collock), as warcdedup run and undo.
		paths := make([]string, len(inputs))
		for i, in := range inputs {
			paths[i] = in.Path
		}
		locks, err := collock.Lock(collock.Dirs(paths))
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
		defer locks.Release()
	}
	log := cmdutil.NewLog(c)
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sem := make(chan struct{}, max(1, c.Int("jobs")))
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if ctx.Err() != nil {
				j.err = ctx.Err()
				return
			}
			j.res, j.err = recompress.File(ctx, j.in.Path, j.opt)
			if re := (*recompress.RefusedError)(nil); errors.As(j.err, &re) {
				log.Error(j.err)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return cli.Exit("interrupted: files not reported as recompressed are untouched", cmdutil.ExitFatal)
	}
	return report(c, log, jobs)
}

// report says what came of each file (with -v) and sums them up; an
// error if any was refused.
func report(c *cli.Context, log *cmdutil.Log, jobs []*inputFile) error {
	counts := map[recompress.Outcome]int{}
	refused := 0
	var records, before, after int64
	for _, j := range jobs {
		if j.err != nil {
			refused++
			continue
		}
		counts[j.res.Outcome]++
		if j.res.Outcome == recompress.Recompressed {
			records += j.res.Records
			before += j.res.Before
			after += j.res.After
		}
		if log.Verbose {
			log.Printf("%s: %s%s\n", j.in.Path, j.res.Outcome, detail(j))
		}
	}
	if !log.Quiet {
		verb := "recompressed"
		if c.Bool("dry-run") {
			verb = "to recompress (dry run)"
		}
		fmt.Fprintf(log.Writer(), "files: %d %s, %d one record per member already, %d plain, %d empty, %d refused (left untouched)\n",
			counts[recompress.Recompressed], verb, counts[recompress.PerRecord], counts[recompress.Plain], counts[recompress.Empty], refused)
		fmt.Fprintf(log.Writer(), "records: %d; bytes: %s before", records, cmdutil.Bytes(before))
		if !c.Bool("dry-run") {
			fmt.Fprintf(log.Writer(), ", %s after", cmdutil.Bytes(after))
		}
		fmt.Fprintln(log.Writer())
	}
	if refused > 0 {
		return cmdutil.Damaged("%d files refused and left untouched (see above)", refused)
	}
	return nil
}

func detail(j *inputFile) string {
	if j.res.Outcome != recompress.Recompressed {
		return ""
	}
	s := fmt.Sprintf(": %d records", j.res.Records)
	if j.res.After > 0 {
		s += fmt.Sprintf(", %d bytes, now %d", j.res.Before, j.res.After)
	}
	if j.res.Output != j.in.Path {
		s += " -> " + j.res.Output
	}
	return s
}
