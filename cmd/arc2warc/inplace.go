package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/internal/fspath"
	"warcdedup/migrate"
)

// inPlace converts each collection's ARC files in place (package migrate).
func inPlace(c *cli.Context) error {
	if c.NArg() == 0 {
		return cmdutil.Usage("name the collection: arc2warc --in-place COLLECTION... (see --help)")
	}
	if c.IsSet("output") || c.Bool("check") || c.Bool("plain") || c.Bool("force") || c.Bool("drop-truncated") {
		return cmdutil.Usage("--in-place writes .warc.gz beside each ARC and never overwrites: -o, --check, --plain, --force and --drop-truncated do not apply")
	}
	if c.NArg() > 1 && c.IsSet("work-dir") {
		return cmdutil.Usage("--work-dir names one collection's work directory: convert one collection at a time")
	}
	log := cmdutil.NewLog(c)
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	workDirs := map[string]string{}
	for _, coll := range c.Args().Slice() {
		wd := c.String("work-dir")
		if wd == "" {
			abs, err := fspath.Abs(coll)
			if err != nil {
				return cli.Exit(err, cmdutil.ExitFatal)
			}
			wd = filepath.Clean(abs) + ".warcdedup"
		}
		workDirs[coll] = wd
	}
	if keep := c.String("keep-arc"); keep != "" {
		// Against each collection and its work directory before any is
		// converted (a keep directory inside a later one).
		for _, coll := range c.Args().Slice() {
			if err := migrate.CheckKeepDir(keep, coll); err != nil {
				return cli.Exit(err, cmdutil.ExitFatal)
			}
			if err := migrate.CheckKeepNotWork(keep, workDirs[coll]); err != nil {
				return cli.Exit(err, cmdutil.ExitFatal)
			}
		}
	}
	left := 0
	for _, coll := range c.Args().Slice() {
		wd := workDirs[coll]
		locks, err := migrate.LockJob(coll, c.String("keep-arc"))
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
		conv := &migrate.Converter{Options: migrate.Options{WorkDir: wd, KeepARC: c.String("keep-arc"), Locks: locks, Jobs: c.Int("jobs"),
			Version: c.String("warc-version"), Software: "warcdedup arc2warc " + cmdutil.Version, Report: log.Error}}
		res, err := conv.Run(ctx, coll, nil)
		locks.Release()
		if res != nil {
			for _, o := range res.Files {
				switch {
				case o.Status.Left():
					left++
					fmt.Printf("%s: %s, left as it is\n", o.ARC, o.Status)
				default:
					fmt.Printf("%s -> %s: %s, %d records\n", o.ARC, o.WARC, o.Status, o.Records)
				}
			}
			if !log.Quiet {
				arc, warc := res.Bytes()
				fmt.Fprintf(log.Writer(), "%s: %d ARC files: %d converted, %d adopted, %d left (%d refused, %d damaged, %d not ARC, %d failed); %s of ARC became %s of WARC; %d converted earlier; map: %s\n",
					coll, len(res.Files), res.Count(migrate.Converted), res.Count(migrate.Adopted), left, res.Count(migrate.Refused),
					res.Count(migrate.Damaged), res.Count(migrate.NotARC), res.Count(migrate.Failed), cmdutil.Bytes(arc), cmdutil.Bytes(warc), res.Earlier, res.Map)
			}
		}
		if err != nil {
			return cli.Exit(fmt.Sprintf("%s: %v", coll, err), cmdutil.ExitFatal)
		}
	}
	if left > 0 {
		return cmdutil.Damaged("%d ARC files left as they are (see above)", left)
	}
	return nil
}
