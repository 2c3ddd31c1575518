package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/cluster"
	"warcdedup/digest"
	"warcdedup/internal/cmdutil"
	"warcdedup/internal/fspath"
	"warcdedup/internal/progress"
	"warcdedup/policy"
)

func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:      "cluster",
		Usage:     "deduplicate a collection spread over storage hosts, as Slurm jobs",
		ArgsUsage: "HOSTS",
		Description: `warcdedup cluster runs the job of warcdedup run over a collection whose
files lie on many storage hosts, as jobs of the Slurm cluster that
SLURM_CONF names (as for sbatch). HOSTS is a file with one line per storage
host:

  NAME ROOT URL

NAME is the host's Slurm node name, ROOT the directory on that host that
holds its share of the collection (a file's name is its path relative to
ROOT, unique across the hosts), URL the HTTP base URL that serves ROOT (the
file REL is at URL/REL). Several lines may give one URL: a front, or any
host of a SWAP-like store, that redirects each request (302) to the host
holding the file. WARC and ARC files only: a host whose ROOT holds WACZ
packages stops the job at its hash, before anything is rewritten, naming
them (warcdedup run deduplicates packages, writing each anew). The job
is a plan of Slurm jobs with dependencies:

  1     hash        on each host (sbatch --nodelist): warcsum over ROOT,
                    the manifest sorted on digest and cut into hash ranges
  2, 3  resolve     a job array, a task per hash range on any node: the
                    hosts' parts of the range merged (sort -m) and the
                    copies numbered from them, reading no record, split
                    by host
  4     rewrite     on each host: warcrefs in place over the host's lines,
                    with every check of warcdedup run; each duplicate is
                    compared with its original byte for byte, originals
                    on other hosts read over HTTP, where their host's
                    rewrite log says they are; a duplicate that differs
                    is kept apart, as it is
        collisions  once: the digests of the duplicates kept apart
                    resolved byte for byte over HTTP (as warccollres),
                    then on each host a second rewrite of what the new
                    numbering allows
  5     hash again  on each host: only the revisits written in the files
                    replaced are read (their other records keep their
                    listing)
        verify      nothing was lost, over the whole collection
        account     report.html, stats.json, fixity.tsv, deps.tsv, as run's

The work directory (default HOSTS.warcdedup) must be on a file system every
node mounts at the same path (NFS, Lustre with -o flock, GPFS, CephFS), and
warcdedup must be at the same path on every node: the jobs run it, and
pass their manifests and results through the work directory.

The command follows the jobs: progress of the current stage (units done,
rate, ETA, tasks done, running and waiting), failed tasks run again
(scontrol requeue; a job Slurm lost is submitted again) up to
--task-retries times. Interrupted, the jobs go on in Slurm; the same
command follows them again, and submits again what Slurm lost. When the
job is done it prints the summary of warcdedup run. With --dry-run
nothing is rewritten, and the figures are what a run would do. --plan
shows the jobs it would submit; --cancel cancels them.

With --index DIR, as with warcdedup run --index, the hosts' files are one
crawl (--crawl NAME, default HOSTS's name without its extension), named
NAME/REL in the manifests: each hash range joins its part of the index
(the index is partitioned by digest), and the crawl's duplicates of
committed originals, and of each other, become revisits, the bytes
compared with the committed original read from where the index says it
is (a path must be readable at that path on every node); committed crawls
are never rewritten. Once verified, the account
commits the crawl, its files recorded as served at --crawl-url (default:
the hosts' URL when they all give one), where later runs, on a cluster
or on one machine, read them. A run of a committed crawl does nothing
(its files on the hosts are not looked at: warcdedup index verify checks
them).`,
		Flags: append(jobFlags(),
			&cli.BoolFlag{Name: "dry-run", Usage: "rewrite nothing; report what would be rewritten and saved"},
			&cli.BoolFlag{Name: "hard-links", Usage: "rewrite files with several hard links (the other names keep the old bytes)"},
			&cli.BoolFlag{Name: "keep-work", Usage: "keep the hosts' and ranges' work copies (by digest, range parts, by file, numbered) once merged or consumed, for inspection"},
			&cli.IntFlag{Name: "ranges", Usage: "resolve in `N` hash ranges, each a task of the array (default: 2 per host)"},
			&cli.IntFlag{Name: "task-retries", Value: 3, Usage: "run a failed task again up to `N` times"},
			&cli.StringSliceFlag{Name: "sbatch", Usage: "pass `OPTION` to every sbatch, e.g. --sbatch=--partition=storage (repeatable)"},
			&cli.IntFlag{Name: "per-host", Value: 4, Usage: "at most `N` HTTP requests open to one storage host, per task"},
			&cli.IntFlag{Name: "http-retries", Value: 5, Usage: "retry a transient HTTP failure `N` times"},
			&cli.DurationFlag{Name: "http-timeout", Value: 60 * time.Second, Usage: "give up an HTTP attempt after `DURATION` without a byte"},
			&cli.Int64Flag{Name: "min-rate", Value: 64 << 10, Usage: "give up a record read over HTTP slower than `BYTES` a second"},
			&cli.DurationFlag{Name: "version-wait", Value: 2 * time.Minute, Usage: "wait up to `DURATION` for another host's log to name the version of a file a rewrite reads"},
			&cli.StringFlag{Name: "index", Usage: "deduplicate the crawl against the crawls committed to the index in `DIR` (created if need be; every node reads it at that path), and commit it when verified"},
			&cli.StringFlag{Name: "crawl", Usage: "with --index: the crawl's `NAME` (default: HOSTS's name without its extension)"},
			&cli.StringFlag{Name: "crawl-url", Usage: "with --index: the base `URL` serving every host's files, which the index records for later runs (default: the hosts' URL, when they all give one)"},
			&cli.BoolFlag{Name: "again", Usage: "start a new job even if the last one completed (what changed since is deduplicated)"},
			&cli.BoolFlag{Name: "plan", Usage: "show the Slurm jobs the job is made of, and submit nothing"},
			&cli.BoolFlag{Name: "cancel", Usage: "cancel the Slurm jobs of the work directory's job"},
			&cli.DurationFlag{Name: "poll", Value: 2 * time.Second, Hidden: true, Usage: "look at the jobs this often"},
			&cli.BoolFlag{Name: "compare-in-resolve", Hidden: true, Usage: "resolve reads and compares every copy over HTTP, as crawl-index and dry runs do (for tests and benchmarks; by default the rewrite compares each duplicate once)"},
		),
		Action: runCluster,
	}
}

// clusterOptions reads the flags of warcdedup cluster.
func clusterOptions(c *cli.Context) (cluster.Options, error) {
	if c.NArg() != 1 {
		return cluster.Options{}, cmdutil.Usage("name the hosts file: %s cluster HOSTS (see --help)", c.App.Name)
	}
	hostsFile := c.Args().First()
	f, err := os.Open(hostsFile)
	if err != nil {
		return cluster.Options{}, err
	}
	hosts, err := cluster.ReadHosts(f, hostsFile)
	f.Close()
	if err != nil {
		return cluster.Options{}, err
	}
	algo, err := digest.ParseLabel(c.String("hash"))
	if err != nil {
		return cluster.Options{}, cmdutil.Usage("%v", err)
	}
	pol, err := policy.Parse(c.String("policy"))
	if err != nil {
		return cluster.Options{}, cmdutil.Usage("%v", err)
	}
	ranges := c.Int("ranges")
	if !c.IsSet("ranges") {
		ranges = 2 * len(hosts)
	}
	if ranges < 1 || ranges > 10000 {
		return cluster.Options{}, cmdutil.Usage("--ranges %d: want 1 to 10000", ranges)
	}
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		return cluster.Options{}, fmt.Errorf("finding warcdedup's own path for the jobs: %w", err)
	}
	workDir := c.String("work-dir")
	if workDir == "" {
		abs, err := fspath.Abs(hostsFile)
		if err != nil {
			return cluster.Options{}, err
		}
		workDir = abs + ".warcdedup"
	}
	params := cluster.Params{Hosts: hosts, Ranges: ranges, Algorithm: algo.String(), Policy: pol.String(),
		DryRun: c.Bool("dry-run"), HardLinks: c.Bool("hard-links"), CompareInResolve: c.Bool("compare-in-resolve")}
	if params.Index = c.String("index"); params.Index != "" {
		if params.Index, err = fspath.Abs(params.Index); err != nil {
			return cluster.Options{}, err
		}
		params.Crawl = c.String("crawl")
		if params.Crawl == "" {
			base := filepath.Base(hostsFile)
			params.Crawl = strings.TrimSuffix(base, filepath.Ext(base))
		}
		params.CrawlURL = strings.TrimRight(c.String("crawl-url"), "/")
		if params.CrawlURL == "" {
			params.CrawlURL = params.DefaultCrawlURL()
		}
	} else if c.IsSet("crawl") || c.IsSet("crawl-url") {
		return cluster.Options{}, cmdutil.Usage("--crawl and --crawl-url go with --index")
	}
	return cluster.Options{
		WorkDir: workDir,
		Params:  params,
		Settings: cluster.Settings{Binary: bin, Jobs: max(1, c.Int("jobs")), SortMemory: c.String("sort-memory"),
			PerHost: c.Int("per-host"), HTTPRetries: c.Int("http-retries"), HTTPTimeout: c.Duration("http-timeout"),
			MinRate: c.Int64("min-rate"), VersionWait: c.Duration("version-wait"), KeepWork: c.Bool("keep-work")},
		Again:       c.Bool("again"),
		TaskRetries: c.Int("task-retries"),
		Poll:        c.Duration("poll"),
		Sbatch:      c.StringSlice("sbatch"),
		Scheduler:   &cluster.Slurm{},
	}, nil
}

func runCluster(c *cli.Context) error {
	opt, err := clusterOptions(c)
	if err != nil {
		var exit cli.ExitCoder
		if errors.As(err, &exit) {
			return err
		}
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if c.Bool("plan") {
		fmt.Print(cluster.Describe(opt))
		return nil
	}
	opt.Display = progress.New(os.Stderr, "warcdedup", c.Bool("quiet"))
	defer opt.Display.Close()
	if c.Bool("cancel") {
		if err := cluster.Cancel(opt); err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
		return nil
	}
	ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := cluster.Run(ctx, opt)
	opt.Display.Close()
	return jobEnd(c, res, err)
}

func clusterTaskCommand() *cli.Command {
	return &cli.Command{
		Name:      "cluster-task",
		Usage:     "run one task of a cluster job (the Slurm jobs of warcdedup cluster run it)",
		ArgsUsage: "STEP INDEX",
		Hidden:    true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "work-dir", Required: true, Usage: "the job's work directory `DIR`"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return cmdutil.Usage("usage: %s cluster-task --work-dir DIR STEP INDEX", c.App.Name)
			}
			index, err := strconv.Atoi(c.Args().Get(1))
			if err != nil {
				return cmdutil.Usage("index %q: not a number", c.Args().Get(1))
			}
			ctx, stop := cmdutil.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			t := &cluster.Task{WorkDir: c.String("work-dir"), Step: c.Args().First(), Index: index, Log: os.Stderr}
			if err := t.Run(ctx); err != nil {
				var perm *cluster.PermanentError
				if errors.As(err, &perm) {
					return cli.Exit("", cluster.ExitPermanent)
				}
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}
