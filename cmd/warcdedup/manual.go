package main

import "warcdedup/internal/cmdutil"

// manual is what warcdedup's help and man pages say beyond the commands'
// definitions: warcdedup(1), and a page per command (warcdedup-run(1),
// ...), each with its own options, exit statuses and examples.
var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "The command did all its work.",
		cmdutil.ExitDamaged: "The command finished, but some input was damaged, stale or refused; its summary says which files, and at which stage.",
		cmdutil.ExitFatal:   "The command stopped, or was not run: bad usage (no command, an unknown command or flag), or a failure its summary names.",
	},
	Examples: []cmdutil.Example{
		{Says: "See what deduplicating a collection would save, then do it, verified:",
			Run: "warcdedup run --dry-run /archive/crawl-2024\n" +
				"warcdedup run /archive/crawl-2024"},
		{Says: "Undo it:",
			Run: "warcdedup undo /archive/crawl-2024"},
	},
	SeeAlso: []string{"warcsum(1)", "warccollres(1)", "warcsumproc(1)", "warcrefs(1)", "warcsumcmp(1)", "warccdx(1)", "arc2warc(1)", "warcrecompress(1)"},
	Commands: map[string]cmdutil.Manual{
		"run": {
			Exit: map[int]string{
				cmdutil.ExitOK:      "Every stage finished: the collection is deduplicated (with --dry-run: measured), and the verification proved that no record was lost.",
				cmdutil.ExitDamaged: "The job finished, but records were damaged or files unreadable (hash stage), stale lines were left out (resolve stage), files were refused and left untouched (rewrite stage), the verification found records lost, or an index --cdx named was left untouched; the summary names the files and the stage, and the work directory keeps the details.",
				cmdutil.ExitFatal:   "The job stopped: bad usage, a stage that failed (the summary says which and why), or an interruption. Every file is its old version or its complete new one; the same command resumes the job.",
			},
			Examples: []cmdutil.Example{
				{Says: "See what deduplicating a collection would save, then do it; the work directory is coll.warcdedup, beside it:",
					Run: "warcdedup run --dry-run coll\n" +
						"warcdedup run coll\n" +
						"ls coll.warcdedup   # report.html, stats.json, fixity.tsv, ..."},
				{Says: "Keep the work directory on another disk, give the system sort 2 GB, read four files at a time:",
					Run: "warcdedup run -j 4 --sort-memory 2G \\\n" +
						"  --work-dir /scratch/crawl.warcdedup /archive/crawl"},
				{Says: "Bring the collection's indexes up to date as part of the job: a gzip CDXJ, and a ZipNum (pywb's, or a WACZ's index.idx and index.cdx.gz):",
					Run: "warcdedup run --cdx /archive/crawl.cdxj.gz \\\n" +
						"  --cdx /archive/zipnum/index.idx /archive/crawl"},
				{Says: "Deduplicate each month's crawl against the crawls before it, committed to an index:",
					Run: "warcdedup run --index /archive/dedup-index /archive/2024-05\n" +
						"warcdedup run --index /archive/dedup-index /archive/2024-06"},
			},
			SeeAlso: []string{"warcdedup-assess(1)", "warcdedup-undo(1)", "warcdedup-index(1)", "warcdedup-cluster(1)", "warcsum(1)", "warccollres(1)", "warcrefs(1)", "warcsumcmp(1)", "warccdx(1)", "sort(1)"},
		},
		"assess": {
			Exit: map[int]string{
				cmdutil.ExitOK:      "The assessment read everything it was given: the report holds its figures (exact, or estimated with a range).",
				cmdutil.ExitDamaged: "The assessment finished, but records were damaged, files unreadable or index lines unreadable; each is named, and the figures leave them out.",
				cmdutil.ExitFatal:   "The assessment stopped: bad usage, nothing to read, or a failure its summary names. Nothing in the collection was written.",
			},
			Examples: []cmdutil.Example{
				{Says: "Exact figures, from the dry run that a run then reuses:",
					Run: "warcdedup assess /archive/crawl-2024\n" +
						"warcdedup run /archive/crawl-2024"},
				{Says: "An estimate with its range from 5% of the files:",
					Run: "warcdedup assess --sample 5 /archive/crawl-2024"},
				{Says: "An estimate from the collection's CDXJ indexes alone, reading no WARC file:",
					Run: "warcdedup assess --cdx /archive/indexes/*.cdxj.gz"},
			},
			SeeAlso: []string{"warcdedup-run(1)", "warcdedup-index(1)"},
		},
		"cluster": {
			Exit: map[int]string{
				cmdutil.ExitOK:      "Every stage finished on every host: the collection is deduplicated (with --dry-run: measured) and the verification proved that no record was lost.",
				cmdutil.ExitDamaged: "The job finished, but records were damaged, lines stale (a storage host down, a file changed), files refused, or tasks failed for good; the summary names them and the stage.",
				cmdutil.ExitFatal:   "The job stopped: bad usage, a HOSTS file that cannot be read, Slurm that cannot be reached, or an interruption. The Slurm jobs go on; the same command follows them again.",
			},
			Examples: []cmdutil.Example{
				{Says: "Three storage hosts, each serving its share over HTTP; see the jobs, measure, then deduplicate:",
					Run: "cat hosts\n" +
						"store1 /data/warcs http://store1/warcs\n" +
						"store2 /data/warcs http://store2/warcs\n" +
						"store3 /data/warcs http://store3/warcs\n" +
						"warcdedup cluster --plan --work-dir /shared/job hosts\n" +
						"warcdedup cluster --dry-run --work-dir /shared/job hosts\n" +
						"warcdedup cluster --work-dir /shared/job hosts"},
				{Says: "Run the jobs in a partition of their own, and cancel them:",
					Run: "warcdedup cluster --sbatch=--partition=storage \\\n" +
						"  --work-dir /shared/job hosts\n" +
						"warcdedup cluster --cancel --work-dir /shared/job hosts"},
				{Says: "Crawl after crawl against a crawl index, the hosts behind one front that redirects to each file's host; each crawl is committed once verified, and a rerun does nothing:",
					Run: "warcdedup cluster --index /shared/index --crawl 2024-05 \\\n" +
						"  --crawl-url http://front/warcs --work-dir /shared/may hosts"},
			},
			SeeAlso: []string{"warcdedup-run(1)", "warcdedup-index(1)", "sbatch(1)", "squeue(1)", "scontrol(1)"},
		},
		"undo": {
			Exit: map[int]string{
				cmdutil.ExitOK:      "Every revisit to restore was restored: the files hold the records they held before deduplication.",
				cmdutil.ExitDamaged: "Files whose revisits could not be restored (an original gone or changed), or indexes --cdx named, were left untouched and named; the others were restored.",
				cmdutil.ExitFatal:   "The undo stopped: bad usage, no work directory, a failure its summary names, or an interruption. Every file is its old version or its complete new one; the same command restores what is left.",
			},
			Examples: []cmdutil.Example{
				{Says: "Restore a whole collection, or one file of it:",
					Run: "warcdedup undo coll\n" +
						"warcdedup undo coll/2024/crawl-00017.warc.gz"},
				{Says: "Also make other tools' revisits whole records, for a self-contained copy of the crawl:",
					Run: "warcdedup undo --all coll"},
				{Says: "Bring the collection's index (any form, ZipNum too) up to date with the restored records, as part of the undo or after it:",
					Run: "warcdedup undo --cdx index.cdxj coll\n" +
						"warccdx --log coll.warcdedup/rewrite.log --in-place zipnum/index.idx"},
			},
			SeeAlso: []string{"warcdedup-run(1)", "warcrefs(1)", "warccdx(1)"},
		},
		"index": {
			Exit: map[int]string{
				cmdutil.ExitOK:      "The command did all its work: the index verified, or printed, or changed as asked.",
				cmdutil.ExitDamaged: "verify found problems (each on stderr); remove was refused because other crawls' revisits need the crawl, or a run holds it, or another removal is at work (each is named); remove --restore left files untouched (the crawl stays); import --skip-damaged left damaged index lines out, or export left originals out (each is named).",
				cmdutil.ExitFatal:   "The command stopped: bad usage, an index that does not verify or cannot be read (named), a damaged index line given to import, or a failure it names. The index is the generation before or the new one, never a mix.",
			},
			Examples: []cmdutil.Example{
				{Says: "Check the index and every committed crawl's files, reading them all:",
					Run: "warcdedup index verify --deep --index /archive/dedup-index"},
				{Says: "Which crawls a crawl's revisits need, and who needs it:",
					Run: "warcdedup index deps --index /archive/dedup-index 2024-06\n" +
						"warcdedup index deps --reverse --index /archive/dedup-index 2024-05"},
				{Says: "Remove the oldest crawl, re-pointing or restoring the revisits that need it, then delete its files:",
					Run: "warcdedup index remove --restore --index /archive/dedup-index 2024-05\n" +
						"rm -r /archive/2024-05"},
				{Says: "Seed an index from an existing crawl's CDXJ index, without reading its WARC files:",
					Run: "warcdedup index import --index /archive/dedup-index \\\n" +
						"  --crawl 2023 --location /archive/2023 /archive/2023.cdxj"},
				{Says: "Give Browsertrix's crawler the originals of a SHA-256 index of WACZ crawls, and crawl against them:",
					Run: "warcdedup index export --index /archive/dedup-index \\\n" +
						"  --redis redis://dedupe:6379/0\n" +
						"crawl --redisDedupeUrl redis://dedupe:6379/0 --generateWACZ ..."},
				{Says: "Take Browsertrix's committed crawls as originals of the index, their WACZ files in one directory:",
					Run: "warcdedup index import --index /archive/dedup-index \\\n" +
						"  --redis redis://dedupe:6379/0 --location /archive/wacz"},
			},
			SeeAlso: []string{"warcdedup-run(1)", "warcdedup-undo(1)", "warccdx(1)"},
		},
	},
}
