package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/crawlindex"
	"warcdedup/dedup"
	"warcdedup/internal/cmdutil"
	"warcdedup/internal/progress"
)

func indexCommand() *cli.Command {
	indexFlag := &cli.StringFlag{Name: "index", Required: true, Usage: "the crawl index in `DIR`"}
	return &cli.Command{
		Name:      "index",
		Usage:     "look after a crawl index: verify, statistics, dependencies, remove, import, export, compact",
		ArgsUsage: "verify|stats|deps|remove|import|export|compact --index DIR [ARGUMENTS...]",
		Description: `A crawl index (warcdedup run --index DIR) holds the originals of every
crawl committed to it, partitioned by digest range, each partition as
sorted runs (a commit adds one, compactions merge them), and a registry of
the crawls with their files (size, SHA-256), figures and dependencies.
These commands read it, check it, and change it a generation at a time.
Each refuses an index that does not verify (CURRENT missing or rolled back,
a file of the generation missing, cut short or changed, a registry that is
not whole or well formed, a partition out of order) rather than taking it
for an empty index or reading part of it; index verify names each problem.`,
		Subcommands: []*cli.Command{
			indexVerifyCommand(indexFlag),
			indexStatsCommand(indexFlag),
			indexDepsCommand(indexFlag),
			indexRemoveCommand(indexFlag),
			indexImportCommand(indexFlag),
			indexExportCommand(indexFlag),
			indexCompactCommand(indexFlag),
		},
	}
}

// indexVerifyCommand is index verify: the index, its crawls' files and
// their dependencies checked, with --deep every original at its place.
func indexVerifyCommand(indexFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check the index, its crawls' files and their dependencies",
		ArgsUsage: "--index DIR",
		Description: `warcdedup index verify checks the committed generation of the index: CURRENT
names the latest generation committed (also by the records in commits/ of
the generation that last committed or removed each crawl: an index set back
to a generation that forgets a committed crawl is named here, crawl by
crawl); each of the generation's files is
there with the size and SHA-256 it was committed with; the registry is
whole and well formed; each partition of originals is sorted on digest and
holds only its digest range and committed crawls' lines, as many as the
registry says; each committed crawl's files are there and unchanged since
the commit (size and stamp, or with --deep their SHA-256); each crawl a
crawl's revisits need is still committed, with the files they need. With
--deep, every original is also read at its place (its file, offset and
length, in the order of files and offsets after a system sort, each file
opened once) and the record there must have the payload digest the index
gives: what a later crawl's revisits rest on, which a file's SHA-256
cannot prove when the index recorded none, or recorded lines that were
not the file's (an import); each one that does not is named with its
file, offset and digest. A crawl
removed with --force and then deleted shows here as revisits whose
originals are gone. The result (the figures, and what was read: with
--deep every file whole, otherwise each file's size and stamp) goes to
stdout, each problem to stderr.
Exit status: 0 if all is well, 1 if a problem was found (each on stderr),
2 if the index could not be read.`,
		Flags: []cli.Flag{indexFlag, &cli.BoolFlag{Name: "deep", Usage: "compare every file's SHA-256 and read every original at its place (reads them all)"},
			&cli.StringFlag{Name: "sort-memory", Usage: "buffer of the system sort of the originals by place, with --deep (sort -S `SIZE`, e.g. 2G or 25%)"}, cmdutil.QuietFlag},
		Action: func(c *cli.Context) error {
			log := cmdutil.NewLog(c)
			ix, err := crawlindex.Open(c.String("index"))
			if err == nil {
				// What the index's runs say they committed.
				err = dedup.CheckCommittedCrawls(ix)
			}
			var damage *crawlindex.DamageError
			if errors.As(err, &damage) {
				for _, p := range damage.Problems {
					log.Error(errors.New(p))
				}
				if !log.Quiet {
					fmt.Fprintf(log.Writer(), "index %s: %d problems: it does not verify\n", damage.Dir, len(damage.Problems))
				}
				return cmdutil.Damaged("%d problems", len(damage.Problems))
			}
			if err != nil {
				return cli.Exit(err, cmdutil.ExitFatal)
			}
			st, err := ix.Verify(c.Bool("deep"), func(p string) { log.Error(errors.New(p)) })
			if err != nil {
				return cli.Exit(err, cmdutil.ExitFatal)
			}
			var ost crawlindex.OriginalsStats
			if c.Bool("deep") {
				ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				ost, err = dedup.VerifyOriginals(ctx, ix, c.String("sort-memory"), func(p string) { log.Error(errors.New(p)) },
					func(n string) { log.Printf("%s: note: %s\n", c.App.Name, n) })
				if err != nil {
					return cli.Exit(err, cmdutil.ExitFatal)
				}
				st.Problems += ost.Problems
			}
			if !log.Quiet {
				// The result on standard output, each problem on
				// standard error.
				fmt.Fprintf(c.App.Writer, "index %s, generation %d: %d crawls, %d files, %d originals in %d partitions (%d runs): %d problems\n",
					ix.Dir, ix.Registry.Generation, st.Crawls, st.Files, st.Originals, st.Partitions, st.Runs, st.Problems)
				fmt.Fprintln(c.App.Writer, verifyRead(c.Bool("deep"), st, ix.Registry.Totals().Size))
				if c.Bool("deep") {
					fmt.Fprintln(c.App.Writer, verifyOriginalsRead(ost))
				}
			}
			if st.Problems > 0 {
				return cmdutil.Damaged("%d problems", st.Problems)
			}
			return nil
		},
	}
}

// indexStatsCommand is index stats: the index's figures.
func indexStatsCommand(indexFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "print the index's figures per crawl and in total (a table, or JSON)",
		ArgsUsage: "--index DIR",
		Flags:     []cli.Flag{indexFlag, &cli.BoolFlag{Name: "json", Usage: jsonUsage}, cmdutil.QuietFlag},
		Action: func(c *cli.Context) error {
			ix, err := openIndex(c)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, indexStats(ix.Registry))
			}
			return writeIndexStats(c.App.Writer, ix.Dir, ix.Registry)
		},
	}
}

// indexDepsCommand is index deps: which crawls need which.
func indexDepsCommand(indexFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "deps",
		Usage:     "print which crawls and files a crawl's revisits need (or, with --reverse, which crawls need it): a table, or JSON",
		ArgsUsage: "NAME",
		Flags: []cli.Flag{indexFlag, &cli.BoolFlag{Name: "reverse", Usage: "the crawls whose revisits need NAME"},
			&cli.BoolFlag{Name: "json", Usage: jsonUsage}, cmdutil.QuietFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cmdutil.Usage("name one crawl: warcdedup index deps --index DIR NAME")
			}
			ix, err := openIndex(c)
			if err != nil {
				return err
			}
			name := c.Args().First()
			k := ix.Registry.Crawl(name)
			if k == nil {
				return cli.Exit(fmt.Errorf("crawl %s is not committed to the index %s", name, ix.Dir), cmdutil.ExitFatal)
			}
			if !c.Bool("reverse") {
				if !c.Bool("json") {
					return writeDeps(c.App.Writer, name, k.Requires)
				}
				return printJSON(c.App.Writer, map[string]any{"crawl": name, "requires": orEmpty(k.Requires)})
			}
			var by []dependent
			for _, d := range ix.Registry.Dependents(name) {
				for _, n := range d.Requires {
					if n.Crawl == name {
						by = append(by, dependent{d.Name, n.Revisits})
					}
				}
			}
			if !c.Bool("json") {
				return writeDependents(c.App.Writer, name, by)
			}
			return printJSON(c.App.Writer, map[string]any{"crawl": name, "required_by": orEmpty(by)})
		},
	}
}

// indexRemoveCommand is index remove: a crawl taken out of the index,
// its dependents made whole first.
func indexRemoveCommand(indexFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "remove",
		Usage:     "take a crawl out of the index",
		ArgsUsage: "NAME",
		Description: `warcdedup index remove takes a crawl out of the index: its originals leave
the partitions, it moves to the removed crawls with its figures, and its
files may then be deleted. The index must verify first (its partitions are
read whole). It is refused while other crawls' revisits need the crawl,
naming them. With --restore, each of those revisits is first re-pointed to
another committed copy of its payload (bytes compared, the same replay, a
capture no later than the revisit) when there is one, or else made the
whole record again from the crawl being removed (as warcdedup undo does);
every count is recomputed. With --force the crawl is removed all the same:
its dependents' revisits stop replaying once its files are deleted, and
index verify says so.
It is also refused while a warcdedup run --index in progress joined the
crawl (its revisits may need it: once that run is committed the index says
so), or after such a run was interrupted once it had rewritten files (run
it again to commit it; or undo it: an undo that leaves none of its
revisits lets go of what it joined).
A run interrupted before it rewrote anything does not hold the crawl; it
joins the index again when it resumes. While remove --restore rewrites the
dependents' files, a run that joins them is refused. A crawl removed
already is said so, exit status 0.
The summary (what was removed, re-pointed or restored, and what may be
deleted) goes to stdout; progress and diagnostics go to stderr; -q leaves
only errors.`,
		Flags: []cli.Flag{indexFlag,
			&cli.BoolFlag{Name: "restore", Usage: "first re-point or restore every revisit that needs the crawl"},
			&cli.BoolFlag{Name: "force", Usage: "remove the crawl though other crawls' revisits need it"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtimeCPUs(), DefaultText: "the number of CPUs", Usage: "rewrite `N` files at once (with --restore)"},
			cmdutil.QuietFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cmdutil.Usage("name one crawl: warcdedup index remove --index DIR NAME")
			}
			if c.Bool("restore") && c.Bool("force") {
				return cmdutil.Usage("give --restore or --force, not both")
			}
			ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			display := progress.New(os.Stderr, "warcdedup", c.Bool("quiet"))
			res, err := dedup.RemoveCrawl(ctx, dedup.RemoveOptions{Index: c.String("index"), Crawl: c.Args().First(),
				Restore: c.Bool("restore"), Force: c.Bool("force"), Jobs: c.Int("jobs"), Display: display})
			display.Close()
			if res != nil && !c.Bool("quiet") {
				dedup.RemoveSummary(c.App.Writer, res)
			}
			var deps *crawlindex.DependentsError
			var held *crawlindex.HeldError
			var busy *crawlindex.BusyError
			switch {
			case errors.As(err, &deps), errors.As(err, &held), errors.As(err, &busy):
				return cli.Exit(err, cmdutil.ExitDamaged)
			case err != nil:
				return cli.Exit(err, cmdutil.ExitFatal)
			case res.Refused > 0:
				return cmdutil.Damaged("%d files refused and left untouched: the crawl stays in the index", res.Refused)
			}
			return nil
		},
	}
}

// indexImportCommand is index import: a crawl committed from CDX/CDXJ
// indexes or WACZ packages, no WARC bytes read.
func indexImportCommand(indexFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "commit a crawl to the index from its CDX/CDXJ indexes, or Browsertrix's committed crawls from its Redis dedup index, without reading WARC records",
		ArgsUsage: "--crawl NAME INDEX... | [--crawl NAME] X.wacz...|COLL.json | --redis URL [CRAWL...]",
		Description: `warcdedup index import commits a crawl from existing CDX or CDXJ indexes
(digest, URL, date, file, offset, length per line) without reading any WARC
file: every 200 capture with a SHA-1 digest becomes an original of the
index. Header digests are trusted only as candidates: a later run still
compares the bytes of such an original with its duplicate before it writes
any revisit. --location says where the crawl's files are (the directory the
indexes' file names are relative to, or the base URL that serves them).
Captures left out (not a 200 response, no SHA-1 digest, no file) are named
as warnings. A damaged line (no CDX or CDXJ line) stops the import, which
then commits nothing (exit status 2); with --skip-damaged the crawl is
imported without such lines, each named, and the exit status is 1.

WACZ files (with --crawl NAME) or a multi-WACZ JSON (the crawl each
package's crawlId, or --crawl) are imported from each package's CDXJ
(index.cdxj, or ZipNum index.cdx.gz), no WARC byte read, as Browsertrix's
indexer: each original named by its package and its offset in it, which a
later run reads by range. --location defaults to the packages' directory;
a JSON's packages must be local files beneath it, with the sizes it gives.

With --redis URL it takes the committed crawls of Browsertrix's Redis dedup
index (allcrawls; those named, if any) as imported crawls: for each, every
2xx response of its WACZ files (c:CRAWL:wacz, found in the --location
directory, their size and SHA-256 checked) whose digest its entries
(h:CRAWL) hold becomes an original, read from the WACZ files' CDXJ indexes;
what its revisits need is found as the crawler finds it. Crawls still
running (uncommittedcrawls) or canceled are left out and named. Every crawl
is checked and read before any is committed; a partial or inconsistent key
set, a digest of another algorithm, or a crawl the index holds with other
files refuses the import.`,
		Flags: append([]cli.Flag{indexFlag,
			&cli.StringFlag{Name: "crawl", Usage: "the crawl's `NAME` (of the CDX/CDXJ indexes)"},
			&cli.StringFlag{Name: "location", Usage: "the crawl's files: `DIR` or base URL (with --redis: the directory of the WACZ files; for WACZ files and multi-WACZ JSON, by default their directory)"},
			&cli.StringFlag{Name: "sort-memory", Usage: "buffer of the system sort (sort -S `SIZE`, e.g. 2G or 25%)"},
			&cli.BoolFlag{Name: "skip-damaged", Usage: "import without the indexes' damaged lines (named; exit status 1) instead of refusing them"},
			cmdutil.QuietFlag}, redisImportFlags()...),
		Action: func(c *cli.Context) error {
			if c.IsSet("redis") {
				if c.String("location") == "" {
					return cmdutil.Usage("say where the WACZ files are: warcdedup index import --index DIR --redis URL --location DIR")
				}
				return importFromRedis(c)
			}
			packages := dedup.IsPackageImport(c.Args().Slice())
			if !packages && c.String("location") == "" {
				return cmdutil.Usage("say where the crawl's files are: warcdedup index import --index DIR --crawl NAME --location DIR INDEX...")
			}
			if c.String("crawl") == "" && !packages {
				return cmdutil.Usage("name the crawl: warcdedup index import --index DIR --crawl NAME --location DIR INDEX...")
			}
			if c.NArg() == 0 {
				return cmdutil.Usage("name the CDX or CDXJ indexes: warcdedup index import --index DIR --crawl NAME --location DIR INDEX...")
			}
			ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := cmdutil.NewLog(c)
			st, err := dedup.ImportCrawl(ctx, dedup.ImportOptions{Index: c.String("index"), Crawl: c.String("crawl"),
				Location: c.String("location"), CDX: c.Args().Slice(), SortMemory: c.String("sort-memory"), SkipDamaged: c.Bool("skip-damaged"), Warn: log.Warn})
			if err != nil {
				return cli.Exit(err, cmdutil.ExitFatal)
			}
			if !log.Quiet {
				fmt.Fprintf(log.Writer(), "crawl %s imported: %s index lines, %s captures, %s originals, %s left out, %s damaged lines\n", c.String("crawl"),
					progress.Count(st.Lines), progress.Count(st.Records), progress.Count(st.Imported), progress.Count(st.Skipped), progress.Count(st.Damaged))
			}
			if st.Damaged > 0 {
				return cmdutil.Damaged("%d damaged index lines left out", st.Damaged)
			}
			return nil
		},
	}
}

// indexCompactCommand is index compact: the partitions' runs merged.
func indexCompactCommand(indexFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "compact",
		Usage:     "merge the index's sorted runs as its policy calls for, or with --full each partition's into one",
		ArgsUsage: "--index DIR",
		Description: `warcdedup index compact merges the sorted runs of the index's partitions.
Each commit adds a run to every partition its crawl has digests in and
then compacts by itself: once a partition holds 8 runs of one size class
(classes a factor 8 apart, the smallest below 32 MiB), they are merged
into one, so that an original is rewritten about once per class it climbs
and a commit costs what its crawl holds, not what the index holds. This
command does what a commit would have done after it (if the compaction
after a commit failed, or a commit was interrupted before it), or, with
--full, merges every partition's runs into one (an index as plain as one
file a partition, e.g. before it is copied or archived). Each round of
merges is a generation of its own, made as a commit's is: an interruption
leaves the index before it or after it. Every run merged is checked as it
is read (order, partition, SHA-256 as committed).`,
		Flags: []cli.Flag{indexFlag, &cli.BoolFlag{Name: "full", Usage: "merge every partition's runs into one"}, cmdutil.QuietFlag},
		Action: func(c *cli.Context) error {
			log := cmdutil.NewLog(c)
			ix, st, err := crawlindex.Compact(c.String("index"), crawlindex.CompactOptions{Full: c.Bool("full")})
			if err != nil {
				return cli.Exit(err, cmdutil.ExitFatal)
			}
			if !log.Quiet {
				fmt.Fprintf(log.Writer(), "index %s, generation %d: %d partitions merged (%d runs, %s originals, %s written) in %s\n",
					ix.Dir, ix.Registry.Generation, st.Merges, st.RunsMerged, progress.Count(st.Lines), progress.Bytes(st.Bytes), st.Took.Round(time.Millisecond))
			}
			return nil
		},
	}
}

func openIndex(c *cli.Context) (*crawlindex.Index, error) {
	ix, err := crawlindex.Open(c.String("index"))
	if err != nil {
		return nil, cli.Exit(err, cmdutil.ExitFatal)
	}
	return ix, nil
}

// verifyRead says what index verify read of the crawls' files: with
// --deep every byte, its SHA-256 compared with the commit's; without,
// each file's size and stamp.
func verifyRead(deep bool, st crawlindex.VerifyStats, size int64) string {
	if deep {
		return fmt.Sprintf("read: the partitions, the registry, and the %s of the crawls whole (%s), each file's SHA-256 compared with the one committed", progress.Plural(st.Files, "file", ""), progress.Bytes(size))
	}
	return fmt.Sprintf("read: the partitions and the registry; the %s of the crawls were checked by size and stamp, not read (--deep reads them, %s, and compares their SHA-256)", progress.Plural(st.Files, "file", ""), progress.Bytes(size))
}

// verifyOriginalsRead says what index verify --deep read of the
// originals at their places.
func verifyOriginalsRead(st crawlindex.OriginalsStats) string {
	s := fmt.Sprintf("originals read at their places: %s (%s) in %s, each record's payload digest compared with the index's: %d problems",
		progress.Plural(st.Originals, "original", ""), progress.Bytes(st.Bytes), progress.Plural(st.Files, "file", ""), st.Problems)
	if st.NoOriginal > 0 {
		s += fmt.Sprintf("; %s of imported crawls cut short or no response (noted: runs leave them out)", progress.Plural(st.NoOriginal, "original", ""))
	}
	if st.Remote > 0 {
		s += fmt.Sprintf("; %s of crawls served over HTTP not read", progress.Plural(st.Remote, "original", ""))
	}
	return s
}

func printJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// indexStats are the Browsertrix counts, per crawl and in total.
func indexStats(r *crawlindex.Registry) any {
	type counts struct {
		Crawls          int   `json:"crawls"`
		Records         int64 `json:"records"`
		Revisits        int64 `json:"revisits"`
		RevisitsWritten int64 `json:"revisits_written"`
		BytesConserved  int64 `json:"bytes_conserved"`
		Size            int64 `json:"size"`
		Originals       int64 `json:"originals"`
		Removed         int   `json:"removed_crawls"`
		RemovedSize     int64 `json:"removed_size"`
	}
	t := r.Totals()
	total := counts{Crawls: len(r.Crawls), Records: t.Records, Revisits: t.Revisits, RevisitsWritten: t.RevisitsWritten,
		BytesConserved: t.BytesConserved, Size: t.Size, Originals: t.Originals, Removed: len(r.Removed)}
	for _, k := range r.Removed {
		total.RemovedSize += k.Size
	}
	return map[string]any{"generation": r.Generation, "algorithm": r.Algorithm, "total": total,
		"crawls": orEmpty(r.Crawls), "removed": orEmpty(r.Removed)}
}
