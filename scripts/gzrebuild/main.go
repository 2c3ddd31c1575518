// Command gzrebuild measures how many gzip members of real WARC and ARC
// files gzmember rebuilds bit for bit from their inflated bytes, with which
// zlib setting, and at what cost: the figures behind bit-exact undo.
//
// Every member of every file whose name holds ".warc.gz" or ".arc.gz"
// under the paths given is read as the rewrite reads a record (through a
// Describer's Tee over a section that goes past the member, by gzmulti),
// described, and rebuilt: once from a fresh Rebuilder (the first setting
// of gzmember.DefaultOrder that makes it), and once, timed, by one
// Rebuilder per file as undo would use it (learning the file's setting,
// narrowing after Patience misses). With -extended, the members no
// default setting makes are tried with other zlib settings too (every
// memLevel, windowBits 9-14, the other strategies), to show what a longer
// search would gain.
//
// With -files, a line per file, with the settings that make every member
// of it that some setting makes (the writer's, if it is one).
//
//	go run ./scripts/gzrebuild [-extended] [-files] ../shared/corpus
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"warcdedup/gzmember"
	"warcdedup/gzmulti"
)

// lookAhead is what the rewrite reads past a record (refs.lookAhead).
const lookAhead = 64 << 10

// cpuTime is the CPU time the process used so far: on a machine others
// share, the cost of the work rather than of the wait.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// member is one gzip member read and what became of it.
type member struct {
	kind          string // WARC-Type, "arc", "filedesc" (ARC), or "other"
	stored        int64
	inflated      int64
	header        string // header form: length and flags
	describeErr   error
	setting       *gzmember.Setting // first of DefaultOrder that makes it; nil if none
	perFile       bool              // rebuilt by the file's Rebuilder (timed)
	extended      *gzmember.Setting // with -extended: an extended setting that makes it
	extendedTried bool
}

type fileResult struct {
	name     string
	software string
	members  []member
	damaged  int
	elapsed  time.Duration // the per-file Rebuilder's time
	cpu      time.Duration // and the process's CPU time meanwhile
	// writer is the settings of DefaultOrder each of which makes every
	// member of the file that some setting makes (with -files).
	writer []gzmember.Setting
}

func main() {
	extended := flag.Bool("extended", false, "try the members no default setting makes with other zlib settings")
	perFile := flag.Bool("files", false, "print a line per file")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gzrebuild [-extended] [-files] PATH...")
		os.Exit(2)
	}
	if !gzmember.Available() {
		fmt.Fprintln(os.Stderr, "gzrebuild: this build has no zlib (build with cgo and zlib1g-dev)")
		os.Exit(2)
	}
	var names []string
	for _, root := range flag.Args() {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.Type().IsRegular() && (strings.Contains(e.Name(), ".warc.gz") || strings.Contains(e.Name(), ".arc.gz")) {
				names = append(names, p)
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "gzrebuild:", err)
			os.Exit(2)
		}
	}
	sort.Strings(names)
	var results []fileResult
	for _, name := range names {
		res, err := measure(name, *extended, *perFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gzrebuild: %s: %v\n", name, err)
			os.Exit(1)
		}
		results = append(results, res)
	}
	report(os.Stdout, results, *extended, *perFile)
}

// measure reads, describes and rebuilds every member of the file name.
func measure(name string, extended, writer bool) (fileResult, error) {
	ms := &measurer{name: name, extended: extended, writer: writer, res: fileResult{name: name}}
	f, err := os.Open(name)
	if err != nil {
		return ms.res, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ms.res, err
	}
	ms.f, ms.size = f, fi.Size()
	spans, compressed, err := ms.spans()
	if err != nil || !compressed {
		return ms.res, err
	}
	ms.perFile = gzmember.NewRebuilder()
	defer ms.perFile.Close()
	ms.d = gzmember.NewDescriber(0)
	for _, sp := range spans {
		if err := ms.member(sp); err != nil {
			return ms.res, err
		}
	}
	ms.writerSettings()
	return ms.res, nil
}

// measurer is the measure of one file, its steps in the order measure
// takes them: the members found, each read, described and rebuilt, then
// the settings that make all of them.
type measurer struct {
	name             string
	extended, writer bool // the flags -extended and -files
	f                *os.File
	size             int64
	perFile          *gzmember.Rebuilder // as undo uses one, for the file
	d                *gzmember.Describer
	made             []rebuilt // the members some setting makes, with -files
	res              fileResult
}

// rebuilt is a member some setting makes.
type rebuilt struct {
	desc     gzmember.Description
	inflated []byte
}

// spans are the members as gzmulti finds them, counting the damaged
// ones; compressed is false for a file that is no gzip file.
func (ms *measurer) spans() (spans []gzmulti.Member, compressed bool, err error) {
	z, err := gzmulti.NewReader(io.NewSectionReader(ms.f, 0, ms.size), ms.name)
	if err != nil {
		return nil, false, err
	}
	if !z.Compressed() {
		return nil, false, nil
	}
	for {
		_, err := z.Next()
		if err == io.EOF {
			return spans, true, nil
		}
		if gzmulti.IsDamage(err) {
			ms.res.damaged++
			continue
		}
		if err != nil {
			return nil, true, err
		}
		if _, err := io.Copy(io.Discard, z); err != nil {
			if gzmulti.IsDamage(err) {
				ms.res.damaged++
				continue
			}
			return nil, true, err
		}
		spans = append(spans, z.Member())
	}
}

// member reads, describes and rebuilds the member sp: from a fresh
// Rebuilder, from the file's, and with -extended from other settings.
func (ms *measurer) member(sp gzmulti.Member) error {
	inflated, err := ms.read(sp)
	if err != nil {
		return err
	}
	m := member{kind: kindOf(inflated), stored: sp.Length, inflated: int64(len(inflated))}
	if m.kind == "warcinfo" && ms.res.software == "" {
		ms.res.software = software(inflated)
	}
	desc, err := ms.d.Description()
	if err != nil {
		m.describeErr = err
		ms.res.members = append(ms.res.members, m)
		return nil
	}
	m.header = headerForm(desc.Header)
	raw, err := ms.stored(sp, &desc)
	if err != nil {
		return err
	}
	open := opener(inflated)
	var out bytes.Buffer
	if err := ms.rebuildFresh(&m, sp, &desc, open, raw, &out); err != nil {
		return err
	}
	if ms.writer && m.setting != nil {
		ms.made = append(ms.made, rebuilt{desc, inflated})
	}
	out.Reset()
	if err := ms.rebuildPerFile(&m, sp, &desc, open, raw, &out); err != nil {
		return err
	}
	if ms.extended && m.setting == nil {
		ms.tryExtended(&m, &desc, open)
	}
	ms.res.members = append(ms.res.members, m)
	return nil
}

// read inflates the member as the rewrite reads a record: the member and
// a look-ahead, through the Describer's Tee.
func (ms *measurer) read(sp gzmulti.Member) ([]byte, error) {
	ms.d.Reset(sp.Length)
	sec := io.NewSectionReader(ms.f, sp.Offset, min(ms.size-sp.Offset, sp.Length+lookAhead))
	mz, err := gzmulti.NewReader(ms.d.Tee(sec), ms.name)
	if err != nil {
		return nil, err
	}
	if _, err := mz.Next(); err != nil {
		return nil, err
	}
	return io.ReadAll(mz)
}

// stored reads the member's bytes as stored, checking that the
// description taken through the Tee is theirs.
func (ms *measurer) stored(sp gzmulti.Member, desc *gzmember.Description) ([]byte, error) {
	raw := make([]byte, sp.Length)
	if _, err := ms.f.ReadAt(raw, sp.Offset); err != nil {
		return nil, err
	}
	h := desc.Hash.New()
	h.Write(raw)
	if !bytes.Equal(h.Sum(nil), desc.Sum[:]) {
		return nil, fmt.Errorf("offset %d: the description taken through the Tee is not the member's", sp.Offset)
	}
	return raw, nil
}

// rebuildFresh sets the first setting of the default order that makes
// the member, from a fresh Rebuilder.
func (ms *measurer) rebuildFresh(m *member, sp gzmulti.Member, desc *gzmember.Description, open func() (io.Reader, error), raw []byte, out *bytes.Buffer) error {
	fresh := gzmember.NewRebuilder()
	s, err := fresh.Rebuild(desc, open, out)
	fresh.Close()
	switch {
	case err == nil:
		if !bytes.Equal(out.Bytes(), raw) {
			return fmt.Errorf("offset %d: rebuilt bytes are not the member's", sp.Offset)
		}
		m.setting = &s
	case !errors.Is(err, gzmember.ErrNotRebuildable):
		return fmt.Errorf("offset %d: %w", sp.Offset, err)
	}
	return nil
}

// rebuildPerFile rebuilds the member as undo would, by one Rebuilder for
// the file, timed.
func (ms *measurer) rebuildPerFile(m *member, sp gzmulti.Member, desc *gzmember.Description, open func() (io.Reader, error), raw []byte, out *bytes.Buffer) error {
	start, startCPU := time.Now(), cpuTime()
	_, err := ms.perFile.Rebuild(desc, open, out)
	ms.res.elapsed += time.Since(start)
	ms.res.cpu += cpuTime() - startCPU
	switch {
	case err == nil:
		if !bytes.Equal(out.Bytes(), raw) {
			return fmt.Errorf("offset %d: rebuilt bytes are not the member's", sp.Offset)
		}
		m.perFile = true
	case !errors.Is(err, gzmember.ErrNotRebuildable):
		return fmt.Errorf("offset %d: %w", sp.Offset, err)
	}
	return nil
}

// tryExtended looks for a setting outside the default order that makes
// a member none of it makes.
func (ms *measurer) tryExtended(m *member, desc *gzmember.Description, open func() (io.Reader, error)) {
	m.extendedTried = true
	ext := &gzmember.Rebuilder{Order: extendedOrder(), Patience: -1}
	s, err := ext.Rebuild(desc, open, io.Discard)
	ext.Close()
	if err == nil {
		m.extended = &s
	}
}

// writerSettings are the settings of the default order each of which
// makes every member of the file that some setting makes.
func (ms *measurer) writerSettings() {
	if len(ms.made) == 0 {
		return
	}
	for _, s := range gzmember.DefaultOrder {
		one := &gzmember.Rebuilder{Order: []gzmember.Setting{s}, Patience: -1}
		all := true
		for _, mk := range ms.made {
			if _, err := one.Rebuild(&mk.desc, opener(mk.inflated), io.Discard); err != nil {
				all = false
				break
			}
		}
		one.Close()
		if all {
			ms.res.writer = append(ms.res.writer, s)
		}
	}
}

// opener gives a Rebuilder the inflated bytes of a member.
func opener(inflated []byte) func() (io.Reader, error) {
	return func() (io.Reader, error) { return bytes.NewReader(inflated), nil }
}

// extendedOrder is every setting outside DefaultOrder worth a look:
// levels 0-9 with every memLevel, windowBits 9-14 and the other strategies
// at levels 1-9 with memLevel 8.
func extendedOrder() []gzmember.Setting {
	var s []gzmember.Setting
	add := func(x gzmember.Setting) {
		if !slices.Contains(gzmember.DefaultOrder, x) && !slices.Contains(s, x) {
			s = append(s, x)
		}
	}
	for level := 0; level <= 9; level++ {
		for mem := 1; mem <= 9; mem++ {
			add(gzmember.Setting{Level: level, MemLevel: mem, WindowBits: 15})
		}
	}
	for level := 1; level <= 9; level++ {
		for wb := 9; wb <= 14; wb++ {
			add(gzmember.Setting{Level: level, MemLevel: 8, WindowBits: wb})
		}
		for strategy := 1; strategy <= 4; strategy++ {
			add(gzmember.Setting{Level: level, MemLevel: 8, WindowBits: 15, Strategy: strategy})
		}
	}
	return s
}

// kindOf names a member by its first record: its WARC-Type, "filedesc"
// or "arc" for ARC records.
func kindOf(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("WARC/")):
		head, _, _ := bytes.Cut(b, []byte("\r\n\r\n"))
		for _, line := range strings.Split(string(head), "\n") {
			name, value, ok := strings.Cut(line, ":")
			if ok && strings.EqualFold(strings.TrimSpace(name), "WARC-Type") {
				return strings.TrimSpace(value)
			}
		}
		return "WARC, no type"
	case bytes.HasPrefix(b, []byte("filedesc://")):
		return "filedesc"
	case len(b) > 0 && bytes.IndexByte(b[:min(len(b), 512)], '\n') > 0:
		return "arc"
	}
	return "other"
}

// software is the warcinfo record's software field, if any.
func software(b []byte) string {
	for _, line := range strings.Split(string(b[:min(len(b), 4096)]), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "software") {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// headerForm says how long a header is and which optional fields it has.
func headerForm(h []byte) string {
	var fields []string
	for _, f := range []struct {
		bit  byte
		name string
	}{{4, "FEXTRA"}, {8, "FNAME"}, {16, "FCOMMENT"}, {2, "FHCRC"}} {
		if h[3]&f.bit != 0 {
			fields = append(fields, f.name)
		}
	}
	if len(fields) == 0 {
		fields = []string{"none"}
	}
	return fmt.Sprintf("%d bytes, %s", len(h), strings.Join(fields, "+"))
}

// tally counts members and their bytes.
type tally struct {
	n                int
	stored, inflated int64
}

func (t *tally) add(m *member) { t.n++; t.stored += m.stored; t.inflated += m.inflated }

// The columns: every member, WARC responses, ARC records.
var columns = []struct {
	name string
	in   func(*member) bool
}{
	{"all members", func(*member) bool { return true }},
	{"WARC response", func(m *member) bool { return m.kind == "response" }},
	{"ARC record", func(m *member) bool { return m.kind == "arc" }},
}

// report prints what became of the members of the results: by outcome,
// the time of a Rebuilder per file, the gzip headers, the files and, with
// perFile, a line per file.
func report(w io.Writer, results []fileResult, extended, perFile bool) {
	fmt.Fprintf(w, "zlib %s; %d files\n\n", gzmember.ZlibVersion(), len(results))
	r := newReporter(w, results)
	r.outcomes(extended)
	r.times()
	r.headers(extended)
	r.files()
	if perFile {
		r.fileLines()
	}
}

// reporter prints the sections of a report, in the order report calls
// them, from the members of every file taken together.
type reporter struct {
	w            io.Writer
	results      []fileResult
	members      []*member // of every file
	damaged      int
	elapsed, cpu time.Duration
}

func newReporter(w io.Writer, results []fileResult) *reporter {
	r := &reporter{w: w, results: results}
	for i := range results {
		r.damaged += results[i].damaged
		r.elapsed += results[i].elapsed
		r.cpu += results[i].cpu
		for j := range results[i].members {
			r.members = append(r.members, &results[i].members[j])
		}
	}
	return r
}

// outcomes is the table of the members by outcome, a column for every
// member, WARC responses and ARC records.
func (r *reporter) outcomes(extended bool) {
	tw := tabwriter.NewWriter(r.w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "members\t")
	for _, c := range columns {
		fmt.Fprintf(tw, "%s\t", c.name)
	}
	fmt.Fprintln(tw)
	r.row(tw, "read", func(*member) bool { return true })
	r.row(tw, "not described", func(m *member) bool { return m.describeErr != nil })
	r.row(tw, "rebuilt bit for bit", func(m *member) bool { return m.setting != nil })
	for _, s := range r.firstSettings() {
		r.row(tw, "  first at "+s.String(), func(m *member) bool { return m.setting != nil && *m.setting == s })
	}
	r.row(tw, "not rebuilt", func(m *member) bool { return m.describeErr == nil && m.setting == nil })
	r.row(tw, "rebuilt by a Rebuilder per file", func(m *member) bool { return m.perFile })
	if extended {
		r.row(tw, "not rebuilt, extended settings make it", func(m *member) bool { return m.extended != nil })
	}
	tw.Flush()
	fmt.Fprintf(r.w, "(damaged members, not counted: %d)\n\n", r.damaged)
}

// row is a line of the outcomes: in each column, how many of its members
// pick takes, and what share of them.
func (r *reporter) row(tw io.Writer, label string, pick func(*member) bool) {
	fmt.Fprintf(tw, "%s\t", label)
	for _, c := range columns {
		var all, some tally
		for _, m := range r.members {
			if c.in(m) {
				all.add(m)
				if pick(m) {
					some.add(m)
				}
			}
		}
		pct := 0.0
		if all.n > 0 {
			pct = 100 * float64(some.n) / float64(all.n)
		}
		fmt.Fprintf(tw, "%d (%.1f%%)\t", some.n, pct)
	}
	fmt.Fprintln(tw)
}

// firstSettings are the settings that were the first to make a member,
// in the order of gzmember.DefaultOrder.
func (r *reporter) firstSettings() []gzmember.Setting {
	var settings []gzmember.Setting
	for _, m := range r.members {
		if m.setting != nil && !slices.Contains(settings, *m.setting) {
			settings = append(settings, *m.setting)
		}
	}
	order := func(s gzmember.Setting) int { return slices.Index(gzmember.DefaultOrder, s) }
	slices.SortFunc(settings, func(a, b gzmember.Setting) int { return order(a) - order(b) })
	return settings
}

// times is what the Rebuilders per file took, per megabyte of the
// members described.
func (r *reporter) times() {
	var all tally
	for _, m := range r.members {
		if m.describeErr == nil {
			all.add(m)
		}
	}
	mb := func(n int64) float64 { return float64(n) / 1e6 }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Fprintf(r.w, "time of a Rebuilder per file, for %.1f MB stored, %.1f MB inflated:\n", mb(all.stored), mb(all.inflated))
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"elapsed", r.elapsed}, {"CPU (user+system)", r.cpu}} {
		fmt.Fprintf(r.w, "  %-18s %.2f s: %.1f ms per MB stored, %.1f ms per MB inflated\n", t.name, t.d.Seconds(), ms(t.d)/mb(all.stored), ms(t.d)/mb(all.inflated))
	}
	fmt.Fprintln(r.w)
}

// headers counts the gzip header forms and the reasons a member has no
// description; with extended, the settings found for the others.
func (r *reporter) headers(extended bool) {
	forms := map[string]int{}
	for _, m := range r.members {
		if m.describeErr != nil {
			forms["not described: "+m.describeErr.Error()]++
		} else {
			forms[m.header]++
		}
	}
	fmt.Fprintln(r.w, "gzip headers:")
	for _, k := range sortedKeys(forms) {
		fmt.Fprintf(r.w, "  %6d  %s\n", forms[k], k)
	}
	if !extended {
		return
	}
	ext := map[string]int{}
	for _, m := range r.members {
		if m.extended != nil {
			ext[m.extended.String()]++
		}
	}
	fmt.Fprintln(r.w, "\nmembers no default setting makes that an extended setting makes:")
	if len(ext) == 0 {
		fmt.Fprintln(r.w, "  none")
	}
	for _, k := range sortedKeys(ext) {
		fmt.Fprintf(r.w, "  %6d  %s\n", ext[k], k)
	}
}

// files counts the files every member, some or none of which a default
// setting makes (a damaged member makes the file "some").
func (r *reporter) files() {
	whole, partly, none := 0, 0, 0
	for _, res := range r.results {
		n, ok := len(res.members), res.rebuilt()
		switch {
		case n == 0:
		case ok == n && res.damaged == 0:
			whole++
		case ok > 0:
			partly++
		default:
			none++
		}
	}
	fmt.Fprintf(r.w, "\nfiles: %d every member rebuilt, %d some, %d none (of %d with members)\n", whole, partly, none, whole+partly+none)
}

// fileLines is a line per file: its members, the settings that were the
// first to make them, and its writer's setting.
func (r *reporter) fileLines() {
	fmt.Fprintln(r.w)
	tw := tabwriter.NewWriter(r.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "file\tmembers\trebuilt\tdamaged\tfirst settings that make them\twriter's setting (making every one)\tsoftware")
	for _, res := range r.results {
		seen := map[string]int{}
		for _, m := range res.members {
			if m.setting != nil {
				seen[m.setting.String()]++
			}
		}
		var s []string
		for _, k := range sortedKeys(seen) {
			s = append(s, fmt.Sprintf("%s x%d", k, seen[k]))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", strings.TrimPrefix(res.name, "../shared/corpus/"), len(res.members), res.rebuilt(), res.damaged, strings.Join(s, ", "), res.writerSetting(), res.software)
	}
	tw.Flush()
}

// rebuilt is the number of the file's members a default setting makes.
func (res *fileResult) rebuilt() int {
	ok := 0
	for _, m := range res.members {
		if m.setting != nil {
			ok++
		}
	}
	return ok
}

// writerSetting names the setting that makes every member of the file
// some setting makes, and how many others do; "-" if none does.
func (res *fileResult) writerSetting() string {
	if len(res.writer) == 0 {
		return "-"
	}
	w := res.writer[0].String()
	if len(res.writer) > 1 {
		w += fmt.Sprintf(" (or %d others)", len(res.writer)-1)
	}
	return w
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	return keys
}
