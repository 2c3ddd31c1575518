package main

import (
	"context"
	"encoding/json"
	"os"
	"syscall"

	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/show"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "list a file's records, or show one record and what the toolchain knows of it",
		ArgsUsage: "FILE\nFILE:OFFSET",
		Description: `warcdedup show FILE lists the records of a WARC or ARC file, one per line
(as warcio index or warchaeology ls would): offset, length as stored, type,
date, payload digest as written and URI, separated by tabs ("-" for a field
the record has not); damage is named with its offset (exit status 1) and the
listing goes on after it.

warcdedup show FILE:OFFSET shows the record that starts at OFFSET: its
header and HTTP head as stored, its payload's length and digest (hashed
now), and what the toolchain knows of it:

  a revisit: what it refers to (WARC-Refers-To-Target-URI, -Date,
  WARC-Refers-To), whether this toolchain wrote it (the rewrite log's
  entry) or another tool did, where its original is, whether it resolves
  (the original read there, a response whose payload hashes to the
  revisit's WARC-Payload-Digest), and what undo would give back (the
  restored header and lengths), or why it would leave the revisit as it is;

  a response: its copy number in the job (kept, or a duplicate of which
  capture), and the revisits that point at it, each read where it is now.

What the toolchain knows comes from the job's work directory, found as
warcdedup undo finds it (COLLECTION.warcdedup beside the collection holding
FILE) or given with --work-dir: its manifest sorted on digest names the
captures of each payload as the job listed them, and the rewrite log says
where each record went since. A complete job removes that manifest (unless
run with --keep-work): the revisits that point at a response are then those
the rewrite log wrote, in every file, that no later run restored, and other
tools' in the response's own file. With --cdx, a revisit's original is found
through the collection's CDX or CDXJ index with pywb's rule (as warcdedup
check does). With neither, it is looked for in the revisit's own file.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "work-dir", Usage: "the job's work directory `DIR` (default: beside the collection, COLLECTION.warcdedup)"},
			&cli.StringSliceFlag{Name: "cdx", Usage: "find a revisit's original through the CDX or CDXJ `INDEX` (repeatable)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON: one object per record listed, or the record and what is known of it"},
			cmdutil.QuietFlag,
		},
		Action: runShow,
	}
}

func runShow(c *cli.Context) error {
	if c.NArg() != 1 {
		return cmdutil.Usage("name one file, or one record: %s show FILE[:OFFSET] (see --help)", c.App.Name)
	}
	file, offset, err := show.ParseTarget(c.Args().First())
	if err != nil {
		return cmdutil.Usage("%v", err)
	}
	log := cmdutil.NewLog(c)
	if offset < 0 {
		out := cmdutil.BufferedWriterTo(os.Stdout)
		st, err := show.List(out, file, c.Bool("json"), log.Error)
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
		switch {
		case err != nil:
			return cli.Exit(err, cmdutil.ExitFatal)
		case st.Damaged > 0:
			return cmdutil.Damaged("%s: %d damaged records or stretches (named above); %d records listed", file, st.Damaged, st.Records)
		}
		return nil
	}
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := show.Inspect(ctx, show.Options{File: file, Offset: offset, WorkDir: c.String("work-dir"), CDX: c.StringSlice("cdx")})
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = r.WriteText(os.Stdout)
	}
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if r.Revisit != nil && !r.Revisit.Resolves {
		return cmdutil.Damaged("%s offset %d: the revisit does not resolve: %s", file, offset, r.Revisit.Problem)
	}
	return nil
}

func init() {
	manual.Commands["show"] = cmdutil.Manual{
		Exit: map[int]string{
			cmdutil.ExitOK:      "The file was listed whole, or the record was shown (a revisit's original found and read, its payload the revisit's).",
			cmdutil.ExitDamaged: "The listing met damage (named with its offset), or the revisit shown does not resolve: its original is not found, not a response, or holds another payload (said on stdout and stderr).",
			cmdutil.ExitFatal:   "Bad usage, a file that cannot be read, or no record at the offset.",
		},
		Examples: []cmdutil.Example{
			{Says: "List a file's records, then look at one of them:",
				Run: "warcdedup show coll/crawl-00017.warc.gz\n" +
					"warcdedup show coll/crawl-00017.warc.gz:48213"},
			{Says: "Where a revisit's original is for the access system, through the collection's index:",
				Run: "warcdedup show --cdx coll.cdxj coll/crawl-00017.warc.gz:48213"},
			{Says: "The revisits of a file as JSON lines, with jq:",
				Run: "warcdedup show --json coll/crawl-00017.warc.gz |\n" +
					"  jq -c 'select(.type == \"revisit\")'"},
		},
		SeeAlso: []string{"warcdedup-run(1)", "warcdedup-undo(1)", "warcdedup-check(1)", "warcsum(1)"},
	}
}
