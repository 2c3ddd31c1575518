// Package redisindex carries committed crawls between a crawl index
// (package crawlindex) and the Redis dedup index of Browsertrix's crawler
// (1.12 and later), so that one institution keeps one index for crawl
// time and after: Export writes the index's crawls into Redis in the
// crawler's keys, as committed crawls a crawl run with --redisDedupeUrl
// deduplicates against; Import takes the crawler's committed crawls into
// the crawl index as originals a `warcdedup run --index` refers new
// duplicates to. docs/browsertrix-redis.md has the key forms and what
// each direction does.
package redisindex

import (
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"warcdedup/digest"
)

// The crawler's keys (src/util/constants.ts and state.ts of
// browsertrix-crawler).
const (
	keyAllCrawls   = "allcrawls"         // set: committed crawl ids
	keyUncommitted = "uncommittedcrawls" // set: crawls still running
	keyCanceled    = "canceledcrawls"    // set: committed, to be purged
	keyAllDupes    = "alldupes"          // hash: digest -> crawl id
	keyAllCounts   = "allcounts"         // hash: sums of the crawls' counts
	keySourceDone  = "src:d"             // set: WACZ names already indexed
)

func hashesKey(crawl string) string { return "h:" + crawl }
func countsKey(crawl string) string { return "h:" + crawl + ":counts" }
func waczKey(crawl string) string   { return "c:" + crawl + ":wacz" }

// This package's own keys, beside the crawler's: none of them is read by
// the crawler.
const (
	// keyExported maps each crawl an export wrote to its Owner record.
	keyExported = "warcdedup:exported"
	// keyLock is held by one export at a time.
	keyLock = "warcdedup:lock"
	// keySeq numbers staged and retired key sets.
	keySeq = "warcdedup:seq"
	// stagePrefix names the keys of a crawl being written:
	// warcdedup:stage:N:{h,wacz,counts}:CRAWL. They become the crawl's
	// keys by RENAME in the transaction that commits it.
	stagePrefix = "warcdedup:stage:"
	// retiredPrefix names a crawl's digests after it left (or was
	// replaced), while the alldupes entries that pointed at it are
	// re-pointed: warcdedup:retired:N:CRAWL.
	retiredPrefix = "warcdedup:retired:"
)

// Entry is the value of a digest in h:CRAWL: "WACZINDEX DATE URL SIZE".
type Entry struct {
	WACZ int    // index of the WACZ in c:CRAWL:wacz holding the record
	Date string // the record's WARC-Date, digits only (14, or 17 with milliseconds)
	URL  string // its target URI, without blanks
	Size int64  // its length in the WARC file, as stored
}

// String is the entry as the crawler writes it.
func (e Entry) String() string {
	return strconv.Itoa(e.WACZ) + " " + e.Date + " " + e.URL + " " + strconv.FormatInt(e.Size, 10)
}

// ParseEntry reads an entry, strictly: the crawler splits it on blanks and
// takes the four parts by position.
func ParseEntry(s string) (Entry, error) {
	f := strings.Split(s, " ")
	if len(f) != 4 {
		return Entry{}, fmt.Errorf("%q is not \"WACZINDEX DATE URL SIZE\"", s)
	}
	var e Entry
	var err error
	if e.WACZ, err = strconv.Atoi(f[0]); err != nil || e.WACZ < 0 {
		return Entry{}, fmt.Errorf("%q: WACZ index %q is not a number", s, f[0])
	}
	if _, err := DateOfDigits(f[1]); err != nil {
		return Entry{}, fmt.Errorf("%q: %v", s, err)
	}
	e.Date, e.URL = f[1], f[2]
	if e.URL == "" {
		return Entry{}, fmt.Errorf("%q has no URL", s)
	}
	if e.Size, err = strconv.ParseInt(f[3], 10, 64); err != nil || e.Size < 0 {
		return Entry{}, fmt.Errorf("%q: size %q is not a number", s, f[3])
	}
	return e, nil
}

// DateDigits is a WARC-Date as the crawler keeps it: its digits, UTC, to
// the second (14 digits) or, when the date has a fraction, to the
// millisecond (17), as the crawler writes its own records' dates.
func DateDigits(warcDate string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, warcDate)
	if err != nil {
		return "", fmt.Errorf("WARC-Date %q is not a date", warcDate)
	}
	t = t.UTC()
	if t.Year() < 1000 || t.Year() > 9999 {
		return "", fmt.Errorf("WARC-Date %q is out of range", warcDate)
	}
	if strings.Contains(warcDate, ".") {
		return t.Format("20060102150405.000")[:14] + t.Format(".000")[1:], nil
	}
	return t.Format("20060102150405"), nil
}

// DateOfDigits reads the date of an entry or a CDXJ timestamp: 14 digits,
// or more for a fraction of a second.
func DateOfDigits(ts string) (time.Time, error) {
	if len(ts) < 14 || len(ts) > 23 || strings.Trim(ts, "0123456789") != "" {
		return time.Time{}, fmt.Errorf("date %q is not 14 or more digits", ts)
	}
	t, err := time.Parse("20060102150405", ts[:14])
	if err != nil {
		return time.Time{}, fmt.Errorf("date %q: %v", ts, err)
	}
	if frac := ts[14:]; frac != "" {
		ns, _ := strconv.Atoi((frac + "000000000")[:9])
		t = t.Add(time.Duration(ns))
	}
	return t, nil
}

// WARCDate is a WARC-Date for digits: to the second, or with the fraction
// they have.
func WARCDate(ts string) (string, error) {
	t, err := DateOfDigits(ts)
	if err != nil {
		return "", err
	}
	if len(ts) == 14 {
		return t.Format("2006-01-02T15:04:05Z"), nil
	}
	return t.Format("2006-01-02T15:04:05.") + ts[14:] + "Z", nil
}

// DigestKey is the field of a manifest digest in h:CRAWL and alldupes:
// its value without the label, as the crawler strips it (a SHA-256 in
// lower-case hex, a SHA-1 in base32).
func DigestKey(manifestDigest string) (string, error) {
	a, _, err := digest.Parse(manifestDigest)
	if err != nil {
		return "", err
	}
	if a != digest.SHA256 && a != digest.SHA1 {
		return "", fmt.Errorf("digest %s: Browsertrix keys on SHA-256 (or SHA-1 with --useSHA1), not %s", manifestDigest, a)
	}
	_, v, _ := strings.Cut(manifestDigest, ":")
	return v, nil
}

// ErrKeyAlgorithm is a digest field that is neither a SHA-256 nor a SHA-1.
var ErrKeyAlgorithm = errors.New("neither a SHA-256 (64 hex digits) nor a SHA-1 (32 upper-case base32 or 40 hex digits)")

// DigestOfKey is the manifest digest of a field of h:CRAWL or alldupes:
// 64 hex digits are a SHA-256, 32 base32 or 40 hex digits a SHA-1. The
// crawler writes the value of the record's WARC-Payload-Digest as it is,
// so both cases are read.
func DigestOfKey(key string) (string, digest.Algorithm, error) {
	switch len(key) {
	case 64:
		sum, err := hex.DecodeString(key)
		if err == nil {
			return digest.SHA256.Format(sum), digest.SHA256, nil
		}
	case 40:
		sum, err := hex.DecodeString(key)
		if err == nil {
			return digest.SHA1.Format(sum), digest.SHA1, nil
		}
	case 32:
		// Upper case, as writers spell base32: the field is matched
		// byte for byte.
		sum, err := base32.StdEncoding.DecodeString(key)
		if err == nil && len(sum) == 20 {
			return digest.SHA1.Format(sum), digest.SHA1, nil
		}
	}
	return "", 0, fmt.Errorf("digest %q: %w", key, ErrKeyAlgorithm)
}

// WACZFile is an element of c:CRAWL:wacz: a WACZ of the crawl, as the
// crawler lists it once written (its hash in hex, without a label).
type WACZFile struct {
	Filename string `json:"filename"`
	Hash     string `json:"hash,omitempty"`
	Size     int64  `json:"size,omitempty"`
}

func (w WACZFile) String() string {
	b, _ := json.Marshal(w)
	return string(b)
}

// ParseWACZFile reads an element of c:CRAWL:wacz. The crawler lists a
// WACZ it is still writing as {filename} alone; the indexer writes the
// hash its source JSON gave, in any form: "sha256:" is taken off.
func ParseWACZFile(s string) (WACZFile, error) {
	var w WACZFile
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return w, fmt.Errorf("%.100q is not a WACZ entry {filename, hash, size}: %v", s, err)
	}
	if w.Filename == "" {
		return w, fmt.Errorf("%.100q names no file", s)
	}
	w.Hash = strings.ToLower(strings.TrimPrefix(w.Hash, "sha256:"))
	return w, nil
}

// The fields of h:CRAWL:counts that the crawler writes and sums into
// allcounts when it commits a crawl.
const (
	countTotalURLs  = "totalUrls"      // response and revisit records
	countDupeURLs   = "dupeUrls"       // revisit records
	countConserved  = "conservedSize"  // bytes saved by its revisits
	countCrawlSize  = "totalCrawlSize" // bytes of its WACZ files
	countsFieldsLen = 4
)

// Counts are a crawl's figures in h:CRAWL:counts.
type Counts struct {
	TotalURLs, DupeURLs, Conserved, CrawlSize int64
}

// fields are the non-zero counts as HSET/HINCRBY arguments: the crawler
// creates a field with its first increment.
func (c Counts) fields(sign int64) []string {
	var out []string
	for _, f := range []struct {
		name string
		v    int64
	}{{countTotalURLs, c.TotalURLs}, {countDupeURLs, c.DupeURLs}, {countConserved, c.Conserved}, {countCrawlSize, c.CrawlSize}} {
		if f.v != 0 {
			out = append(out, f.name, strconv.FormatInt(sign*f.v, 10))
		}
	}
	return out
}

// parseCounts reads HGETALL of h:CRAWL:counts; other fields are ignored.
func parseCounts(kv []string) (Counts, error) {
	var c Counts
	for i := 0; i+1 < len(kv); i += 2 {
		var dst *int64
		switch kv[i] {
		case countTotalURLs:
			dst = &c.TotalURLs
		case countDupeURLs:
			dst = &c.DupeURLs
		case countConserved:
			dst = &c.Conserved
		case countCrawlSize:
			dst = &c.CrawlSize
		default:
			continue
		}
		n, err := strconv.ParseInt(kv[i+1], 10, 64)
		if err != nil {
			return c, fmt.Errorf("count %s is %q, not a number", kv[i], kv[i+1])
		}
		*dst = n
	}
	return c, nil
}

// Owner is what keyExported holds for a crawl an export wrote: which
// index it came from and what it was, so that a later export knows the
// crawl is its own (to update or remove) and whether it changed.
type Owner struct {
	Index       string    `json:"index"`       // the crawl index's directory
	Fingerprint string    `json:"fingerprint"` // of its files and originals when written
	Exported    time.Time `json:"exported"`
	Counts      Counts    `json:"counts"` // as added to allcounts
	Files       []string  `json:"files"`  // the WACZ names added to src:d
}

func parseOwner(s string) (Owner, error) {
	var o Owner
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return o, fmt.Errorf("%s holds %.100q: %v", keyExported, s, err)
	}
	return o, nil
}
