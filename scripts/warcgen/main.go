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
	var (
		out        = flag.String("o", "", "output `DIR` (created); required")
		files      = flag.Int("files", 4, "number of files")
		records    = flag.Int("records", 1000, "listed (2xx) response records in total")
		dup        = flag.Float64("dup", 0.3, "fraction of listed responses that repeat an earlier payload")
		seed       = flag.Int64("seed", 1, "random seed; the output is a function of all flags")
		algo       = flag.String("H", "sha1", "digest `algorithm` of the expected manifest: md5, sha1, sha256, sha512")
		formats    = flag.String("formats", "warc.gz,warc,warc1.1.gz,warc1.1,arc.gz,arc", "comma list of file formats, used in turn: warc, warc.gz, warc1.1, warc1.1.gz, arc, arc.gz, arc2, arc2.gz (ARC v2) (or all: every format but ARC v2)")
		chunked    = flag.Float64("chunked", 0.05, "fraction of payloads stored with Transfer-Encoding: chunked framing")
		collisions = flag.String("collisions", "", "`DIR` of published collision pairs (shared/collisions) to include; empty disables")
		expect     = flag.String("expect", "", "write the expected 10-field manifest, sorted by digest, ext, date, file, offset, to `FILE`")
		nonCand    = flag.Bool("noncandidates", true, "also write records that must not be listed (warcinfo, requests, metadata, resource, 404, 301, 206, revisit, truncated)")
		quirks     = flag.Bool("quirks", false, "add legal oddities: URIs with a space, <...>-wrapped WARC-Target-URIs in WARC/1.0")
		arcQuirks  = flag.Bool("arcquirks", false, "in ARC files, what real ones have: a filedesc length one short, records followed by no line feed or two, dashes in v2 lines")
		sameURL    = flag.Float64("sameurl", 0.4, "fraction of duplicates that re-fetch the same URL")
		crossFile  = flag.Float64("crossfile", 0.5, "fraction of duplicates whose source is in another file")
		sequential = flag.Bool("sequential", false, "lay the files out one after another in time, a day apart, as monthly crawls (default: two at a time)")
		prefix     = flag.String("prefix", "gen", "file name prefix")
		variants   = flag.Float64("variants", 0, "fraction of duplicates served another way (status 203, another Content-Type, Content-Encoding: gzip)")
		pol        = flag.String("policy", "replay", "`policy` of the expected manifest: replay, payload or uri")
		waczN      = flag.Int("wacz", 0, "package the WARC files as `N` WACZ files (0: leave them as they are)")
		crawls     = flag.Int("crawls", 0, "group the WACZ files into `N` crawls, each with a crawl id (default: one crawl per WACZ)")
		waczIndex  = flag.String("wacz-index", "plain", "WACZ index `form`: plain (index.cdxj), zipnum (index.cdx.gz + index.idx) or mixed (every other WACZ ZipNum)")
		blockLines = flag.Int("wacz-block-lines", 256, "lines per ZipNum block")
		collJSON   = flag.String("collection-json", "", "also write a multi-WACZ JSON `FILE` (resources: name, path, hash, size, crawlId) beside the WACZ files")
		keepWARCs  = flag.Bool("wacz-keep-warcs", false, "with -wacz, keep the WARC files beside the WACZ files (the same bytes as plain files, for benchmarks)")
		mean       = sizeFlag(20 << 10)
		maxPayload sizeFlag
		huge       sizeFlag
	)
	flag.Var(&mean, "mean", "mean payload size in bytes (K, M, G suffixes accepted)")
	flag.Var(&maxPayload, "max", "largest payload in bytes; 0 means max(8M, 64*mean)")
	flag.Var(&huge, "huge", "add one response with a payload of this many `BYTES` (e.g. 2G); 0 for none")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: warcgen -o DIR [flags]\n\nWrites a synthetic WARC/ARC collection and its expected deduplication manifest.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	a, err := digest.ParseLabel(*algo)
	if err != nil {
		fail(err)
	}
	fs, err := gen.ParseFormats(*formats)
	if err != nil {
		fail(err)
	}
	policy, err := policy.Parse(*pol)
	if err != nil {
		fmt.Fprintln(os.Stderr, "warcgen:", err)
		os.Exit(2)
	}
	cfg := gen.Config{
		Policy:         policy,
		ReplayVariants: *variants,
		Files:          *files,
		Records:        *records,
		DupRate:        *dup,
		Seed:           *seed,
		Algorithm:      a,
		MeanPayload:    int(mean),
		MaxPayload:     int(maxPayload),
		Formats:        fs,
		Chunked:        *chunked,
		Collisions:     *collisions != "",
		CollisionDir:   *collisions,
		NonCandidates:  *nonCand,
		Huge:           int64(huge),
		SameURL:        negZero(*sameURL),
		CrossFile:      negZero(*crossFile),
		Sequential:     *sequential,
		Quirks:         *quirks,
		ARCQuirks:      *arcQuirks,
		Prefix:         *prefix,
	}
	res, err := gen.Write(*out, cfg)
	if err != nil {
		fail(err)
	}
	var coll *waczgen.Collection
	if *waczN > 0 {
		coll, err = waczgen.Write(*out, res, waczgen.Config{Packages: *waczN, Crawls: *crawls, Index: *waczIndex,
			LinesPerBlock: *blockLines, CollectionJSON: *collJSON, Prefix: *prefix, KeepWARCs: *keepWARCs})
		if err != nil {
			fail(err)
		}
	}
	if *expect != "" {
		f, err := os.Create(*expect)
		if err != nil {
			fail(err)
		}
		if err := res.WriteExpected(f); err != nil {
			f.Close()
			os.Remove(*expect)
			fail(err)
		}
		if err := f.Close(); err != nil {
			os.Remove(*expect)
			fail(err)
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
}

// negZero maps an explicit 0 to the library's "none" (a negative value),
// since the library reads 0 as "default".
func negZero(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "warcgen:", err)
	os.Exit(1)
}
