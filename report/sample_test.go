package report

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// sampleReport is an assessment of a large collection as warcdedup
// assess --sample would write it: every breakdown long (more MIME types
// and hosts than the page shows, three years of months), an estimate,
// caveats, stages, crawls, and an exit status of 1. Its figures are made
// up but consistent: buckets add up to about the totals.
func sampleReport() *Report {
	rng := rand.New(rand.NewPCG(7, 9))
	const (
		GB = int64(1e9)
		TB = int64(1e12)
	)
	r := &Report{
		Title:     "Deduplication assessment: national web archive, domain crawls 2021–2023",
		Generated: time.Date(2026, 11, 22, 20, 33, 0, 0, time.UTC),
		Mode:      "sample",
		Collections: []string{
			"/archive/collections/domain-crawl-2021/warcs",
			"/archive/collections/domain-crawl-2022/warcs",
			"/archive/collections/domain-crawl-2023/warcs",
		},
		Policy:    "replay",
		Algorithm: "sha1",
		Caveats: []string{
			"Estimated from a sample of 120 of 1,482 files: the breakdowns count the sample only.",
			"412 files are ARC files; they are counted but cannot be deduplicated until converted to WARC.",
		},
		Totals: Totals{
			Files: 1482, StoredBytes: 14*TB + 213*GB,
			Records: 311_402_118, RecordBytes: 12*TB + 877*GB,
			Revisits: 18_220_417, Duplicates: 6_912_044, DuplicateBytes: 410 * GB,
			RevisitsWritten: 6_650_912, BytesSaved: 392 * GB,
			StaleLines: 3, DamagedRecords: 17,
		},
		Estimate: &Estimate{
			Method:       "Files drawn at random, weighted by size; duplicates found within the sample and against the index of earlier crawls; the range is a bootstrap interval over files.",
			SampledFiles: 120, SampledBytes: 1*TB + 150*GB,
			BytesSaved: 3*TB + 610*GB, BytesSavedLow: 3*TB + 120*GB, BytesSavedHigh: 4*TB + 95*GB,
			Confidence: 0.95,
			Duplicates: 71_600_000, DuplicatesLow: 63_900_000, DuplicatesHigh: 79_800_000,
		},
		Exit: 1,
		ExitReason: []string{
			"17 damaged records in 2 files (listed in damaged.txt); they were left out of the sample.",
			"3 stale lines in the CDX index domain-crawl-2022.cdxj: the files they name have changed.",
		},
	}
	bucket := func(label string, bytes int64, dupShare float64) Bucket {
		records := max(bytes/(20_000+rng.Int64N(400_000)), 1)
		dupBytes := int64(float64(bytes) * dupShare)
		return Bucket{Label: label, Records: records, Bytes: bytes,
			Duplicates: int64(float64(records) * dupShare * 1.1), DuplicateBytes: dupBytes,
			BytesSaved: dupBytes - dupBytes/(25+rng.Int64N(40))}
	}
	mimes := []string{"text/html", "image/jpeg", "application/pdf", "image/png", "video/mp4",
		"application/javascript", "text/css", "image/gif", "application/json", "font/woff2",
		"image/svg+xml", "application/zip", "text/plain", "image/webp", "audio/mpeg",
		"application/xml", "application/octet-stream", "image/x-icon", "text/csv",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document",
		"application/x-shockwave-flash"}
	for i, m := range mimes {
		r.ByMIME = append(r.ByMIME, bucket(m, int64(float64(180*GB)/float64(i+1)*(0.5+rng.Float64())), 0.05+0.4*rng.Float64()))
	}
	r.ByMIME = append(r.ByMIME, bucket(Other, 2*GB, 0.1))
	for i := range 40 {
		host := fmt.Sprintf("www.%s.example.org", []string{"library", "museum", "parliament", "news", "university", "city", "ministry", "archive"}[i%8])
		if i >= 8 {
			host = fmt.Sprintf("site-%02d.regional-%s.example.net", i, []string{"council", "press", "schools", "health"}[i%4])
		}
		if i == 5 {
			host = "very-long-subdomain-for-media-assets.cdn.national-broadcaster.example.co.uk"
		}
		r.ByHost = append(r.ByHost, bucket(host, int64(float64(90*GB)/float64(i+1)*(0.6+rng.Float64())), 0.05+0.5*rng.Float64()))
	}
	for y := 2021; y <= 2023; y++ {
		for m := 1; m <= 12; m++ {
			// Domain crawls run in spring and autumn.
			size := 8 * GB
			if m == 4 || m == 5 || m == 10 {
				size = 60 * GB
			}
			r.ByMonth = append(r.ByMonth, bucket(fmt.Sprintf("%d-%02d", y, m), size+rng.Int64N(6*GB), 0.1+0.3*rng.Float64()))
		}
	}
	r.ByMonth = append(r.ByMonth, bucket("(unknown)", 30*1e6, 0.2))
	// The size classes as warcdedup labels them.
	for i, s := range []string{"< 1 kB", "1-10 kB", "10-100 kB", "100 kB-1 MB", "1-10 MB", "10-100 MB", ">= 100 MB"} {
		r.BySize = append(r.BySize, bucket(s, int64(float64(40*GB)*(1+float64(i%5))*(0.5+rng.Float64())), 0.1+0.4*rng.Float64()))
	}
	r.SameURL = Bucket{Label: "same URL", Records: 5_100_000, Bytes: 300 * GB, Duplicates: 5_100_000, DuplicateBytes: 290 * GB, BytesSaved: 281 * GB}
	r.CrossURL = Bucket{Label: "cross URL", Records: 1_812_044, Bytes: 120 * GB, Duplicates: 1_812_044, DuplicateBytes: 120 * GB, BytesSaved: 111 * GB}
	const base32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	for i := range 40 {
		copies := int64(4000/(i+1)) + 2
		size := int64(50_000 + rng.Int64N(20_000_000))
		digest := make([]byte, 32)
		for j := range digest {
			digest[j] = base32[rng.IntN(32)]
		}
		r.LargestClasses = append(r.LargestClasses, Class{
			Digest:         "sha1:" + string(digest),
			Ext:            map[bool]int{true: 1}[i == 7],
			Copies:         copies,
			Bytes:          copies * size,
			DuplicateBytes: (copies - 1) * size,
			MIME:           mimes[i%len(mimes)],
			URI:            fmt.Sprintf("https://www.%s.example.org/assets/%d/downloads/annual-report-%d-final-version-with-appendices.pdf?session=%x&lang=en", []string{"library", "museum", "city"}[i%3], i, 2000+i, rng.Uint32()),
			Date:           fmt.Sprintf("2021%02d%02d%02d%02d%02d", 1+i%12, 1+i%28, rng.IntN(24), rng.IntN(60), rng.IntN(60)),
		})
	}
	slices.SortStableFunc(r.LargestClasses, func(a, b Class) int { return cmp.Compare(b.DuplicateBytes, a.DuplicateBytes) })
	r.NotDeduplicable = []Reason{
		{Why: "In an ARC file (convert it to WARC first: arc2warc)", Records: 41_220_118, Bytes: 2*TB + 310*GB},
		{Why: "In a file gzipped whole, not per record (recompress it first: warcrecompress)", Records: 1_204_551, Bytes: 88 * GB},
		{Why: "A revisit would not be smaller than the record", Records: 9_830_223, Bytes: 4 * GB},
		{Why: "Truncated record (WARC-Truncated)", Records: 1_022, Bytes: 310 * GB / 1000},
	}
	r.Stages = []Stage{
		{Name: "list files", Took: 41 * time.Second},
		{Name: "sample", Took: 2 * time.Second, Note: "120 files, 1.2 TB"},
		{Name: "digest payloads", Took: 3*time.Hour + 12*time.Minute + 9*time.Second},
		{Name: "classes", Took: 14*time.Minute + 3*time.Second, Skipped: true},
		{Name: "match against the index", Took: 27*time.Minute + 51*time.Second, Note: "3 crawls"},
		{Name: "estimate", Took: 1500 * time.Millisecond},
		{Name: "write report", Took: 300 * time.Millisecond},
	}
	r.Crawls = []Crawl{
		{Name: "domain-crawl-2021", Committed: true, Records: 98_000_000, RevisitsWritten: 1_200_000, BytesConserved: 310 * GB, Size: 4*TB + 100*GB},
		{Name: "domain-crawl-2022", Committed: true, Records: 104_000_000, RevisitsWritten: 2_300_000, BytesConserved: 520 * GB, Size: 4*TB + 700*GB, Requires: []string{"domain-crawl-2021"}},
		{Name: "domain-crawl-2023", Committed: false, Records: 109_402_118, Size: 5*TB + 400*GB, Requires: []string{"domain-crawl-2021", "domain-crawl-2022"}},
	}
	return r
}
