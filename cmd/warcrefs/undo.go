package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/restore"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
)

// undo is warcrefs --undo: revisits back into the records they replaced.
func undo(c *cli.Context) error {
	switch {
	case c.String("output-dir") != "":
		return cmdutil.Usage("--undo restores files in place; --output-dir is for rewriting")
	case c.Bool("dry-run"):
		return cmdutil.Usage("--undo has no dry run")
	case c.String("log") == "":
		return cmdutil.Usage("give --log FILE: the rewrite log says which revisits this toolchain wrote, and gets the restored records' entries")
	case c.String("captures") == "":
		return cmdutil.Usage("give --captures MANIFEST: a warcsum manifest of the collection as it is now, sorted on URI and date (LC_ALL=C sort -k4,4 -k5,5)")
	}
	loc, err := cmdutil.Locator(c)
	if err != nil {
		return cmdutil.Usage("%v", err)
	}
	if len(loc.Roots) == 0 && loc.Locations == nil {
		return cmdutil.Usage("say where the files are: --root DIR or --locations FILE")
	}
	locks, err := lockJob(loc) // main.go
	if err != nil {
		return err
	}
	defer locks.Release()
	log := cmdutil.NewLog(c)
	// The log is opened first: it is completed from the journal a killed
	// run or undo left, and only then says which revisits are left.
	rlog, err := rewritelog.Open(c.String("log"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer rlog.Close()
	// The log sorted on file by the system sort, read a file at a time
	// in step with the files restored (a merge join): memory holds one
	// file's entries, not the log's (rewritelog.Moves: about 68 bytes a
	// revisit).
	ctx, stopSignals := cmdutil.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()
	sorter := syssort.Sorter{TempDir: c.String("temporary-directory"), Memory: c.String("sort-memory"), Compress: syssort.Compressor()}
	written, err := rewritelog.SortByFile(ctx, c.String("log"), sorter)
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer written.Remove()
	// The captures manifest gives offsets as the files are now: only this
	// run's own entries move them.
	rlog.Since(rlog.Size())
	captures, err := manifest.OpenTableBy(c.String("captures"), manifest.CaptureKey)
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer captures.Close()
	var tables []*manifest.Table
	for _, name := range c.StringSlice("originals") {
		t, err := manifest.OpenTable(name)
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
		defer t.Close()
		tables = append(tables, t)
	}
	originals, err := originals.New(loc, tables...)
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	files, err := undoFiles(c, written, loc.Roots)
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	logged, err := written.Open()
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer logged.Close()
	r := restore.Restorer{Roots: loc.Roots, Locations: loc.Locations, Captures: captures, Originals: originals,
		WrittenFor: func(file string) (*rewritelog.Moves, error) { return logged.For(file, nil) },
		All:        c.Bool("all"), HardLinks: c.Bool("hard-links"), Jobs: c.Int("jobs"), Refused: log.Error, Warn: log.Warn}
	var progress restore.Progress
	r.Progress = &progress
	stop := log.StartProgress(func(elapsed time.Duration) string {
		return fmt.Sprintf("files %d of %d  %s read (%s/s)", progress.Files.Load(), len(files), cmdutil.Bytes(progress.Bytes.Load()),
			cmdutil.Bytes(int64(float64(progress.Bytes.Load())/elapsed.Seconds())))
	})
	start := time.Now()
	stats, err := r.Run(ctx, files, rlog)
	stop()
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if !log.Quiet {
		stats.Summary(log.Writer())
		fmt.Fprintf(log.Writer(), "time: %s\n", time.Since(start).Round(time.Millisecond))
	}
	if stats.Refused > 0 {
		return cmdutil.Damaged("%d files refused and left untouched", stats.Refused)
	}
	return nil
}

// undoFiles is what to restore: the operands (names relative to a root,
// as the log and the manifests spell them), or every file in which the
// log (sorted on file) has revisits, or with --all every file under the
// roots.
func undoFiles(c *cli.Context, written *rewritelog.Grouped, roots []string) ([]string, error) {
	if c.NArg() > 0 {
		var files []string
		for _, name := range c.Args().Slice() {
			files = append(files, manifest.EscapeFile(name))
		}
		return files, nil
	}
	if !c.Bool("all") {
		var files []string
		err := restore.EachLogged(written, func(file string, _ *rewritelog.Moves) error {
			files = append(files, file)
			return nil
		})
		return files, err
	}
	inputs, err := warcsum.Collect(roots, true)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, in := range inputs {
		files = append(files, manifest.EscapeFile(in.Name))
	}
	return files, nil
}
