package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/collock"
	"warcdedup/crawlindex"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/progress"
	"warcdedup/internal/tsv"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/source"
	"warcdedup/split"
	"warcdedup/stage"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// The files of a cluster job's own (besides those of package workdir that
// a host's directory, hosts/NAME/, and a range's, ranges/NNN/, hold).
const (
	rangePrefix     = "range"      // a host's by-digest.manifest cut by hash range: range-NNN
	filesFile       = "files.tsv"  // a host's: escaped name and size of each file, when hashed
	byFilePrefix    = "by-file-"   // a range's lines of one host's files, on file: by-file-NAME
	originalsPrefix = "originals-" // a range's lines a host's rewrite looks originals up in: originals-NAME
)

// inputs lists the host's files beneath its root, named as the job's
// manifests name them. With refusePackages, a WACZ package beneath the
// root (or a link under a package's name) fails the task for good: only
// warcdedup run deduplicates packages, writing each anew with its
// datapackage.json, and a cluster job that passed them over would say it
// is done with their duplicates left, and rewrite the files beside them
// without the revisits in them that pin their originals. The hash refuses
// them, before anything is rewritten; the hash again lists what the job
// rewrote, which a package put there since is not.
func (k *task) inputs(refusePackages bool) ([]warcsum.Input, error) {
	h := k.host
	if fi, err := os.Stat(h.Root); err != nil {
		return nil, fmt.Errorf("root of %s: %w", h.Name, err)
	} else if !fi.IsDir() {
		return nil, permanent("root of %s: %s is not a directory", h.Name, h.Root)
	}
	var packages []string
	col := warcsum.Collector{Recursive: true}
	if refusePackages {
		col.Packages = func(pkg warcsum.Input) ([]warcsum.Input, error) {
			packages = append(packages, pkg.Path)
			return nil, nil
		}
		col.Link = func(path string) {
			if strings.HasSuffix(strings.ToLower(path), ".wacz") {
				packages = append(packages, path)
			}
		}
	}
	inputs, err := col.Collect([]string{h.Root})
	if err != nil {
		return nil, err
	}
	if len(packages) > 0 {
		return nil, refusedPackages(h, packages)
	}
	if len(inputs) == 0 {
		k.Warn(fmt.Errorf("%s: no WARC or ARC file in %s", h.Name, h.Root))
	}
	for i := range inputs {
		inputs[i].Name = k.spec.fileName(inputs[i].Name)
	}
	return inputs, nil
}

// refusedPackages is the error of a host whose directory holds WACZ
// packages, naming the first few.
func refusedPackages(h *Host, packages []string) error {
	const named = 3
	list := strings.Join(packages[:min(named, len(packages))], ", ")
	if len(packages) > named {
		list += fmt.Sprintf(" and %d more", len(packages)-named)
	}
	return permanent("%s: %s holds WACZ packages, which warcdedup cluster does not deduplicate (WARC and ARC files only): %s; "+
		"deduplicate them with warcdedup run on %s (it writes each package anew), or move them out of %s, then run the job again",
		h.Name, h.Root, list, h.Name, h.Root)
}

// hashStage is the Hash stage over the host's files, into a manifest of
// its directory (and facts, unless ""), through the host's cache.
func (k *task) hashStage(inputs []warcsum.Input, manifestName, factsName string, onFile func(warcsum.Input, string)) *stage.Hash {
	h := &stage.Hash{Inputs: inputs, Algorithm: k.algo, Jobs: k.spec.Jobs, Cache: k.wd.host(k.host, workdir.CacheDir),
		Manifest: k.wd.host(k.host, manifestName), OnFile: onFile, Messages: k, Meter: k.prog}
	if factsName != "" {
		h.Facts = k.wd.host(k.host, factsName)
	}
	return h
}

// hash lists a host's files (stage 1): the manifest, sorted on digest and
// cut into the hash ranges, the facts sorted on file, and the files with
// their sizes.
func (k *task) hash(ctx context.Context) error {
	h := k.host
	// The host's log completed first from the journal a killed task left
	// (see rewritelog.Log), so that the listing is moved only by what follows.
	logSize, err := rewritelog.Recover(k.wd.host(h, workdir.LogFile))
	if err != nil {
		return err
	}
	var onFile func(warcsum.Input, string)
	if k.spec.withIndex() {
		// The cache keeps each file's SHA-256 from here: the commit
		// records those the rewrite leaves unchanged without a read.
		onFile = func(warcsum.Input, string) {}
	}
	inputs, err := k.inputs(true)
	if err != nil {
		return err
	}
	res, err := k.hashStage(inputs, workdir.BeforeFile, workdir.FactsFile, onFile).Run(ctx)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, in := range inputs {
		fmt.Fprintf(&b, "%s\t%d\n", manifest.EscapeFile(in.Name), in.Size)
	}
	if err := workdir.WriteFile(k.wd.host(h, filesFile), []byte(b.String())); err != nil {
		return err
	}
	if err := k.sorter.Sort(ctx, manifest.ByDigest.Command, []string{k.wd.host(h, workdir.BeforeFile)}, k.wd.host(h, workdir.ByDigestFile)); err != nil {
		return err
	}
	if err := k.sorter.Sort(ctx, manifest.ByFile.Command, []string{k.wd.host(h, workdir.FactsFile)}, k.wd.host(h, workdir.FactsByFile)); err != nil {
		return err
	}
	// The ranges: each is a contiguous stretch of the digest order, so
	// the parts of the sorted manifest are sorted.
	in, err := os.Open(k.wd.host(h, workdir.ByDigestFile))
	if err != nil {
		return err
	}
	defer in.Close()
	parts := split.NewParts(k.wd.host(h, rangePrefix))
	defer parts.Abort()
	if err := split.ByHashRange(manifest.NewReader(bufio.NewReaderSize(in, 256<<10), in.Name()), in.Name(), parts, k.spec.Ranges); err != nil {
		return err
	}
	if err := parts.Commit(); err != nil {
		return err
	}
	lines := make([]int64, len(parts.List))
	for i, p := range parts.List {
		lines[i] = p.Lines
	}
	k.marker.Hash = &HashResult{HashResult: res, LogSize: logSize, RangeLines: lines}
	k.marker.Note = res.Note()
	return nil
}

// hostFile is a file of the collection: the host that holds it and its
// size when hashed.
type hostFile struct {
	host int
	name string // unescaped
	size int64
}

// collectionFiles reads every host's files.tsv: the collection's files by
// manifest field 1. A name on two hosts is refused: a manifest line could
// not say which file it lists.
func (k *task) collectionFiles() (map[string]hostFile, error) {
	files := map[string]hostFile{}
	for i := range k.spec.Hosts {
		h := &k.spec.Hosts[i]
		f, err := os.Open(k.wd.host(h, filesFile))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			field, size, ok := tsv.Cut(sc.Text())
			sz, err := strconv.ParseInt(size, 10, 64)
			if !ok || err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: want \"NAME SIZE\"", f.Name(), n)
			}
			name, err := manifest.UnescapeFile(field)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %w", f.Name(), n, err)
			}
			if prev, dup := files[field]; dup {
				f.Close()
				return nil, permanent("%s is on %s (%s) and on %s (%s): names relative to each root must be unique across the hosts",
					name, k.spec.Hosts[prev.host].Name, k.spec.Hosts[prev.host].Root, h.Name, h.Root)
			}
			files[field] = hostFile{host: i, name: name, size: sz}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// httpClient reads records from the storage hosts as the job's settings
// say: one client a task, whose bytes read the task's result counts
// (Marker.HTTP).
func (k *task) httpClient() *source.HTTP {
	if k.http != nil {
		return k.http
	}
	h := source.NewHTTP(k.spec.PerHost)
	h.Retries = k.spec.HTTPRetries
	if k.spec.HTTPTimeout > 0 {
		h.IdleTimeout = k.spec.HTTPTimeout
	}
	h.MinRate = k.spec.MinRate
	k.http = h
	return h
}

// hashMarkers are the results of every host's hash task.
func (k *task) hashMarkers() ([]*HashResult, error) {
	out := make([]*HashResult, len(k.spec.Hosts))
	for i, h := range k.spec.Hosts {
		m := k.wd.readMarker(k.spec.ID, kindHash+"@"+h.Name, 0)
		if m == nil || m.Hash == nil {
			return nil, fmt.Errorf("%s has not been hashed in this job", h.Name)
		}
		out[i] = m.Hash
	}
	return out, nil
}

// resolve proves the duplicates of a hash range byte for byte and numbers
// the copies (stages 2 and 3): the hosts' sorted parts of the range are merged
// (sort -m) into warccollres -p, which reads every record over HTTP from
// the host that holds it. The numbered lines are then split by host, each
// host's sorted on file for its rewrite.
func (k *task) resolve(ctx context.Context) error {
	r, n := k.Index, k.spec.Ranges
	hashed, err := k.hashMarkers()
	if err != nil {
		return err
	}
	files, err := k.collectionFiles()
	if err != nil {
		return err
	}
	loc := &source.Locator{Locations: map[string]string{}}
	for _, f := range files {
		loc.Locations[f.name] = k.spec.Hosts[f.host].FileURL(k.spec.relName(f.name))
	}
	var inputs []string
	var total int64
	for i := range k.spec.Hosts {
		inputs = append(inputs, k.wd.host(&k.spec.Hosts[i], rangePrefix+"-"+rangeName(r, n)))
		total += hashed[i].RangeLines[r]
	}
	dir := k.wd.rangeDir(r, n)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var joined crawlindex.JoinStats
	if k.spec.withIndex() {
		ix, err := k.spec.openIndex()
		if err != nil {
			return err
		}
		index, st, err := k.joinIndex(ctx, ix, inputs, dir)
		if err != nil {
			return fmt.Errorf("joining the index %s: %w", k.spec.Index, err)
		}
		joined = st
		inputs = append(inputs, index)
		total += st.Matched
		// The committed crawls' files, where the index says they are.
		loc.Prefixes = ix.Prefixes()
	}
	m, err := k.sorter.MergeStream(ctx, manifest.ByDigest.Command, inputs)
	if err != nil {
		return err
	}
	rs := stage.Resolve{In: manifest.NewReader(bufio.NewReaderSize(m, 256<<10), "range "+rangeName(r, n)+" of the hosts' manifests"),
		Out: filepath.Join(dir, workdir.NumberedFile), Policy: k.policy, Jobs: k.spec.Jobs, Total: total,
		Messages: k, Meter: k.prog}
	if k.spec.compareOnce() {
		// Numbered from the manifest alone: no record is read over
		// HTTP here, the rewrite compares each duplicate.
		rs.FromManifest = true
	} else {
		loc.HTTP = k.httpClient()
		open := loc.Files(source.KeptOpen)
		defer open.Close()
		rs.Source = open
	}
	if k.spec.withIndex() {
		// Committed originals stay responses: committed crawls are
		// never rewritten.
		rs.Kept = func(l *manifest.Line) bool { return !k.spec.ours(l.File) }
	}
	res, err := rs.Run(ctx)
	if merr := m.Wait(); err == nil {
		err = merr
	}
	if err != nil {
		return err
	}
	noDigest, err := k.splitByHost(ctx, filepath.Join(dir, workdir.NumberedFile), files)
	if err != nil {
		return err
	}
	k.marker.Resolve = &ResolveResult{ResolveResult: res, NoDigest: noDigest}
	k.marker.Note = res.Note()
	if k.spec.withIndex() {
		k.marker.Note += fmt.Sprintf("; %s originals of the index read, %s of the range's %s digests", progress.Count(joined.IndexLines),
			progress.Count(joined.Matched), progress.Count(joined.Digests))
	}
	return nil
}

// splitByHost writes a range's numbered lines of each host's files to
// by-file-NAME, sorted on file, for the host's rewrite, and the lines the
// rewrite looks its originals up in to originals-NAME (see
// originalsSplit). The revisit lines without a digest in the job's
// algorithm, which every range holds, go only into range 0's parts. It
// returns how many such lines the range has.
func (k *task) splitByHost(ctx context.Context, numbered string, files map[string]hostFile) (int64, error) {
	in, err := os.Open(numbered)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(k.sorter.TempDir, 0o755); err != nil {
		return 0, err
	}
	dir := k.wd.rangeDir(k.Index, k.spec.Ranges)
	parts := make([]hostPart, len(k.spec.Hosts))
	orig := &originalsSplit{limit: 4 << 20, dup: make([]bool, len(k.spec.Hosts))}
	for i, h := range k.spec.Hosts {
		f, err := os.Create(filepath.Join(k.sorter.TempDir, "host-"+h.Name))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		parts[i] = hostPart{f, bufio.NewWriter(f)}
		o, err := atomicfile.Create(filepath.Join(dir, originalsPrefix+h.Name), 0o644)
		if err != nil {
			return 0, err
		}
		defer o.Abort()
		orig.files = append(orig.files, o)
		orig.parts = append(orig.parts, bufio.NewWriterSize(o, 64<<10))
	}
	var kept *keptIndex
	if k.spec.withIndex() {
		if kept, err = k.newKeptIndex(dir); err != nil {
			return 0, err
		}
	}
	noDigest, err := k.splitLines(numbered, in, files, parts, orig, kept)
	if kept != nil {
		err = kept.close(ctx, err)
	}
	if err != nil {
		return 0, err
	}
	for i, h := range k.spec.Hosts {
		if err := parts[i].w.Flush(); err != nil {
			return 0, err
		}
		if err := k.sorter.Sort(ctx, manifest.ByFile.Command, []string{parts[i].f.Name()}, filepath.Join(dir, byFilePrefix+h.Name)); err != nil {
			return 0, err
		}
	}
	return noDigest, nil
}

// splitLines is splitByHost's pass over the numbered lines. The committed
// lines joined from the index go to kept, and as originals to the hosts
// with duplicates of them.
func (k *task) splitLines(numbered string, in io.Reader, files map[string]hostFile, parts []hostPart, orig *originalsSplit, kept *keptIndex) (int64, error) {
	rd := manifest.NewReader(bufio.NewReaderSize(in, 256<<10), numbered)
	var noDigest int64
	var buf []byte
	for {
		l, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		if l.Digest == manifest.NoDigest {
			noDigest++
			if k.Index > 0 {
				continue
			}
		}
		buf = l.Append(buf[:0])
		if !k.spec.ours(l.File) {
			if err := kept.add(buf); err != nil {
				return 0, err
			}
			if err := orig.add(&l, buf, -1); err != nil {
				return 0, err
			}
			continue
		}
		f, ok := files[l.File]
		if !ok {
			return 0, rd.Errorf("%s is on no host", l.File)
		}
		if _, err := parts[f.host].w.Write(buf); err != nil {
			return 0, err
		}
		if err := orig.add(&l, buf, f.host); err != nil {
			return 0, err
		}
	}
	return noDigest, orig.close()
}

// hostPart is a host's lines of a range, before they are sorted.
type hostPart struct {
	f *os.File
	w *bufio.Writer
}

// originalsSplit writes, for each host, the lines of a range that its
// rewrite looks originals up in: the kept (copy 1) and revisit lines of
// every digest of which the host has a duplicate (host -1 is none: a
// committed original of the index), and the revisit lines
// without a digest, which pin records of any digest. A host's rewrite so
// reads a share of the numbered manifest that grows with its own
// duplicates, not the whole of it. The lines of one digest are held until
// the digest ends; past limit bytes they go to every host as they come.
type originalsSplit struct {
	files  []*atomicfile.File
	parts  []*bufio.Writer
	limit  int
	digest string
	held   []byte // kept and revisit lines of the digest
	dup    []bool // hosts with a duplicate of the digest
	all    bool   // the digest's lines go to every host
}

func (o *originalsSplit) add(l *manifest.Line, text []byte, host int) error {
	if l.Digest == manifest.NoDigest {
		return o.toAll(text)
	}
	if l.Digest != o.digest {
		if err := o.endDigest(); err != nil {
			return err
		}
		o.digest = l.Digest
	}
	switch {
	case l.IsDuplicate() && host >= 0:
		o.dup[host] = true
	case o.all:
		return o.toAll(text)
	default:
		o.held = append(o.held, text...)
		if len(o.held) > o.limit {
			o.all = true
			err := o.toAll(o.held)
			o.held = o.held[:0]
			return err
		}
	}
	return nil
}

func (o *originalsSplit) toAll(text []byte) error {
	for _, w := range o.parts {
		if _, err := w.Write(text); err != nil {
			return err
		}
	}
	return nil
}

// endDigest writes the digest's lines to the hosts with a duplicate of it.
func (o *originalsSplit) endDigest() error {
	for h, dup := range o.dup {
		if dup && len(o.held) > 0 {
			if _, err := o.parts[h].Write(o.held); err != nil {
				return err
			}
		}
		o.dup[h] = false
	}
	o.held, o.all = o.held[:0], false
	return nil
}

func (o *originalsSplit) close() error {
	if err := o.endDigest(); err != nil {
		return err
	}
	for i, w := range o.parts {
		if err := w.Flush(); err != nil {
			return err
		}
		if err := o.files[i].CommitRenamed(); err != nil {
			return err
		}
	}
	return nil
}

// originalsTables opens every range's originals part of the host, where
// its rewrite looks up originals by digest.
func (k *task) originalsTables() ([]*manifest.Table, error) {
	var tables []*manifest.Table
	for r := range k.spec.Ranges {
		t, err := manifest.OpenTable(filepath.Join(k.wd.rangeDir(r, k.spec.Ranges), originalsPrefix+k.host.Name))
		if err != nil {
			for _, t := range tables {
				t.Close()
			}
			return nil, err
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// rewrite turns a host's duplicates into revisits in place (stage 4), or
// measures what it would do: warcrefs over the host's lines of every
// range, merged on file, with its originals parts of every range as the
// originals manifest, the originals read locally or over HTTP from the
// other hosts (remoteFiles).
func (k *task) rewrite(ctx context.Context) error {
	h := k.host
	locks, err := k.lockHost()
	if err != nil {
		return err
	}
	defer locks.Release()
	var inputs []string
	for r := range k.spec.Ranges {
		inputs = append(inputs, filepath.Join(k.wd.rangeDir(r, k.spec.Ranges), byFilePrefix+h.Name))
	}
	byFile := k.wd.host(h, workdir.ByFileFile)
	if err := k.sorter.Merge(ctx, manifest.ByFile.Command, inputs, byFile); err != nil {
		return err
	}
	hashed, err := k.hashMarkers()
	if err != nil {
		return err
	}
	files, err := k.collectionFiles()
	if err != nil {
		return err
	}
	// The host's own files beneath its root; with an index, named
	// CRAWL/REL, and the committed crawls' files where the index says.
	local := &source.Locator{Roots: []string{h.Root}, HTTP: k.httpClient()}
	if k.spec.withIndex() {
		ix, err := k.spec.openIndex()
		if err != nil {
			return err
		}
		local.Roots, local.Prefixes = nil, ix.Prefixes()
		local.Prefixes[k.spec.Crawl] = h.Root
	}
	remote := &remoteFiles{local: local, http: k.httpClient(),
		files: map[string]*remoteFile{}, wait: k.spec.VersionWait}
	logs := make([]*rewritelog.Tail, len(k.spec.Hosts))
	var total int64
	for field, f := range files {
		if f.host == k.step.Host {
			total += f.size
			continue
		}
		if logs[f.host] == nil {
			logs[f.host] = rewritelog.NewTail(k.wd.host(&k.spec.Hosts[f.host], workdir.LogFile), hashed[f.host].LogSize)
		}
		remote.files[field] = &remoteFile{url: k.spec.Hosts[f.host].FileURL(k.spec.relName(f.name)), size: f.size, log: logs[f.host]}
	}
	tables, err := k.originalsTables()
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range tables {
			t.Close()
		}
	}()
	in, err := os.Open(byFile)
	if err != nil {
		return err
	}
	defer in.Close()
	rw := stage.Rewrite{In: manifest.NewReader(bufio.NewReaderSize(in, 256<<10), byFile), Originals: tables, Open: remote,
		Roots: local.Roots, Prefixes: local.Prefixes, Log: k.wd.host(h, workdir.LogFile), LogFrom: hashed[k.step.Host].LogSize,
		DryRun: k.spec.DryRun, HardLinks: k.spec.HardLinks, SHA256: k.spec.withIndex(), Policy: k.policy, Jobs: k.spec.Jobs,
		Cache: k.wd.host(h, workdir.CacheDir), Algorithm: k.algo, Saved: k.wd.host(h, workdir.SavedFile), Total: total,
		Messages: k, Meter: k.prog}
	if k.spec.compareOnce() {
		// Resolve read nothing: a duplicate that differs from its
		// original stays as it is, listed apart, and its file is
		// rewritten all the same.
		rw.Apart = k.wd.host(h, workdir.ApartFile)
	}
	res, err := rw.Run(ctx)
	if err != nil {
		return err
	}
	k.marker.Rewrite = &RewriteResult{RewriteResult: res, Remote: remote.stats}
	if rw.Apart != "" {
		if k.marker.Rewrite.Apart, err = countLines(rw.Apart); err != nil {
			return err
		}
	}
	k.marker.Note = res.Note(k.spec.DryRun) + remote.stats.note() + k.marker.Rewrite.apartNote()
	fmt.Fprintf(k.Log, "warcdedup: %s: %s\n", k.name(), k.marker.Note)
	return nil
}

// lockHost locks the directories of the host's collection (package
// collock) for a step that rewrites its files: another job on them (a
// warcdedup run or undo there) is refused meanwhile, and this step is
// refused while one works. The lock is the step's process's: a cluster
// job spans many tasks, and between its steps holds none.
func (k *task) lockHost() (*collock.Set, error) {
	if k.spec.DryRun {
		return nil, nil
	}
	return collock.LockJob([]string{k.host.Root}, nil)
}

// hashAgain lists a host's files again, the first half of stage 5; only
// the revisits written in the files the rewrite replaced are read, the
// cache knows the rest.
func (k *task) hashAgain(ctx context.Context) error {
	if k.spec.compareOnce() {
		// The host's files are final once its rewrite of the
		// collisions ran, or was found not needed: the monitor holds
		// this step until then, and a task started early by hand must
		// not list files a rewrite may still replace.
		if k.wd.readMarker(k.spec.ID, kindRewriteCollisions+"@"+k.host.Name, 0) == nil {
			return fmt.Errorf("%s@%s has not run yet (nor was it found not needed): the host's files may still change", kindRewriteCollisions, k.host.Name)
		}
	}
	var sums *stage.FileSums
	var onFile func(warcsum.Input, string)
	if k.spec.withIndex() {
		// The files as committed: their SHA-256 and stamps, read here
		// on their host.
		sums = &stage.FileSums{}
		onFile = sums.Add
	}
	inputs, err := k.inputs(false)
	if err != nil {
		return err
	}
	res, err := k.hashStage(inputs, workdir.AfterFile, "", onFile).Run(ctx)
	if err != nil {
		return err
	}
	if sums != nil {
		if err := sums.Write(k.wd.host(k.host, workdir.AfterFilesFile)); err != nil {
			return err
		}
	}
	k.marker.After = &res.Stats
	k.marker.Note = res.AgainNote()
	return nil
}

// concat opens files as one stream.
func concat(names []string) (io.Reader, func(), error) {
	var readers []io.Reader
	var open []io.ReadCloser
	closeAll := func() {
		for _, f := range open {
			f.Close()
		}
	}
	for _, n := range names {
		f, err := gzfile.Open(n)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		open = append(open, f)
		readers = append(readers, bufio.NewReaderSize(f, 256<<10))
	}
	return io.MultiReader(readers...), closeAll, nil
}

// verify proves that nothing was lost, the second half of stage 5, over the whole
// collection: every host's manifest before against every host's after (a
// revisit's original may be on any host).
func (k *task) verify(ctx context.Context) error {
	var befores, afters []string
	var total int64
	hashed, err := k.hashMarkers()
	if err != nil {
		return err
	}
	for i := range k.spec.Hosts {
		befores = append(befores, k.wd.host(&k.spec.Hosts[i], workdir.BeforeFile))
		afters = append(afters, k.wd.host(&k.spec.Hosts[i], workdir.AfterFile))
		total += hashed[i].Stats.Listed
	}
	before, closeBefore, err := concat(befores)
	if err != nil {
		return err
	}
	defer closeBefore()
	after, closeAfter, err := concat(afters)
	if err != nil {
		return err
	}
	defer closeAfter()
	v := stage.Verify{Before: manifest.NewReader(before, "the hosts' manifests before"), After: manifest.NewReader(after, "the hosts' manifests after"),
		Violations: k.wd.file(workdir.Violations), Total: total, Messages: k, Meter: k.prog, Sort: k.sorter}
	// With an index, revisits may refer to the committed originals the
	// ranges kept, as the resolution found them.
	if kept := k.keptIndexFiles(indexKeptFile); kept != nil {
		r, closeKept, err := concat(kept)
		if err != nil {
			return err
		}
		defer closeKept()
		v.External = manifest.NewReader(r, "the ranges' committed originals")
	}
	st, err := v.Run(ctx)
	if err != nil {
		return err
	}
	k.marker.Verify = &st
	k.marker.Note = stage.VerifyNote(st)
	return ctx.Err()
}

// stepMarkers returns the results of every task of the steps of a kind,
// in plan order.
func (k *task) stepMarkers(kind string) []*Marker {
	var out []*Marker
	for _, s := range k.plan.Steps {
		if s.Kind != kind {
			continue
		}
		for i := range s.Tasks {
			if m := k.wd.readMarker(k.spec.ID, s.Name, i); m != nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// mergeFixity writes the fixity list of the whole job: the header, then
// every host's list (each without its header line), sorted on file.
func (k *task) mergeFixity(ctx context.Context, lists []string, out string) error {
	if err := os.MkdirAll(k.sorter.TempDir, 0o755); err != nil {
		return err
	}
	body := filepath.Join(k.sorter.TempDir, "fixity-lines")
	if err := filterLines(lists, body); err != nil {
		return err
	}
	sorted := body + "-sorted"
	if err := k.sorter.Sort(ctx, fixityOrder.Command, []string{body}, sorted); err != nil {
		return err
	}
	in, err := os.Open(sorted)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := io.WriteString(f, stage.FixityHeader); err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		return err
	}
	return f.CommitRenamed()
}

// filterLines copies the lines of files that are not comments into out.
func filterLines(files []string, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, name := range files {
		in, err := os.Open(name)
		if err != nil {
			f.Close()
			return err
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
				w.WriteString(l)
				w.WriteByte('\n')
			}
		}
		err = sc.Err()
		in.Close()
		if err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fixityOrder sorts the lines of a fixity list on file name.
var fixityOrder = &manifest.Order{Name: "file", Command: "LC_ALL=C sort -k1,1"}

// countLines counts the lines of a manifest.
func countLines(name string) (int64, error) {
	var n int64
	err := stage.EachLine(name, func(*manifest.Line) error {
		n++
		return nil
	})
	return n, err
}
