// Command warcrefs is stage 4 of the deduplication pipeline: it rewrites
// duplicate records as revisit records in place, or into a new directory.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/collock"
	"warcdedup/internal/cmdutil"
	"warcdedup/internal/syssort"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/refs"
	"warcdedup/rewritelog"
	"warcdedup/source"
)

const description = `warcrefs reads the numbered manifest (10 fields, sorted on file and offset)
and rewrites every duplicate (copy 2, 3, ...) as a WARC revisit record
(profile identical-payload-digest) that refers to its original. Every other
byte of the file is copied unchanged; gzip members are never recompressed,
and a revisit in a .warc.gz file is a gzip member of its own. Kept lines
(copy 1) and revisit lines are read and ignored.

Nothing becomes a revisit on the manifest's word. --originals names the
numbered manifest again (or only its copy-1 and revisit lines), sorted on
digest, all in one digest algorithm: warcrefs searches it, without
holding it in memory, and refuses a line's file unless

  - the original the line names (refers-to URI and date) is a kept record
    (copy 1) of the line's own class (digest and ext), and the line's
    record is not itself kept (no kept line of its digest names its file
    and offset, or its URI and date: one record can have several names);
  - the original is not the line's own URI and date;
  - the line's offset starts a record of its length, the record is the
    response with the line's URI and date, and its payload hashes to the
    line's digest;
  - the original, read now (from --root, --locations or --url-template,
    over HTTP if need be), is a whole response with the URI and date the
    manifest gives, its payload equals the record's byte for byte, and the
    two replay alike under --policy (replay: same status, Content-Type,
    Content-Encoding, Transfer-Encoding, Content-Disposition, Location and
    container format; payload: the payload suffices; uri: same URI too).

A record that a revisit already in the collection refers to (a revisit line
of the originals manifest says so) stays a response, and the rest of its
file is rewritten. A refused file is left untouched and reported, and the
run goes on with the other files (exit status 1). A record that is already
the line's revisit (an earlier run's work) is skipped and counted, so
running the same manifest again finishes an interrupted run and otherwise
changes nothing; a revisit that would not be smaller than the record is not
written. Revisits name their original's URI and date exactly as its record
spells them (what indexers record for it).

The new version of a file is written next to it under a temporary name
(.tmp-NAME-*), synced, re-read and checked (copied bytes equal the source,
every revisit reads back whole), given the file's owner, group, mode and
extended attributes, then renamed over it and the directory synced: a crash
at any instant leaves the old file or the complete new one. Paths are
resolved beneath their --root: a symbolic link leading out of it is
refused, one inside it is followed (the file it points to is rewritten). A
file with several hard links is refused unless --hard-links. Give exactly
one of --in-place or --output-dir DIR (same relative names; only files with
rewrites are written there, never over another file already there: that
file is refused; one holding the very bytes, an earlier run's, is the
result already); --dry-run alone checks the files in place and writes
nothing.

--log FILE appends, per replaced file, a "# file NAME OLD-SIZE OLD-SUM
NEW-SIZE NEW-SUM" line (sums "blake3:HEX"; bare hex, SHA-256, in logs of
earlier versions) and one line per rewritten record:
  file old-offset old-length new-offset new-length revisit payload-digest refers-to-uri refers-to-date
(warccdx updates CDX/CDXJ indexes from it). The entries of a file appear if
and only if it was replaced, even across a crash (a journal FILE.pending
bridges the rename). Give the same --log to later runs on the same files:
originals in files an earlier run shortened are found through it.

Sort the input with
  LC_ALL=C sort -k1,1 -k2,2n

--undo turns revisits back into the records they replaced, in place, with
the same checks and crash safety: the revisits this toolchain wrote, as the
--log that recorded them says (every revisit of the identical-payload-digest
profile whose original is found with --all). Each comes back byte for byte
(uncompressed) as the record it replaced: its header by rule from the
revisit's, or from what the revisit kept in its Warcdedup-Added-Fields,
Warcdedup-Original-Header and Warcdedup-Original-Trailer fields when the
rule would not give it back; its payload from the original, read and
re-hashed against the revisit's WARC-Payload-Digest. In a .warc.gz file
its gzip member is the one it had, rebuilt bit for bit, when the log
describes it (field 10 of its entry) and a zlib setting makes it again;
otherwise one compressed afresh (the summary counts both). --captures names a
warcsum manifest of the collection as it is now, sorted on URI and date
(LC_ALL=C sort -k4,4 -k5,5), where originals are looked up by the revisits'
WARC-Refers-To-Target-URI and -Date; with --all, --originals may name the
same manifest sorted on digest, for revisits that name no original. The
operands are the files to restore (names relative to --root); without any,
every file in which the log has revisits (with --all, every file under the
roots). The restored records' entries ("restored") are appended to the log.
The log is read as a merge join: sorted on file by the system sort (its
buffer --sort-memory, 64M unless given, its compressed temporary files in
-T DIR, else $TMPDIR or /tmp) and read a file at a time in step with the
files restored, so that memory holds one file's entries, whatever the
log's size.`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "Every file with duplicates was rewritten (with --undo: restored), or had nothing left to do.",
		cmdutil.ExitDamaged: "Files were refused and left untouched, each reported with the check that failed, or the manifest was empty; the other files were rewritten (restored).",
		cmdutil.ExitFatal:   "The run stopped: bad usage, a manifest that is malformed or not sorted, a log or manifest that could not be read or written, or an interruption. Every file is its old version or its complete new one; the same command finishes the job.",
	},
	Examples: []cmdutil.Example{
		{Says: "Rewrite the duplicates of a collection in place, from the manifest warccollres -p numbered, keeping the log for warccdx and for undoing:",
			Run: "LC_ALL=C sort -k1,1 -k2,2n numbered > by-file\n" +
				"warcrefs --in-place --root coll --originals numbered \\\n" +
				"  --log rewrite.log -i by-file"},
		{Says: "Check everything and report what would be rewritten, writing nothing:",
			Run: "warcrefs --dry-run --root coll \\\n" +
				"  --originals numbered -i by-file"},
		{Says: "Turn the revisits the log names back into the records they replaced:",
			Run: "warcsum -r coll | LC_ALL=C sort -k4,4 -k5,5 > by-capture\n" +
				"warcrefs --undo --root coll --log rewrite.log --captures by-capture"},
	},
	SeeAlso: []string{"warccollres(1)", "warcsumproc(1)", "warcsumcmp(1)", "warccdx(1)", "warcdedup-run(1)", "warcdedup-undo(1)", "sort(1)"},
}

func main() {
	app := cmdutil.NewApp("warcrefs", "rewrite duplicate records as WARC revisit records", description,
		[]cli.Flag{
			&cli.BoolFlag{Name: "in-place", Usage: "replace each file with its rewritten version"},
			&cli.StringFlag{Name: "output-dir", Usage: "write rewritten files under `DIR` with their relative names"},
			&cli.StringSliceFlag{Name: "originals", Usage: "numbered `MANIFEST` sorted on digest, where originals and existing revisits are looked up (repeatable; required)"},
			&cli.StringFlag{Name: "policy", Value: "replay", Usage: "when a duplicate may refer to an original, the `POLICY`: replay, payload or uri"},
			&cli.BoolFlag{Name: "dry-run", Usage: "check and report what would be rewritten; write nothing"},
			&cli.StringFlag{Name: "log", Usage: "append the rewrite log to `FILE`"},
			&cli.BoolFlag{Name: "hard-links", Usage: "rewrite files with several hard links (the other names keep the old bytes)"},
			&cli.StringSliceFlag{Name: "root", Usage: "read the files under `DIR`, the directory field 1 is relative to (repeatable)"},
			&cli.StringFlag{Name: "locations", Usage: "`FILE` of \"name location\" lines (local path, or URL for originals)"},
			&cli.StringFlag{Name: "url-template", Usage: "`URL` of originals not found locally, {file} standing for field 1"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "rewrite `N` files at once"},
			&cli.IntFlag{Name: "per-host", Value: 4, Usage: "at most `N` HTTP requests open to one host"},
			&cli.IntFlag{Name: "retries", Value: 5, Usage: "retry a transient HTTP failure `N` times"},
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "give up an HTTP attempt after `DURATION` without a byte"},
			&cli.Int64Flag{Name: "min-rate", Value: 64 << 10, Usage: "give up a record read over HTTP slower than `BYTES` a second (retries included); 0: no bound"},
			&cli.BoolFlag{Name: "undo", Usage: "restore the revisits this toolchain wrote (--log says which) as the records they replaced"},
			&cli.BoolFlag{Name: "all", Usage: "with --undo: also make other tools' revisits whole records"},
			&cli.StringFlag{Name: "captures", Usage: "with --undo: warcsum `MANIFEST` of the collection now, sorted on URI and date (LC_ALL=C sort -k4,4 -k5,5)"},
			&cli.StringFlag{Name: "temporary-directory", Aliases: []string{"T"}, Usage: "with --undo: the sort's temporary files go in `DIR` (default $TMPDIR, else /tmp)"},
			&cli.StringFlag{Name: "sort-memory", Usage: "with --undo: buffer of the system sort (sort -S `SIZE`, e.g. 500M; default " + syssort.DefaultMemory + ")"},
			cmdutil.InputFlag,
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "(--in-place | --output-dir DIR | --dry-run) --originals MANIFEST --root DIR [-i MANIFEST]\n--undo --log FILE --captures MANIFEST --root DIR [FILE...]"
	cmdutil.Main(app, manual)
}

func run(c *cli.Context) error {
	if c.Bool("undo") {
		return undo(c)
	}
	inPlace, err := rewriteTarget(c)
	if err != nil {
		return err
	}
	pol, err := policy.Parse(c.String("policy"))
	if err != nil {
		return cmdutil.Usage("%v", err)
	}
	loc, err := cmdutil.Locator(c)
	if err != nil {
		return cmdutil.Usage("%v", err)
	}
	if len(loc.Roots) == 0 && loc.Locations == nil {
		return cmdutil.Usage("say where the files are: --root DIR or --locations FILE")
	}
	if inPlace && !c.Bool("dry-run") {
		locks, err := lockJob(loc)
		if err != nil {
			return err
		}
		defer locks.Release()
	}
	log := cmdutil.NewLog(c)
	var rlog *rewritelog.Log
	if n := c.String("log"); n != "" && !c.Bool("dry-run") {
		if rlog, err = rewritelog.Open(n); err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
		defer rlog.Close()
	}
	tables, closeTables, err := openTables(c.StringSlice("originals"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer closeTables()
	// Originals in files this (or an earlier) run shortened in place are
	// found through the log (Rewriter.Run); an output directory leaves them
	// where they are.
	originals, err := originals.New(loc, tables...)
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	rw := &refs.Rewriter{
		Roots:     loc.Roots,
		Locations: loc.Locations,
		InPlace:   inPlace,
		OutputDir: c.String("output-dir"),
		DryRun:    c.Bool("dry-run"),
		Originals: originals,
		Policy:    pol,
		HardLinks: c.Bool("hard-links"),
		Jobs:      c.Int("jobs"),
		Refused:   log.Error,
		Warn:      log.Warn,
	}
	in, name, err := cmdutil.OpenInput(c.String("input"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer in.Close()
	return rewrite(rw, manifest.NewReader(in, name), rlog, log)
}

// lockJob locks the directories whose files the job may rewrite
// (package collock), as warcdedup run and undo do: one job at a time
// rewrites a collection's files in place. They are those beneath the
// roots and those of the local files --locations names, anywhere (each
// file's own directory, its symbolic links followed, as the rewrite finds
// it): any of them may be a duplicate's file. A location that is not
// there, nor its directory, has nothing to rewrite.
func lockJob(loc *source.Locator) (*collock.Set, error) {
	locks, err := collock.LockJob(loc.Roots, locatedFiles(loc.Locations))
	if err != nil {
		return nil, cli.Exit(err, cmdutil.ExitFatal)
	}
	return locks, nil
}

// locatedFiles are the real paths of the local files of locations (the
// real path of the directory, where the file is not there).
func locatedFiles(locations map[string]string) []string {
	var files []string
	for _, p := range locations {
		if strings.Contains(p, "://") {
			continue // a URL: only read
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			files = append(files, real)
		} else if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			files = append(files, filepath.Join(dir, filepath.Base(p)))
		}
	}
	return files
}

// rewriteTarget checks the flags of a rewrite (no operand, one target,
// an originals manifest) and says whether it is in place: a dry run
// without a target checks the files where they are.
func rewriteTarget(c *cli.Context) (inPlace bool, err error) {
	if c.NArg() > 0 {
		return false, cmdutil.Usage("unexpected operand %q: warcrefs reads the manifest from standard input or --input (file operands are for --undo)", c.Args().First())
	}
	inPlace = c.Bool("in-place")
	switch {
	case inPlace && c.String("output-dir") != "":
		return false, cmdutil.Usage("give one of --in-place or --output-dir DIR, not both")
	case !inPlace && c.String("output-dir") == "" && c.Bool("dry-run"):
		// A dry run writes nothing either way: it checks the files where
		// they are.
		inPlace = true
	case !inPlace && c.String("output-dir") == "":
		return false, cmdutil.Usage("give --in-place or --output-dir DIR (or --dry-run to check and report, writing nothing)")
	}
	if len(c.StringSlice("originals")) == 0 {
		return false, cmdutil.Usage("give --originals MANIFEST: the numbered manifest sorted on digest (LC_ALL=C sort -k6,6), where each duplicate's original is looked up and checked")
	}
	return inPlace, nil
}

// openTables opens the originals manifests; closeAll closes them, the
// last opened first (also those opened before an error, which it closes
// itself).
func openTables(names []string) (tables []*manifest.Table, closeAll func(), err error) {
	closeAll = func() {
		for i := len(tables) - 1; i >= 0; i-- {
			tables[i].Close()
		}
	}
	for _, name := range names {
		t, err := manifest.OpenTable(name)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		tables = append(tables, t)
	}
	return tables, closeAll, nil
}

// rewrite runs the rewrite of the manifest m, its progress on standard
// error, and says how it went: refused files and an empty manifest fail
// it.
func rewrite(rw *refs.Rewriter, m *manifest.Reader, rlog *rewritelog.Log, log *cmdutil.Log) error {
	var progress refs.Progress
	rw.Progress = &progress
	ctx, stopSignals := cmdutil.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()
	stop := log.StartProgress(func(elapsed time.Duration) string {
		return fmt.Sprintf("files %d  revisits %d  %s read (%s/s)", progress.Files.Load(), progress.Revisits.Load(),
			cmdutil.Bytes(progress.Bytes.Load()), cmdutil.Bytes(int64(float64(progress.Bytes.Load())/elapsed.Seconds())))
	})
	start := time.Now()
	stats, err := rw.Run(ctx, m, rlog)
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
	if stats.Lines == 0 {
		return cmdutil.Damaged("the manifest is empty: nothing was checked")
	}
	return nil
}
