// Command warcsumsplit partitions manifests so the pipeline's stages run in
// parallel on many hosts.
package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"warcdedup/internal/cmdutil"
	"warcdedup/manifest"
	"warcdedup/split"
)

const description = `warcsumsplit writes parts PREFIX-000, PREFIX-001, ... (or PREFIX-HOST),
each under a temporary name until the whole input was read, and prints each
part's lines and bytes. One mode:

  -c N, -s SIZE      cut a manifest sorted on digest into N parts, or parts
                     of about SIZE bytes (K, M, G suffixes), never splitting a
                     digest cluster (so parts may be uneven). Sorted with
                     LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n
  --hash-ranges N    partition an UNSORTED manifest by digest value into N
                     parts: each part can be sorted and resolved on its own
                     host, and the sorted parts in part order are the sorted
                     whole. This is how the sort scales past one machine.
  --hosts MAP        split a manifest by the storage host that holds each
                     line's file, for per-host warcrefs runs. MAP has
                     "pattern host" lines: an exact file name or a pattern
                     like crawl-2012-* (first match wins); a file no rule
                     matches stops the split.

A numbered part (PREFIX-NNN) of an earlier split that this one would not
replace stops the split before any part is written: read with the new
parts, its lines would be read twice or stale. Remove the earlier parts.`

var manual = cmdutil.Manual{
	Exit: map[int]string{
		cmdutil.ExitOK:    "Every part was written; their lines and bytes are printed on standard error.",
		cmdutil.ExitFatal: "The run stopped: bad usage (not exactly one of -c, -s, --hash-ranges, --hosts), a manifest that is malformed or (for -c and -s) not sorted on digest, a file no --hosts rule matches, a numbered part of an earlier split that this one would not replace, or a part that could not be written. No part is left behind.",
	},
	Examples: []cmdutil.Example{
		{Says: "Cut a collection's manifest into 16 ranges of digests, then sort and resolve each on its own (here one after the other; on a cluster, one host each):",
			Run: "warcsum -r coll > all\n" +
				"warcsumsplit --hash-ranges 16 -i all -o range\n" +
				"for p in range-*; do\n" +
				"  LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n $p |\n" +
				"    warccollres -p --root coll > $p.numbered\n" +
				"done"},
		{Says: "Split a numbered manifest by the storage host that holds each file, for one warcrefs run per host:",
			Run: "warcsumsplit --hosts hosts.map -i numbered -o host"},
		{Says: "Cut a manifest sorted on digest into parts of about 2 GiB, never splitting a digest:",
			Run: "warcsumsplit -s 2G -i by-digest -o chunk"},
	},
	SeeAlso: []string{"warcsum(1)", "warccollres(1)", "warcrefs(1)", "sort(1)"},
}

func main() {
	app := cmdutil.NewApp("warcsumsplit", "partition manifests for parallel runs", description,
		[]cli.Flag{
			&cli.IntFlag{Name: "count", Aliases: []string{"c"}, Usage: "cut into `N` parts"},
			&cli.StringFlag{Name: "size", Aliases: []string{"s"}, Usage: "cut into parts of about `SIZE` bytes (K, M, G)"},
			&cli.IntFlag{Name: "hash-ranges", Usage: "partition by digest value into `N` parts"},
			&cli.StringFlag{Name: "hosts", Usage: "split by storage host, as the `MAP` file says"},
			&cli.StringFlag{Name: "prefix", Aliases: []string{"o"}, Value: "part", Usage: "parts are named `PREFIX`-000, ..."},
			cmdutil.InputFlag,
			cmdutil.QuietFlag,
			cmdutil.VerboseFlag,
		}, run)
	app.ArgsUsage = "(-c N | -s SIZE | --hash-ranges N | --hosts MAP) [-i MANIFEST]"
	cmdutil.Main(app, manual)
}

func run(c *cli.Context) error {
	modes := 0
	for _, f := range []string{"count", "size", "hash-ranges", "hosts"} {
		if c.IsSet(f) {
			modes++
		}
	}
	if modes != 1 {
		return cli.Exit("give exactly one of -c, -s, --hash-ranges, --hosts", cmdutil.ExitFatal)
	}
	in, name, err := cmdutil.OpenInput(c.String("input"))
	if err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	defer in.Close()
	parts := split.NewParts(c.String("prefix"))
	defer parts.Abort()
	r := manifest.NewReader(in, name)

	switch {
	case c.IsSet("count"), c.IsSet("size"):
		size, err := partSize(c, in)
		if err == nil {
			err = split.BySize(r, parts, size)
		}
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
	case c.IsSet("hash-ranges"):
		if err := split.ByHashRange(r, name, parts, c.Int("hash-ranges")); err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
	case c.IsSet("hosts"):
		f, err := os.Open(c.String("hosts"))
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
		rules, err := split.ReadHostMap(f, c.String("hosts"))
		f.Close()
		if err == nil {
			err = split.ByHost(r, name, parts, rules)
		}
		if err != nil {
			return cli.Exit(err, cmdutil.ExitFatal)
		}
	}
	if err := parts.Stale(); err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if err := parts.Commit(); err != nil {
		return cli.Exit(err, cmdutil.ExitFatal)
	}
	if !c.Bool("quiet") {
		parts.Summary(os.Stderr)
	}
	return nil
}

// partSize is -s, or the input's size divided by -c (which needs an input
// file whose size is known).
func partSize(c *cli.Context, in io.Reader) (int64, error) {
	if c.IsSet("size") {
		return parseSize(c.String("size"))
	}
	n := c.Int("count")
	if n < 1 {
		return 0, fmt.Errorf("-c %d: want at least 1 part", n)
	}
	size, err := inputSize(in)
	if err != nil {
		return 0, err
	}
	return max(1, (size+int64(n)-1)/int64(n)), nil
}

// inputSize is the size of the manifest -c divides: a regular file's. A
// pipe or FIFO, even one named with -i (/dev/stdin, <(sort ...)), has
// size 0, which cut the manifest into one part per digest.
func inputSize(in io.Reader) (int64, error) {
	if f, ok := in.(*os.File); ok {
		fi, err := f.Stat()
		if err != nil {
			return 0, err
		}
		if fi.Mode().IsRegular() {
			return fi.Size(), nil
		}
	}
	return 0, errors.New("-c needs the manifest as a regular file (-i FILE) to know its size; use -s SIZE with standard input or a pipe")
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mult = 1 << 10
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult = 1 << 20
	case strings.HasSuffix(s, "G"), strings.HasSuffix(s, "g"):
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 || v > math.MaxInt64/mult {
		// Past 2^63 bytes the product wrapped round to a negative size,
		// and every digest became a part of its own.
		return 0, fmt.Errorf("size %q: want a positive number with an optional K, M or G, below 8 EiB", s)
	}
	return v * mult, nil
}
