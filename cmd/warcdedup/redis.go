package main

// The crawl index to and from Browsertrix's Redis dedup index:
// `warcdedup index export` and `warcdedup index import --redis`.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"warcdedup/crawlindex"
	"warcdedup/internal/cmdutil"
	"warcdedup/internal/progress"
	"warcdedup/internal/redis"
	"warcdedup/internal/syssort"
	"warcdedup/redisindex"
)

var redisFlag = &cli.StringFlag{Name: "redis", Usage: "Browsertrix's Redis dedup index at `URL` (redis://HOST:PORT/DB, as the crawler's --redisDedupeUrl)"}

// indexExportCommand is `warcdedup index export`.
func indexExportCommand(indexFlag cli.Flag) *cli.Command {
	redis := *redisFlag
	redis.Required = true
	return &cli.Command{
		Name:      "export",
		Usage:     "write the index's committed crawls into Browsertrix's Redis dedup index, for crawls run with --redisDedupeUrl",
		ArgsUsage: "--index DIR --redis URL [CRAWL...]",
		Description: `warcdedup index export writes the crawls committed to the index into the
Redis (or Kvrocks) dedup index of Browsertrix's crawler (1.12 and later), in
the crawler's own keys, as committed crawls: a crawl run with
--redisDedupeUrl URL then writes revisits of their originals instead of
storing the payloads again. Per crawl, h:CRAWL maps each payload digest to
"WACZINDEX DATE URL SIZE" (its earliest original), c:CRAWL:wacz lists its
WACZ files {filename, hash, size} and h:CRAWL:counts its figures; the crawl
joins allcrawls, its digests alldupes (where no crawl holds them yet) and
its figures allcounts.

The export is incremental: a crawl already there as it is stays untouched;
a crawl whose files changed is written again; a crawl this index exported
and no longer commits is taken out as the crawler's purge takes crawls out
(its keys deleted, its figures subtracted, each alldupes entry naming it
moved to another committed crawl holding the digest, or deleted). CRAWL
arguments limit the export to those crawls; --withdraw takes every crawl
this index exported (or those named) out again.

Each crawl is written under staging keys and made visible in one MULTI/EXEC
(its keys renamed into place, allcrawls, allcounts): Browsertrix never sees
half a crawl. An export that stopped is finished by running it again.
Nothing is written when the export is refused: a crawl running in
Browsertrix (uncommittedcrawls) or committed there by another writer with
other files, keys of a crawl that is not committed, digests of another
algorithm, files that are not WACZ packages.

The crawler keys on SHA-256 digests: an index of SHA-1 digests (warcdedup
run's default) is refused unless --sha1 says that the crawls reading this
Redis run with --useSHA1. docs/browsertrix-redis.md has the key forms.`,
		Flags: []cli.Flag{indexFlag, &redis,
			&cli.BoolFlag{Name: "sha1", Usage: "export an index of SHA-1 digests (the crawls that read the Redis run with --useSHA1)"},
			&cli.BoolFlag{Name: "warc-files", Usage: "export crawls whose files are WARC files, not WACZ packages (Browsertrix then names those files as its revisits' containers)"},
			&cli.BoolFlag{Name: "withdraw", Usage: "take the crawls this index exported (all, or those named) out of the Redis"},
			&cli.IntFlag{Name: "batch", Value: 1000, Usage: "send `N` commands per round trip"},
			&cli.BoolFlag{Name: "json", Usage: "print what was done as JSON on standard output"},
			cmdutil.QuietFlag},
		Action: exportAction,
	}
}

func exportAction(c *cli.Context) error {
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := cmdutil.NewLog(c)
	ix, err := crawlindex.Open(c.String("index"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	conn, err := redis.Dial(ctx, c.String("redis"), redis.Options{})
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer conn.Close()
	display := progress.New(os.Stderr, "warcdedup", c.Bool("quiet"))
	var stage *progress.Stage
	st, err := redisindex.Export(ctx, conn, ix, redisindex.ExportOptions{
		Crawls: c.Args().Slice(), Withdraw: c.Bool("withdraw"), SHA1: c.Bool("sha1"), WARCFiles: c.Bool("warc-files"),
		Batch: c.Int("batch"),
		Warn: func(err error) {
			if !log.Quiet {
				display.Print("warcdedup: warning: %v", err)
			}
		},
		Progress: func(done, total int64) {
			if stage == nil {
				stage = display.Start("export", "originals", total)
			}
			stage.Counter().Store(done)
		},
	})
	if stage != nil {
		stage.Done("")
	}
	display.Close()
	if st != nil && !log.Quiet {
		fmt.Fprintf(log.Writer(), "%s %s: %s\n", map[bool]string{true: "withdrawn from", false: "exported to"}[c.Bool("withdraw")],
			c.String("redis"), exportSummary(st))
	}
	if st != nil && c.Bool("json") {
		if jerr := printJSON(c.App.Writer, st); jerr != nil {
			return jerr
		}
	}
	if err != nil {
		var conflict *redisindex.ConflictError
		if errors.As(err, &conflict) {
			return cli.Exit(fmt.Sprintf("export refused, nothing was written:\n  %s", strings.Join(conflict.Problems, "\n  ")), cmdutil.ExitFatal)
		}
		return cli.Exit(fmt.Errorf("export stopped (run it again to finish it: each crawl is there whole or not at all): %w", err), cmdutil.ExitFatal)
	}
	if st.LeftOut > 0 {
		return cmdutil.Damaged("%d originals left out (each named above); every other original was exported", st.LeftOut)
	}
	return nil
}

func exportSummary(st *redisindex.ExportStats) string {
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"added", st.Added}, {"written again", st.Replaced}, {"removed", st.Removed}, {"unchanged", st.Unchanged}, {"already there from another writer", st.Present}} {
		if len(p.names) > 0 {
			parts = append(parts, fmt.Sprintf("%d crawls %s (%s)", len(p.names), p.what, strings.Join(p.names, ", ")))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no crawl to write")
	}
	s := strings.Join(parts, ", ") + fmt.Sprintf("; %s digests written, %s new in alldupes", progress.Count(st.Entries), progress.Count(st.NewDupes))
	if st.Repointed+st.Dropped > 0 {
		s += fmt.Sprintf(", %s alldupes entries moved to another crawl, %s deleted", progress.Count(st.Repointed), progress.Count(st.Dropped))
	}
	if st.Finished > 0 {
		s += fmt.Sprintf("; %d key sets of an interrupted export finished", st.Finished)
	}
	if st.LeftOut > 0 {
		s += fmt.Sprintf("; %s originals left out", progress.Count(st.LeftOut))
	}
	return s
}

// redisImportFlags are what `index import` takes besides its own flags
// to import from a Redis.
func redisImportFlags() []cli.Flag {
	return []cli.Flag{redisFlag}
}

// importFromRedis is `warcdedup index import --redis URL --location DIR
// [CRAWL...]`.
func importFromRedis(c *cli.Context) error {
	if c.IsSet("crawl") {
		return cmdutil.Usage("--crawl names the crawl of CDX/CDXJ indexes; with --redis the crawls are Browsertrix's, named by the arguments if any")
	}
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := cmdutil.NewLog(c)
	dir := c.String("index")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	td, err := crawlindex.NewTempDir(dir, "redis-import")
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer td.Remove()
	tmp := td.Path
	conn, err := redis.Dial(ctx, c.String("redis"), redis.Options{})
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer conn.Close()
	display := progress.New(os.Stderr, "warcdedup", c.Bool("quiet"))
	var stage *progress.Stage
	st, err := redisindex.Import(ctx, conn, dir, redisindex.ImportOptions{
		Crawls: c.Args().Slice(), Location: c.String("location"), TempDir: tmp,
		Warn: func(err error) {
			if !log.Quiet {
				display.Print("warcdedup: warning: %v", err)
			}
		},
		Progress: func(n int64) {
			if stage == nil {
				stage = display.Start("hash the WACZ files", "bytes", 0)
			}
			stage.Counter().Store(n)
		},
		Sort: func(ctx context.Context, command, in, out string) error {
			return syssort.Sorter{TempDir: tmp, Memory: c.String("sort-memory")}.Sort(ctx, command, []string{in}, out)
		},
	})
	if stage != nil {
		stage.Done("")
	}
	display.Close()
	if st != nil && !log.Quiet {
		var parts []string
		for _, p := range []struct {
			what  string
			names []string
		}{{"imported", st.Imported}, {"already in the index", st.Present}, {"left out, running", st.Uncommitted}, {"left out, canceled", st.Canceled}} {
			if len(p.names) > 0 {
				parts = append(parts, fmt.Sprintf("%d crawls %s (%s)", len(p.names), p.what, strings.Join(p.names, ", ")))
			}
		}
		if len(parts) == 0 {
			parts = append(parts, "no committed crawl")
		}
		fmt.Fprintf(log.Writer(), "imported from %s into %s: %s; %s originals, %s revisits, %s other lines left out, %s WACZ files read\n",
			c.String("redis"), filepath.Clean(dir), strings.Join(parts, ", "), progress.Count(st.Originals), progress.Count(st.Revisits),
			progress.Count(st.Skipped), progress.Count(st.Files))
	}
	if err != nil {
		var conflict *redisindex.ConflictError
		if errors.As(err, &conflict) {
			return cli.Exit(fmt.Sprintf("import refused, nothing was committed:\n  %s", strings.Join(conflict.Problems, "\n  ")), cmdutil.ExitFatal)
		}
		if st == nil || len(st.Imported) == 0 {
			return cli.Exit(fmt.Errorf("import stopped, nothing was committed: %w", err), cmdutil.ExitFatal)
		}
		return cli.Exit(fmt.Errorf("import stopped after committing %s (run it again to finish it): %w", strings.Join(st.Imported, ", "), err), cmdutil.ExitFatal)
	}
	return nil
}
