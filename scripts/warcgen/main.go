// Command warcgen writes a synthetic collection of WARC/ARC files and the
// hash manifest a correct deduplication of it produces (see scripts/gen);
// with -wacz, the WARC files packaged as WACZ files of several crawls, as
// Browsertrix keeps them (see scripts/waczgen).
//
//	warcgen -o /tmp/coll -files 10 -records 5000 -dup 0.3 -expect /tmp/coll.expected
//	warcgen -o /tmp/wacz -files 12 -records 6000 -dup 0.4 -formats warc.gz -sequential \
//	    -wacz 6 -crawls 3 -wacz-index mixed -collection-json collection.json
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"warcdedup/digest"
	"warcdedup/policy"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
)

// sizeFlag is a byte count that accepts K, M, G (powers of 1024) suffixes.
type sizeFlag int64

func (s *sizeFlag) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

func parseSize(v string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(v))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q (want a byte count like 30000, 30K, 2G)", v)
	}
	return n * mult, nil
}

func main() {
	o := newOptions()
	o.register(flag.CommandLine)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: warcgen -o DIR [flags]\n\nWrites a synthetic WARC/ARC collection and its expected deduplication manifest.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if o.out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := o.run(); err != nil {
		fmt.Fprintln(os.Stderr, "warcgen:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// options are warcgen's flags (register gives each one's name, default
// and help).
type options struct {
	out, algo, formats, collisions, expect, prefix, pol, waczIndex, collJSON string

	files, records, waczN, crawls, blockLines int

	dup, chunked, sameURL, crossFile, variants float64

	seed int64

	nonCand, quirks, arcQuirks, sequential, keepWARCs bool

	mean, maxPayload, huge sizeFlag
}

// newOptions are the defaults the flags' registration does not set:
// those of the flag.Var flags, whose default is the value they hold.
func newOptions() *options {
	return &options{mean: 20 << 10}
}

// register defines warcgen's flags on fs, with their defaults and help.
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.out, "o", "", "output `DIR` (created); required")
	fs.IntVar(&o.files, "files", 4, "number of files")
	fs.IntVar(&o.records, "records", 1000, "listed (2xx) response records in total")
	fs.Float64Var(&o.dup, "dup", 0.3, "fraction of listed responses that repeat an earlier payload")
	fs.Int64Var(&o.seed, "seed", 1, "random seed; the output is a function of all flags")
	fs.StringVar(&o.algo, "H", "sha1", "digest `algorithm` of the expected manifest: md5, sha1, sha256, sha512")
	fs.StringVar(&o.formats, "formats", "warc.gz,warc,warc1.1.gz,warc1.1,arc.gz,arc", "comma list of file formats, used in turn: warc, warc.gz, warc1.1, warc1.1.gz, arc, arc.gz, arc2, arc2.gz (ARC v2) (or all: every format but ARC v2)")
	fs.Float64Var(&o.chunked, "chunked", 0.05, "fraction of payloads stored with Transfer-Encoding: chunked framing")
	fs.StringVar(&o.collisions, "collisions", "", "`DIR` of published collision pairs (shared/collisions) to include; empty disables")
	fs.StringVar(&o.expect, "expect", "", "write the expected 10-field manifest, sorted by digest, ext, date, file, offset, to `FILE`")
	fs.BoolVar(&o.nonCand, "noncandidates", true, "also write records that must not be listed (warcinfo, requests, metadata, resource, 404, 301, 206, revisit, truncated)")
	fs.BoolVar(&o.quirks, "quirks", false, "add legal oddities: URIs with a space, <...>-wrapped WARC-Target-URIs in WARC/1.0")
	fs.BoolVar(&o.arcQuirks, "arcquirks", false, "in ARC files, what real ones have: a filedesc length one short, records followed by no line feed or two, dashes in v2 lines")
	fs.Float64Var(&o.sameURL, "sameurl", 0.4, "fraction of duplicates that re-fetch the same URL")
	fs.Float64Var(&o.crossFile, "crossfile", 0.5, "fraction of duplicates whose source is in another file")
	fs.BoolVar(&o.sequential, "sequential", false, "lay the files out one after another in time, a day apart, as monthly crawls (default: two at a time)")
	fs.StringVar(&o.prefix, "prefix", "gen", "file name prefix")
	fs.Float64Var(&o.variants, "variants", 0, "fraction of duplicates served another way (status 203, another Content-Type, Content-Encoding: gzip)")
	fs.StringVar(&o.pol, "policy", "replay", "`policy` of the expected manifest: replay, payload or uri")
	fs.IntVar(&o.waczN, "wacz", 0, "package the WARC files as `N` WACZ files (0: leave them as they are)")
	fs.IntVar(&o.crawls, "crawls", 0, "group the WACZ files into `N` crawls, each with a crawl id (default: one crawl per WACZ)")
	fs.StringVar(&o.waczIndex, "wacz-index", "plain", "WACZ index `form`: plain (index.cdxj), zipnum (index.cdx.gz + index.idx) or mixed (every other WACZ ZipNum)")
	fs.IntVar(&o.blockLines, "wacz-block-lines", 256, "lines per ZipNum block")
	fs.StringVar(&o.collJSON, "collection-json", "", "also write a multi-WACZ JSON `FILE` (resources: name, path, hash, size, crawlId) beside the WACZ files")
	fs.BoolVar(&o.keepWARCs, "wacz-keep-warcs", false, "with -wacz, keep the WARC files beside the WACZ files (the same bytes as plain files, for benchmarks)")
	fs.Var(&o.mean, "mean", "mean payload size in bytes (K, M, G suffixes accepted)")
	fs.Var(&o.maxPayload, "max", "largest payload in bytes; 0 means max(8M, 64*mean)")
	fs.Var(&o.huge, "huge", "add one response with a payload of this many `BYTES` (e.g. 2G); 0 for none")
}

// usageError is a flag value only known bad once parsed (exit status 2,
// as for a flag the flag package refuses).
type usageError struct{ error }

// config is the generator's configuration the flags give.
func (o *options) config() (gen.Config, error) {
	a, err := digest.ParseLabel(o.algo)
	if err != nil {
		return gen.Config{}, err
	}
	fs, err := gen.ParseFormats(o.formats)
	if err != nil {
		return gen.Config{}, err
	}
	pol, err := policy.Parse(o.pol)
	if err != nil {
		return gen.Config{}, usageError{err}
	}
	return gen.Config{
		Policy:         pol,
		ReplayVariants: o.variants,
		Files:          o.files,
		Records:        o.records,
		DupRate:        o.dup,
		Seed:           o.seed,
		Algorithm:      a,
		MeanPayload:    int(o.mean),
		MaxPayload:     int(o.maxPayload),
		Formats:        fs,
		Chunked:        o.chunked,
		Collisions:     o.collisions != "",
		CollisionDir:   o.collisions,
		NonCandidates:  o.nonCand,
		Huge:           int64(o.huge),
		SameURL:        negZero(o.sameURL),
		CrossFile:      negZero(o.crossFile),
		Sequential:     o.sequential,
		Quirks:         o.quirks,
		ARCQuirks:      o.arcQuirks,
		Prefix:         o.prefix,
	}, nil
}

// run writes the collection, its WACZ packages with -wacz and the
// expected manifest with -expect, then tells on stderr what it wrote.
func (o *options) run() error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	res, err := gen.Write(o.out, cfg)
	if err != nil {
		return err
	}
	var coll *waczgen.Collection
	if o.waczN > 0 {
		coll, err = waczgen.Write(o.out, res, waczgen.Config{Packages: o.waczN, Crawls: o.crawls, Index: o.waczIndex,
			LinesPerBlock: o.blockLines, CollectionJSON: o.collJSON, Prefix: o.prefix, KeepWARCs: o.keepWARCs})
		if err != nil {
			return err
		}
	}
	if o.expect != "" {
		if err := writeExpected(o.expect, res); err != nil {
			return err
		}
	}
	fmt.Fprintln(os.Stderr, "warcgen:", res.Summary())
	if coll != nil {
		for _, p := range coll.Packages {
			form := "plain CDXJ"
			if p.ZipNum {
				form = "ZipNum"
			}
			fmt.Fprintf(os.Stderr, "warcgen: %s: %s, %d WARC files, %d bytes, %s index\n", p.Name, p.CrawlID, len(p.WARCs), p.Size, form)
		}
	}
	return nil
}

// writeExpected writes res's expected manifest to name, removed if it
// could not be written whole.
func writeExpected(name string, res *gen.Result) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := res.WriteExpected(f); err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

// negZero maps an explicit 0 to the library's "none" (a negative value),
// since the library reads 0 as "default".
func negZero(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}
