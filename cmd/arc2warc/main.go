// Command arc2warc converts ARC files to WARC files, record for record.
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
	"warcdedup/warcsum"
)

const description = `arc2warc turns each ARC file (.arc, .arc.gz, v1 and v2) into one WARC
file in -o DIR, named after it (x.arc.gz -> x.warc.gz; with --plain, x.warc):
a warcinfo record naming the source file and this software, the filedesc as
a metadata record, response records for HTTP, resource records for dns: and
header-less records (text/dns, or the ARC content type), new record IDs,
WARC-Date from the 14-digit date, block and payload digests. Each block is
the ARC record's bytes verbatim; no HTTP header is invented.

A truncated ARC record is written with the bytes that exist and
WARC-Truncated: length (left out with --drop-truncated); damaged records are
reported with their offset. The output is written under a temporary name and
renamed when complete; an existing output is never overwritten without
--force. Check a conversion with scripts/arc2warc-check.sh (warcsum of both,
compared in order by warcsumcmp --order).`

func main() {
	cmdutil.Main(cmdutil.NewApp("arc2warc", "convert ARC files to WARC", description,
		[]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: ".", Usage: "write WARC files into `DIR`"},
			&cli.StringFlag{Name: "warc-version", Value: "1.0", Usage: "WARC version to write: 1.0 or 1.1"},
			&cli.BoolFlag{Name: "plain", Usage: "write uncompressed .warc files"},
			&cli.BoolFlag{Name: "drop-truncated", Usage: "leave truncated ARC records out"},
			&cli.BoolFlag{Name: "force", Usage: "overwrite existing WARC files"},
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "read subdirectories of directory arguments"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.NumCPU(), Usage: "convert `N` files at once"},
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run))
}

func run(c *cli.Context) error {
	inputs, err := warcsum.Collect(c.Args().Slice(), c.Bool("recursive"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if len(inputs) == 0 {
		return cli.Exit("no input: name ARC files or directories", cmdutil.ExitFatal)
	}
	outDir := c.String("output")
	log := cmdutil.NewLog(c)
	opt := convert.Options{
		Version:       c.String("warc-version"),
		Plain:         c.Bool("plain"),
		DropTruncated: c.Bool("drop-truncated"),
		Software:      "warcdedup arc2warc " + cmdutil.Version,
		Damage:        log.Error,
	}
	type result struct {
		stats convert.Stats
		out   string
		err   error
	}
	// Two inputs may not become one output (x.arc and x.arc.gz), or the
	// second conversion would overwrite the first.
	outputs := map[string]string{}
	for _, in := range inputs {
		out := convert.OutputName(in.Name, opt.Plain)
		if prev, dup := outputs[out]; dup {
			return cli.Exit(fmt.Sprintf("%s and %s would both be written to %s", prev, in.Path, out), cmdutil.ExitFatal)
		}
		outputs[out] = in.Path
	}
	results := make([]result, len(inputs))
	sem := make(chan struct{}, max(1, c.Int("jobs")))
	var wg sync.WaitGroup
	for i, in := range inputs {
		if strings.HasSuffix(strings.ToLower(in.Name), ".warc") || strings.HasSuffix(strings.ToLower(in.Name), ".warc.gz") {
			continue // a directory of mixed files: only its ARC files are converted
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out := filepath.Join(outDir, filepath.FromSlash(convert.OutputName(in.Name, opt.Plain)))
			results[i].out = out
			results[i].stats, results[i].err = convertFile(in, out, opt, c.Bool("force"))
		}()
	}
	wg.Wait()
	var total convert.Stats
	failed := 0
	for i, r := range results {
		if r.out == "" {
			continue
		}
		total.Add(&r.stats)
		if r.err != nil {
			failed++
			log.Error(r.err)
			continue
		}
		if log.Verbose {
			log.Printf("%s -> %s: %d records\n", inputs[i].Name, r.out, r.stats.Written)
		}
	}
	if !log.Quiet {
		fmt.Fprintf(log.Writer(), "files: %d converted, %d failed\nrecords: %d read, %d written; truncated: %d written with WARC-Truncated, %d left out; damaged: %d\n",
			len(results)-failed, failed, total.Records, total.Written, total.Truncated, total.Dropped, total.Damaged)
	}
	if failed > 0 {
		return cli.Exit(fmt.Sprintf("%d files not converted", failed), cmdutil.ExitFatal)
	}
	if total.Damaged+total.Truncated+total.Dropped > 0 {
		return cmdutil.Damaged("%d damaged and %d truncated ARC records (see above)", total.Damaged, total.Truncated+total.Dropped)
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
