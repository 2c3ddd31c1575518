// Command arc2warc converts ARC files to WARC files, record for record, and
// checks conversions.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"warcdedup/atomicfile"
	"warcdedup/convert"
	"warcdedup/internal/cmdutil"
	"warcdedup/verify"
	"warcdedup/warcsum"
)

const description = `arc2warc turns each ARC file (.arc, .arc.gz, v1 and v2) into one WARC
file in -o DIR, named after it (x.arc.gz -> x.warc.gz; with --plain, x.warc):
a warcinfo record naming the source file and this software, the filedesc as
a metadata record, response records for HTTP, resource records for dns: and
header-less records (text/dns, or the ARC content type), new record IDs,
WARC-Date from the 14-digit date, block and payload digests. Each block is
the ARC record's bytes verbatim; no HTTP header is invented. The WARC has
one gzip member per record, whatever the ARC's gzip form: one member per
record, the whole file in one member, or members of several records.

A truncated ARC record is written with the bytes that exist and
WARC-Truncated: length (left out with --drop-truncated). Every stretch of
ARC bytes that is no readable record (junk, a record line that does not
parse, bytes after a record's declared length, gzip damage) is skipped,
reported once with its offset and counted as damaged: such a file, like
one with a truncated record, makes the exit status 1 (its WARC is written
with everything else). So does an ARC record without a date ("-"): a WARC
record must have one and none is made up, so it is not converted, reported
with its offset and counted as damaged (the ARC keeps it; --check and
--in-place then leave the ARC). Offsets in a gzip ARC count bytes of its
inflated stream ("inflated offset"), except those of gzip damage.

A file named on the command line that is not an ARC file (a WARC file, or
a file without any ARC record) is refused, nothing is written for it, and
the exit status is 1; in a directory, .warc and .warc.gz files are passed
over, and a symbolic link is not followed but named on stderr (name the
file it points to). A --warc-version other than 1.0 or 1.1 is a usage
error (exit 2). The output is written under a temporary name and renamed
when complete; an existing output is never overwritten without --force.

--in-place converts the ARC files of each COLLECTION (a directory, read
with its subdirectories) beside themselves, as warcdedup run --convert-arc
does: each WARC is written under a temporary name and synced, proved
against its ARC as --check proves it, the proof (both files' size and
SHA-256, and where each record went) written to the work directory and
synced, the WARC linked to its name (never over an existing file), and
only then the ARC removed, or moved to --keep-arc DIR. Killed at any
point, the same command goes on. The first --keep-arc DIR is recorded in
WORKDIR: a rerun there with another, or none, is refused rather than
remove the ARC files left. The collection's directories and --keep-arc
DIR (made first if it is not there) are locked as warcdedup run locks
them: while another job holds one, the conversion is refused (exit 2)
before it starts. A directory beneath DIR is locked when an ARC is first
kept there: while another job holds it, that ARC stays with its WARC and
is named (exit 1), and the same command run again retries it. An ARC
that is damaged, cut short or no ARC is left as it is and named (exit
status 1); an ARC whose WARC name is taken is left too, unless that WARC
proves to be its conversion (then the ARC is retired).
WORKDIR/conversion.map maps every ARC record to its WARC record, for
warccdx --conversion.

--check converts nothing: for each ARC it checks the WARC already in -o DIR
(x.warc.gz, or x.warc) record for record, reading both files independently
of the converter: a warcinfo record first, then each ARC record in order
with its mapped type, URI, date and block byte for byte (WARC-Truncated for
a truncated one) and what the mapping adds (WARC-IP-Address, Content-Type,
the block and payload digests), the WARC read as deduplication reads it (one record per
gzip member); and warcsum of both compared in order as "warcsumcmp --order"
does. It prints a line per file on stdout and each problem on stderr, and
exits 1 if an ARC holds anything its WARC lacks (a missing or damaged WARC,
a record left out or changed, bytes of the ARC that no record holds).`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:      "Every ARC file was converted whole (with --check: every WARC file holds every record of its ARC file).",
		cmdutil.ExitDamaged: "ARC files had damaged stretches or truncated records (their WARC files are written with everything else), or a file named was no ARC file (refused, nothing written); with --check, a conversion lost or changed something, or is missing.",
		cmdutil.ExitFatal:   "The run stopped, or files could not be converted: bad usage, no input, two inputs that would be written to one file, a WARC file that exists (without --force), or one that could not be written. No partial WARC file is left behind.",
	},
	Examples: []cmdutil.Example{
		{Says: "Convert a directory of ARC files, then check every conversion against its ARC file:",
			Run: "arc2warc -o warcs arcs\n" +
				"arc2warc --check -o warcs arcs"},
		{Says: "Convert a tree of ARC files to uncompressed WARC 1.1, four files at a time:",
			Run: "arc2warc -r -j 4 --plain --warc-version 1.1 -o warcs arcs"},
	},
	SeeAlso: []string{"warcsum(1)", "warcsumcmp(1)", "warcrecompress(1)", "warcdedup(1)"},
}

func main() {
	app := cmdutil.NewApp("arc2warc", "convert ARC files to WARC, or check conversions", description,
		[]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: ".", Usage: "write WARC files into `DIR` (with --check: find them there)"},
			&cli.StringFlag{Name: "warc-version", Value: "1.0", Usage: "the WARC `VERSION` to write: 1.0 or 1.1"},
			&cli.BoolFlag{Name: "plain", Usage: "write uncompressed .warc files"},
			&cli.BoolFlag{Name: "drop-truncated", Usage: "leave truncated ARC records out"},
			&cli.BoolFlag{Name: "force", Usage: "overwrite existing WARC files"},
			&cli.BoolFlag{Name: "check", Usage: "convert nothing: check the WARC files in -o DIR against the ARC files"},
			&cli.BoolFlag{Name: "in-place", Usage: "convert each COLLECTION's ARC files beside themselves, prove each, then retire the ARC (see below)"},
			&cli.StringFlag{Name: "work-dir", Usage: "with --in-place: keep the proofs and the conversion map in `DIR` (default: COLLECTION.warcdedup, as warcdedup run)"},
			&cli.StringFlag{Name: "keep-arc", Usage: "with --in-place: move each converted ARC file into `DIR` (its path kept) instead of removing it"},
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "read subdirectories of directory arguments"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "convert or check `N` files at once"},
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "[-o DIR] FILE|DIR...\n--check [-o DIR] FILE|DIR..."
	cmdutil.Main(app, manual)
}

// arcFile is one ARC file to convert or check, and what came of it.
type arcFile struct {
	in    warcsum.Input
	out   string // the WARC file
	stats convert.Stats
	check verify.ConversionStats
	// problems are the check's violations, the first maxProblems of them.
	problems []string
	err      error
}

// maxProblems bounds the violations kept per file; the rest are counted.
const maxProblems = 100

func run(c *cli.Context) error {
	if err := convert.CheckVersion(c.String("warc-version")); err != nil {
		return cmdutil.Usage("--warc-version: %v", err)
	}
	if c.Bool("in-place") {
		return inPlace(c)
	}
	args := c.Args().Slice()
	log := cmdutil.NewLog(c)
	// A link in a directory is not followed (as in --in-place), but named.
	col := warcsum.Collector{Recursive: c.Bool("recursive"), Link: func(path string) {
		log.Warn(fmt.Errorf("%s: a symbolic link, not followed: not converted (name the file it points to)", path))
	}}
	inputs, err := col.Collect(args)
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if len(inputs) == 0 {
		return cli.Exit("no input: name ARC files or directories", cmdutil.ExitFatal)
	}
	// Files named on the command line are converted whatever their name
	// (and refused if they are no ARC); in a directory, WARC files are
	// passed over.
	named := map[string]bool{}
	for _, a := range args {
		if fi, err := os.Stat(a); err == nil && !fi.IsDir() {
			named[a] = true
		}
	}
	plain := c.Bool("plain")
	var jobs []*arcFile
	skipped := 0
	outputs := map[string]string{}
	for _, in := range inputs {
		if !named[in.Path] && isWARCName(in.Name) {
			skipped++
			continue
		}
		out := filepath.Join(c.String("output"), filepath.FromSlash(convert.OutputName(in.Name, plain)))
		// Two inputs may not become one output (x.arc and x.arc.gz), or the
		// second conversion would overwrite the first.
		if prev, dup := outputs[out]; dup {
			return cli.Exit(fmt.Sprintf("%s and %s would both be written to %s", prev, in.Path, out), cmdutil.ExitFatal)
		}
		outputs[out] = in.Path
		jobs = append(jobs, &arcFile{in: in, out: out})
	}
	if c.Bool("check") {
		return checkAll(c, log, jobs, skipped)
	}
	return convertAll(c, log, jobs, skipped)
}

func isWARCName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".warc") || strings.HasSuffix(n, ".warc.gz")
}

// each runs do on every file, n at once.
func each(jobs []*arcFile, n int, do func(*arcFile)) {
	sem := make(chan struct{}, max(1, n))
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			do(j)
		}()
	}
	wg.Wait()
}

func convertAll(c *cli.Context, log *cmdutil.Log, jobs []*arcFile, skipped int) error {
	opt := convert.Options{
		Version:       c.String("warc-version"),
		Plain:         c.Bool("plain"),
		DropTruncated: c.Bool("drop-truncated"),
		Software:      "warcdedup arc2warc " + cmdutil.Version,
		Damage:        log.Error,
	}
	each(jobs, c.Int("jobs"), func(j *arcFile) {
		j.stats, j.err = convertFile(j.in, j.out, opt, c.Bool("force"))
	})
	var total convert.Stats
	converted, refused, failed := 0, 0, 0
	for _, j := range jobs {
		switch {
		case errors.Is(j.err, convert.ErrNotARC):
			refused++
			log.Error(fmt.Errorf("%w; refused, nothing written", j.err))
			continue
		case j.err != nil:
			failed++
			log.Error(fmt.Errorf("%s not converted: %w", j.in.Path, j.err))
			continue
		}
		converted++
		total.Add(&j.stats)
		if log.Verbose {
			log.Printf("%s -> %s: %d records\n", j.in.Name, j.out, j.stats.Written)
		}
	}
	if !log.Quiet {
		fmt.Fprintf(log.Writer(), "files: %d converted, %d refused (not ARC), %d failed; %d WARC files passed over\n"+
			"records: %d read, %d written; truncated: %d written with WARC-Truncated, %d left out; damaged: %d\n",
			converted, refused, failed, skipped, total.Records, total.Written, total.Truncated, total.Dropped, total.Damaged)
	}
	if failed > 0 {
		return cli.Exit(fmt.Sprintf("%d files not converted", failed), cmdutil.ExitFatal)
	}
	if refused > 0 || total.Damaged+total.Truncated+total.Dropped > 0 {
		return cmdutil.Damaged("%d files refused, %d damaged stretches, %d truncated ARC records (see above)", refused, total.Damaged, total.Truncated+total.Dropped)
	}
	return nil
}

func convertFile(in warcsum.Input, out string, opt convert.Options, force bool) (convert.Stats, error) {
	if _, err := os.Stat(out); err == nil && !force {
		return convert.Stats{}, fmt.Errorf("%s exists (use --force to overwrite)", out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return convert.Stats{}, err
	}
	src, err := os.Open(in.Path)
	if err != nil {
		return convert.Stats{}, err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return convert.Stats{}, err
	}
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return convert.Stats{}, err
	}
	defer f.Abort()
	w := cmdutil.BufferedWriterTo(f)
	st, err := convert.Convert(src, in.Name, filepath.Base(out), w, opt)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Commit()
	}
	return st, err
}

func checkAll(c *cli.Context, log *cmdutil.Log, jobs []*arcFile, skipped int) error {
	if len(jobs) == 0 {
		// A check of nothing proves nothing: exit 0 would let a script
		// remove files no check read.
		return cli.Exit(fmt.Sprintf("no ARC file to check in %s (%d WARC files passed over)", strings.Join(c.Args().Slice(), ", "), skipped), cmdutil.ExitFatal)
	}
	each(jobs, c.Int("jobs"), checkFile)
	ok, failed := 0, 0
	var total verify.ConversionStats
	for _, j := range jobs {
		total.ARCRecords += j.check.ARCRecords
		total.Matched += j.check.Matched
		total.Truncated += j.check.Truncated
		for _, p := range j.problems {
			log.Error(errors.New(p))
		}
		if more := j.check.Violations - int64(len(j.problems)); more > 0 {
			log.Error(fmt.Errorf("%s: %d more problems", j.in.Path, more))
		}
		switch {
		case j.err != nil:
			failed++
			log.Error(j.err)
			fmt.Printf("%s: FAILED: %v\n", j.in.Name, j.err)
		case j.check.Violations > 0:
			failed++
			fmt.Printf("%s: FAILED: %d problems (see stderr); %d of its %d records found in %s; %d damaged stretches in the ARC\n",
				j.in.Name, j.check.Violations, j.check.Matched, j.check.ARCRecords, filepath.Base(j.out), j.check.ARCDamage)
		default:
			ok++
			note := ""
			if j.check.Truncated > 0 {
				note = fmt.Sprintf(", %d truncated (WARC-Truncated)", j.check.Truncated)
			}
			fmt.Printf("%s: OK: %d records%s in %s (%d records), %d responses in order\n",
				j.in.Name, j.check.ARCRecords, note, filepath.Base(j.out), j.check.WARCRecords, j.check.ListedARC)
		}
	}
	if !log.Quiet {
		fmt.Fprintf(log.Writer(), "files: %d checked, %d OK, %d failed; %d WARC files passed over\nrecords: %d read from the ARC files, %d found in the WARC files (%d truncated)\n",
			len(jobs), ok, failed, skipped, total.ARCRecords, total.Matched, total.Truncated)
	}
	if failed > 0 {
		return cmdutil.Damaged("%d of %d conversions lost or changed something (see above)", failed, len(jobs))
	}
	return nil
}

// checkFile checks j's WARC against its ARC: the WARC is j.out, or, when
// only that one exists, the name of the other choice of --plain.
func checkFile(j *arcFile) {
	warcPath := j.out
	if _, err := os.Stat(warcPath); errors.Is(err, os.ErrNotExist) {
		other := j.out + ".gz"
		if plain := strings.TrimSuffix(j.out, ".gz"); plain != j.out {
			other = plain
		}
		if _, err := os.Stat(other); err == nil {
			warcPath = other
		}
	}
	j.out = warcPath
	arc, err := os.Open(j.in.Path)
	if err != nil {
		j.err = err
		return
	}
	defer arc.Close()
	warc, err := os.Open(warcPath)
	if errors.Is(err, os.ErrNotExist) {
		j.err = fmt.Errorf("%s: not converted: %s does not exist", j.in.Path, warcPath)
		return
	} else if err != nil {
		j.err = err
		return
	}
	defer warc.Close()
	fa, err := arc.Stat()
	if err != nil {
		j.err = err
		return
	}
	fw, err := warc.Stat()
	if err != nil {
		j.err = err
		return
	}
	j.check, j.err = verify.Conversion(
		verify.File{Name: j.in.Path, R: arc, Size: fa.Size()},
		verify.File{Name: warcPath, R: warc, Size: fw.Size()},
		func(v string) {
			if len(j.problems) < maxProblems {
				j.problems = append(j.problems, v)
			}
		})
}
