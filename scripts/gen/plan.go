package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// itemType is the kind of record an item of a file plan becomes.
type itemType uint8

const (
	itResponse  itemType = iota // a listed 2xx response (ARC: an HTTP record)
	it404                       // a 404 response
	it301                       // a 301 response
	it206                       // a 206 response (WARC only)
	itTruncated                 // a 200 response with WARC-Truncated: length (WARC only)
	itRevisit                   // a revisit of the file's first listed response (WARC only)
	itMetadata                  // a metadata record about the response before it (WARC only)
	itResource                  // a dns: lookup: a WARC resource record, an ARC dns: record
)

// item is one record of a file plan (request records are implied by the
// responses they precede).
type item struct {
	typ     itemType
	wrap    bool    // Quirks: WARC-Target-URI written as <uri>
	variant variant // how a listed response's HTTP head differs from the usual
	host    int32
	pay     int32 // index into plan.payloads, -1 for none
	date    int64 // Unix seconds
	path    string
}

type filePlan struct {
	name   string
	format Format
	start  int64 // date of the warcinfo / filedesc record
	items  []item
}

type hostInfo struct {
	base   string // scheme://name
	name   string
	ip     string
	server string
}

type plan struct {
	cfg      Config
	hosts    []hostInfo
	payloads []Payload
	files    []filePlan
	pairs    []Pair
}

func (p *plan) uri(it *item) string { return p.hosts[it.host].base + it.path }

// t0 is the date of the first capture: 2024-06-01T00:00:00Z.
const t0 = 1717200000

// slot is a listed response while planning.
type slot struct {
	file    int32
	host    int32
	pay     int32
	dup     bool
	variant variant
	date    int64
	path    string
}

// variant is a way a listed response serves its payload that a replay
// tool taking headers from another record would not reproduce.
type variant uint8

const (
	plain          variant = iota
	nonAuthorative         // status 203 instead of 200
	otherType              // Content-Type application/octet-stream
	encoded                // Content-Encoding: gzip (the bytes as stored stay the same)
	numVariants
)

type planner struct {
	*plan
	rng   *rand.Rand
	scale float64
	urlN  int
}

// The payload size mix at MeanPayload == baseMean; sizes scale linearly.
const (
	pHTML   = 0.628 // uniform 1-30 KiB
	pText   = 0.100 // uniform 0.5-20 KiB
	pBinary = 0.270 // 1 KiB + exponential, mean 40 KiB
	pLarge  = 0.002 // uniform 1-6 MiB, random bytes
)

var baseMean = pHTML*(1+30)/2*1024 + pText*(0.5+20)/2*1024 + pBinary*41*1024 + pLarge*(1+6)/2*(1<<20)

func makePlan(cfg Config, pairs []pairData) *plan {
	pl := &planner{
		plan:  &plan{cfg: cfg},
		rng:   rand.New(rand.NewPCG(uint64(cfg.Seed), 0x77617263676e)),
		scale: float64(cfg.MeanPayload) / baseMean,
	}
	pl.makeHosts()
	slots := pl.makeSlots()
	pl.fillNew(slots)
	pl.addPairs(slots, pairs)
	pl.fillDups(slots)
	slots = pl.addHuge(slots)
	pl.makeFiles(slots)
	return pl.plan
}

var (
	hostNames = []string{"www.example.com", "example.org", "news.example.net", "cdn.example.com", "blog.example.org",
		"shop.example.com", "www.example.edu", "media.example.net", "docs.example.org", "forum.example.com",
		"static.example.org", "www.example.gov", "images.example.net", "wiki.example.org", "api.example.com",
		"mirror.example.edu", "archive.example.net", "www.example.co.uk", "portal.example.de", "assets.example.fr"}
	servers  = []string{"Apache/2.4.41 (Ubuntu)", "nginx/1.18.0", "nginx", "Microsoft-IIS/10.0", "cloudflare", "Apache", "gws", "LiteSpeed"}
	sections = []string{"news", "blog", "article", "products", "docs", "about", "2024", "wiki", "en", "category"}
)

func (pl *planner) makeHosts() {
	for i, n := range hostNames {
		scheme := "http://"
		if pl.rng.IntN(10) < 7 {
			scheme = "https://"
		}
		pl.hosts = append(pl.hosts, hostInfo{
			base:   scheme + n,
			name:   n,
			ip:     fmt.Sprintf("93.184.%d.%d", 200+i/8, 10+pl.rng.IntN(240)),
			server: servers[pl.rng.IntN(len(servers))],
		})
	}
}

// makeSlots lays out the listed responses over the files with their dates,
// and chooses exactly round(DupRate*Records) of them to be duplicates.
// As with a crawler's parallel writer threads, files are written two at a
// time (files 2k and 2k+1 cover about the same hours, so references go both
// ways between them), each pair overlaps the next by a quarter, and one
// capture in twenty is written up to two minutes out of date order.
func (pl *planner) makeSlots() []slot {
	n, f := pl.cfg.Records, pl.cfg.Files
	slots := make([]slot, 0, n)
	per := max(n/f, 1)
	next := int64(t0) // with Sequential: the earliest start of the next file
	for i := range f {
		start := t0 + int64(i/2)*int64(per)*3/2 + pl.rng.Int64N(int64(per)/4+1)
		if pl.cfg.Sequential {
			// A day after the last capture of the file before, which
			// may be written up to two minutes out of order.
			start = next + 120
		}
		pl.files = append(pl.files, filePlan{
			name:   fmt.Sprintf("%s-%05d%s", pl.cfg.Prefix, i, pl.cfg.Formats[i%len(pl.cfg.Formats)].Ext()),
			format: pl.cfg.Formats[i%len(pl.cfg.Formats)],
			start:  start,
		})
		k := n / f
		if i < n%f {
			k++
		}
		t := start
		for range k {
			t += pl.rng.Int64N(5)
			d := t
			if pl.rng.IntN(20) == 0 {
				d -= pl.rng.Int64N(120)
			}
			slots = append(slots, slot{file: int32(i), date: d, pay: -1})
		}
		next = t + 86400
	}
	need := min(int(math.Round(pl.cfg.DupRate*float64(n))), n-1)
	for i := range slots {
		if pl.rng.IntN(n-i) < need {
			slots[i].dup = true
			need--
		}
	}
	return slots
}

func (pl *planner) size(lo, hi float64) int64 {
	s := int64((lo + pl.rng.Float64()*(hi-lo)) * pl.scale)
	return min(max(s, 0), int64(pl.cfg.MaxPayload))
}

// newPayload draws a payload from the size mix.
func (pl *planner) newPayload() Payload {
	p := Payload{Seed: pl.rng.Uint64()}
	x := pl.rng.Float64()
	switch {
	case x < pHTML:
		p.Kind, p.Size = KindHTML, max(pl.size(1024, 30*1024), min(128, int64(pl.cfg.MaxPayload)))
	case x < pHTML+pText:
		p.Kind, p.Size = KindText, max(pl.size(512, 20*1024), min(64, int64(pl.cfg.MaxPayload)))
	case x < pHTML+pText+pBinary:
		e := 1024 + pl.rng.ExpFloat64()*40*1024
		p.Kind, p.Size = KindBinary, max(pl.size(e, e), min(16, int64(pl.cfg.MaxPayload)))
	default:
		p.Kind, p.Size = KindBinary, pl.size(1<<20, 6<<20)
	}
	p.Chunked = pl.rng.Float64() < pl.cfg.Chunked
	return p
}

func (pl *planner) addPayload(p Payload) int32 {
	pl.payloads = append(pl.payloads, p)
	return int32(len(pl.payloads) - 1)
}

// newPath returns a fresh path for a payload.
func (pl *planner) newPath(p Payload) string {
	pl.urlN++
	n := strconv.Itoa(pl.urlN)
	if pl.cfg.Quirks && pl.rng.IntN(100) == 0 {
		return "/search results/page " + n + ".html"
	}
	switch p.Kind {
	case KindEmpty:
		return "/api/ping?id=" + n
	case KindText:
		if p.ContentType() == "text/css" {
			return "/static/css/style-" + n + ".css"
		}
		return "/static/js/app-" + n + ".js"
	case KindBinary:
		if p.Size >= 1<<20 {
			return "/media/file-" + n + ".bin"
		}
		if p.ContentType() == "image/jpeg" {
			return "/img/photo-" + n + ".jpg"
		}
		return "/img/icon-" + n + ".png"
	case KindCollision:
		return "/files/blob-" + n + ".bin"
	}
	if pl.rng.IntN(8) == 0 {
		return "/index.php?p=" + n
	}
	return "/" + sections[pl.rng.IntN(len(sections))] + "/" + string(vocab[pl.rng.IntN(len(vocab))]) + "-" + n + ".html"
}

// fillNew gives every new slot a payload of its own. One of the first 200
// gets the empty payload (all empty bodies are one byte string, so there is
// one and its repeats are duplicates); one in twenty reuses the URL of an
// earlier slot with a payload of the same kind, as a page that changed
// between captures.
func (pl *planner) fillNew(slots []slot) {
	var news []int
	for i := range slots {
		if !slots[i].dup {
			news = append(news, i)
		}
	}
	empty := -1
	if len(news) > 0 {
		empty = pl.rng.IntN(min(len(news), 200))
	}
	for k, i := range news {
		s := &slots[i]
		var p Payload
		if k == empty {
			p = Payload{Kind: KindEmpty, Seed: pl.rng.Uint64()}
		} else {
			p = pl.newPayload()
		}
		s.pay = pl.addPayload(p)
		s.host, s.path = int32(pl.rng.IntN(len(pl.hosts))), ""
		if k > 0 && pl.rng.IntN(20) == 0 {
			if o := &slots[news[pl.rng.IntN(k)]]; pl.payloads[o.pay].Kind == p.Kind && p.Kind != KindEmpty {
				s.host, s.path = o.host, o.path
			}
		}
		if s.path == "" {
			s.path = pl.newPath(p)
		}
	}
}

// addPairs turns two random new slots per collision pair into its members
// (same suffix seed and size, so the collision survives) and, when there
// are duplicate slots to spare, one duplicate slot per member into a repeat.
func (pl *planner) addPairs(slots []slot, pairs []pairData) {
	var news, dups []int
	for i := range slots {
		if slots[i].dup {
			dups = append(dups, i)
		} else {
			news = append(news, i)
		}
	}
	pl.rng.Shuffle(len(news), func(i, j int) { news[i], news[j] = news[j], news[i] })
	pl.rng.Shuffle(len(dups), func(i, j int) { dups[i], dups[j] = dups[j], dups[i] })
	for _, pd := range pairs {
		if len(news) < 2 {
			break
		}
		size := int64(len(pd.a))
		if pd.suffix {
			size += pl.size(0, 30*1024)
		}
		seed := pl.rng.Uint64()
		pair := Pair{Name: pd.name, Algorithm: pd.algo}
		for m, prefix := range [2][]byte{pd.a, pd.b} {
			p := Payload{Kind: KindCollision, Seed: seed, Size: size, Prefix: string(prefix)}
			pair.Payloads[m] = p
			s := &slots[news[0]]
			news = news[1:]
			s.pay = pl.addPayload(p)
			s.host, s.path = int32(pl.rng.IntN(len(pl.hosts))), pl.newPath(p)
			if len(dups) > 0 {
				d := &slots[dups[0]]
				dups = dups[1:]
				pl.repeat(d, s)
			}
		}
		pl.pairs = append(pl.pairs, pair)
	}
}

// repeat makes duplicate slot d repeat the payload of slot s, at s's URL
// (a re-fetch, never at the same date) or at another one.
func (pl *planner) repeat(d, s *slot) {
	d.pay = s.pay
	if pl.cfg.ReplayVariants > 0 && pl.rng.Float64() < pl.cfg.ReplayVariants {
		d.variant = variant(1 + pl.rng.IntN(int(numVariants)-1))
	}
	if pl.rng.Float64() < pl.cfg.SameURL {
		d.host, d.path = s.host, s.path
		if d.date == s.date {
			d.date++
		}
		return
	}
	p := pl.payloads[s.pay]
	switch pl.rng.IntN(3) {
	case 0: // the same path on a mirror
		d.host, d.path = int32(pl.rng.IntN(len(pl.hosts))), s.path
		if d.host == s.host {
			d.host = (d.host + 1) % int32(len(pl.hosts))
		}
	case 1: // a tracking parameter
		pl.urlN++
		sep := "?"
		if slices.Contains([]byte(s.path), '?') {
			sep = "&"
		}
		d.host, d.path = s.host, s.path+sep+"utm_source=feed&n="+strconv.Itoa(pl.urlN)
	default: // an unrelated URL
		d.host, d.path = int32(pl.rng.IntN(len(pl.hosts))), pl.newPath(p)
	}
}

// fillDups makes each remaining duplicate slot repeat a slot of another
// file (with probability CrossFile, earlier or later in file order) or of
// its own. Sources are drawn among slots already holding a payload,
// duplicates included, so popular payloads gather more copies.
func (pl *planner) fillDups(slots []slot) {
	all := []int{}
	perFile := make([][]int, len(pl.files))
	for i := range slots {
		if slots[i].pay >= 0 {
			all = append(all, i)
			perFile[slots[i].file] = append(perFile[slots[i].file], i)
		}
	}
	for i := range slots {
		d := &slots[i]
		if d.pay >= 0 {
			continue
		}
		src := -1
		if len(pl.files) > 1 && pl.rng.Float64() < pl.cfg.CrossFile {
			for range 8 {
				if c := all[pl.rng.IntN(len(all))]; slots[c].file != d.file {
					src = c
					break
				}
			}
		}
		if own := perFile[d.file]; src < 0 && len(own) > 0 {
			src = own[pl.rng.IntN(len(own))]
		}
		if src < 0 {
			src = all[pl.rng.IntN(len(all))]
		}
		pl.repeat(d, &slots[src])
		all = append(all, i)
		perFile[d.file] = append(perFile[d.file], i)
	}
}

// addHuge adds the Huge payload's response in the middle of the middle file.
func (pl *planner) addHuge(slots []slot) []slot {
	if pl.cfg.Huge <= 0 {
		return slots
	}
	f := int32(len(pl.files) / 2)
	lo := slices.IndexFunc(slots, func(s slot) bool { return s.file == f })
	hi := slices.IndexFunc(slots, func(s slot) bool { return s.file > f })
	if lo < 0 {
		lo = len(slots)
	}
	if hi < 0 {
		hi = len(slots)
	}
	at := (lo + hi) / 2
	date := pl.files[f].start
	if at > lo {
		date = slots[at-1].date
	}
	p := Payload{Kind: KindBinary, Seed: pl.rng.Uint64(), Size: pl.cfg.Huge}
	s := slot{file: f, date: date, pay: pl.addPayload(p), host: int32(pl.rng.IntN(len(pl.hosts)))}
	pl.urlN++
	s.path = "/downloads/huge-" + strconv.Itoa(pl.urlN) + ".bin"
	return slices.Insert(slots, at, s)
}

// extra is a non-candidate item to insert before listed item pos of a file.
type extra struct {
	pos int
	it  item
}

// makeFiles turns the slots into each file's items and adds the
// non-candidate records.
func (pl *planner) makeFiles(slots []slot) {
	for f := range pl.files {
		fp := &pl.files[f]
		var listed []item
		for _, s := range slots {
			if s.file == int32(f) {
				listed = append(listed, item{typ: itResponse, host: s.host, pay: s.pay, date: s.date, path: s.path, variant: s.variant})
			}
		}
		warc := !fp.format.IsARC()
		if pl.cfg.Quirks && fp.format.version() == "1.0" && warc {
			for i := range listed {
				listed[i].wrap = pl.rng.IntN(100) == 0
			}
		}
		var extras []extra
		if pl.cfg.NonCandidates {
			extras = pl.extras(fp, listed)
		}
		slices.SortStableFunc(extras, func(a, b extra) int { return a.pos - b.pos })
		fp.items = make([]item, 0, len(listed)+len(extras))
		for k := 0; k <= len(listed); k++ {
			for len(extras) > 0 && extras[0].pos == k {
				fp.items = append(fp.items, extras[0].it)
				extras = extras[1:]
			}
			if k < len(listed) {
				fp.items = append(fp.items, listed[k])
			}
		}
	}
}

// extras plans a file's non-candidate records.
func (pl *planner) extras(fp *filePlan, listed []item) []extra {
	n := len(listed)
	warc := !fp.format.IsARC()
	var out []extra
	add := func(minPos int, it item) {
		if minPos > n {
			return
		}
		pos := minPos + pl.rng.IntN(n-minPos+1)
		it.date = fp.start
		if pos > 0 {
			it.date = listed[pos-1].date
		}
		if it.typ == itRevisit {
			it.date = max(it.date, listed[0].date+1)
		}
		out = append(out, extra{pos, it})
	}
	randHost := func() int32 { return int32(pl.rng.IntN(len(pl.hosts))) }
	// listedPay is the payload of a random listed response of the file.
	listedPay := func() int32 { return listed[pl.rng.IntN(n)].pay }
	fresh := func(lo, hi int64) int32 {
		return pl.addPayload(Payload{Kind: KindHTML, Seed: pl.rng.Uint64(), Size: lo + pl.rng.Int64N(hi-lo)})
	}
	for range 1 + n/100 {
		pay := fresh(300, 2000)
		if n > 0 && pl.rng.IntN(2) == 0 {
			pay = listedPay() // a 404 page with the body of a 200 page: never a revisit of it
		}
		pl.urlN++
		add(0, item{typ: it404, host: randHost(), pay: pay, path: "/missing/page-" + strconv.Itoa(pl.urlN) + ".html"})
	}
	for range 1 + n/100 {
		pl.urlN++
		add(0, item{typ: it301, host: randHost(), pay: fresh(150, 400), path: "/old/" + strconv.Itoa(pl.urlN) + "/"})
	}
	for range 1 + n/200 {
		add(0, item{typ: itResource, host: randHost(), pay: -1})
	}
	if !warc {
		return out
	}
	for range 1 + n/100 {
		add(1, item{typ: itMetadata, pay: -1})
	}
	if n == 0 {
		return out
	}
	src := listed[pl.rng.IntN(n)]
	pay := src.pay
	if pl.payloads[pay].Size == 0 {
		pay = pl.addPayload(Payload{Kind: KindBinary, Seed: pl.rng.Uint64(), Size: 4096})
	}
	add(0, item{typ: it206, host: src.host, pay: pay, path: src.path})
	pl.urlN++
	add(0, item{typ: itTruncated, host: randHost(), pay: listedPay(), path: "/big/download-" + strconv.Itoa(pl.urlN) + ".html"})
	add(1, item{typ: itRevisit, host: listed[0].host, pay: listed[0].pay, path: listed[0].path})
	return out
}
