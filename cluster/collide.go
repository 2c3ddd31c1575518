package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"warcdedup/internal/tsv"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/source"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// The collisions steps' files, in the work directory's collide/ (and a
// host's directory for its own).
const (
	collideDir        = "collide"
	collideLogFile    = "logs-since-hash.log" // the hosts' rewrite logs' entries of the first rewrite, one log
	collideSizesFile  = "sizes.tsv"           // each file of the collection: its size after the first rewrite
	collideHostPrefix = "by-file-"            // the lines of a host's files numbered again, on file
)

// CollideResult is what the collisions task found: the Collide stage's
// result and the size of each host's rewrite log when it read it, where
// the second rewrite's entries begin.
type CollideResult struct {
	stage.CollideResult
	LogSizes []int64 `json:"log_sizes"`
}

// collide resolves byte for byte, over HTTP, the digests whose duplicates
// the hosts' rewrites kept apart from their original (stage.Collide, as
// warcdedup run's collisions stage): every host's rewrite is done, so the
// files stand still, their offsets moved by the entries each host logged
// since its hash. The new numbering is split by host, on file, for each
// host's second rewrite (rewriteCollisions).
func (k *task) collide(ctx context.Context) error {
	hashed, err := k.hashMarkers()
	if err != nil {
		return err
	}
	files, err := k.collectionFiles()
	if err != nil {
		return err
	}
	dir := k.wd.file(collideDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(k.sorter.TempDir, 0o755); err != nil {
		return err
	}
	// One log of the first rewrite's entries, every host's: each file is
	// in one host's, so their blocks compose as the hosts' logs do.
	sizes := make([]int64, len(k.spec.Hosts))
	merged := filepath.Join(k.sorter.TempDir, collideLogFile)
	out, err := os.Create(merged)
	if err != nil {
		return err
	}
	for i := range k.spec.Hosts {
		name := k.wd.host(&k.spec.Hosts[i], workdir.LogFile)
		in, err := os.Open(name)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			out.Close()
			return err
		}
		fi, err := in.Stat()
		if err == nil {
			sizes[i] = fi.Size()
			_, err = io.Copy(out, io.NewSectionReader(in, hashed[i].LogSize, sizes[i]-hashed[i].LogSize))
		}
		in.Close()
		if err != nil {
			out.Close()
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	// The files' sizes now, for the second rewrites' reads of other
	// hosts' files (remoteFiles from here on).
	if err := k.writeSizesNow(filepath.Join(dir, collideSizesFile), files, hashed); err != nil {
		return err
	}
	var apart []string
	for i := range k.spec.Hosts {
		apart = append(apart, k.wd.host(&k.spec.Hosts[i], workdir.ApartFile))
	}
	apartAll := filepath.Join(k.sorter.TempDir, "apart.manifest")
	if err := k.sorter.Merge(ctx, manifest.ByFile.Command, apart, apartAll); err != nil {
		return err
	}
	numbered := filepath.Join(k.sorter.TempDir, workdir.NumberedFile)
	if err := k.concatRanges(numbered); err != nil {
		return err
	}
	loc := &source.Locator{Locations: map[string]string{}, HTTP: k.httpClient()}
	for _, f := range files {
		loc.Locations[f.name] = k.spec.Hosts[f.host].FileURL(k.spec.relName(f.name))
	}
	open := loc.Files(source.KeptOpen)
	defer open.Close()
	c := stage.Collide{Apart: apartAll, Numbered: numbered, Log: merged, Source: open, Policy: k.policy, Jobs: k.spec.Jobs,
		Sorter: k.sorter, Also: stage.InARCFile, Out: filepath.Join(dir, workdir.CollideFile), Origins: filepath.Join(dir, workdir.CollideOrigins),
		Messages: k, Meter: k.prog}
	res, err := c.Run(ctx)
	if err != nil {
		return err
	}
	if err := k.splitCollide(ctx, filepath.Join(dir, workdir.CollideFile), files); err != nil {
		return err
	}
	k.marker.Collide = &CollideResult{CollideResult: res, LogSizes: sizes}
	k.marker.Note = res.Note()
	return nil
}

// writeSizesNow writes each file's size after the first rewrite: its
// size when hashed, moved by its host's log.
func (k *task) writeSizesNow(name string, files map[string]hostFile, hashed []*HashResult) error {
	logs := make([]*rewritelog.Tail, len(k.spec.Hosts))
	for i := range k.spec.Hosts {
		logs[i] = rewritelog.NewTail(k.wd.host(&k.spec.Hosts[i], workdir.LogFile), hashed[i].LogSize)
	}
	f, err := os.Create(name + ".tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for field, hf := range files {
		size, err := logs[hf.host].Size(hf.name, hf.size)
		if err != nil {
			f.Close()
			return err
		}
		fmt.Fprintf(w, "%s\t%d\n", field, size)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(name+".tmp", name)
}

// readSizesNow reads collide's sizes.tsv.
func readSizesNow(name string) (map[string]int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sizes := map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		field, size, ok := tsv.Cut(sc.Text())
		sz, err := strconv.ParseInt(size, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s:%d: want \"FILE SIZE\"", name, n)
		}
		sizes[field] = sz
	}
	return sizes, sc.Err()
}

// splitCollide writes the lines of each host's files of the new
// numbering, sorted on file, for its second rewrite.
func (k *task) splitCollide(ctx context.Context, collide string, files map[string]hostFile) error {
	parts := make([]hostPart, len(k.spec.Hosts))
	for i, h := range k.spec.Hosts {
		f, err := os.Create(filepath.Join(k.sorter.TempDir, "collide-"+h.Name))
		if err != nil {
			return err
		}
		defer f.Close()
		parts[i] = hostPart{f, bufio.NewWriter(f)}
	}
	var buf []byte
	err := stage.EachLine(collide, func(l *manifest.Line) error {
		if l.IsRevisit() {
			return nil
		}
		f, ok := files[l.File]
		if !ok {
			return fmt.Errorf("%s: %s is on no host", collide, l.File)
		}
		buf = l.Append(buf[:0])
		_, err := parts[f.host].w.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	for i, h := range k.spec.Hosts {
		if err := parts[i].w.Flush(); err != nil {
			return err
		}
		if err := k.sorter.Sort(ctx, manifest.ByFile.Command, []string{parts[i].f.Name()}, k.wd.file(collideDir, collideHostPrefix+h.Name)); err != nil {
			return err
		}
	}
	return nil
}

// rewriteCollisions rewrites what the new numbering allows in the host's
// files (warcdedup run's rewrite of the collisions), reading originals on
// other hosts over HTTP where their logs since the collisions task put
// them, then carries its revisits back to the hash stage's offsets
// (hosts/NAME/saved-collisions.tsv) for the account.
func (k *task) rewriteCollisions(ctx context.Context) error {
	h := k.host
	locks, err := k.lockHost() // stages.go
	if err != nil {
		return err
	}
	defer locks.Release()
	m := k.wd.readMarker(k.spec.ID, kindCollide, 0)
	if m == nil || m.Collide == nil {
		return fmt.Errorf("the collisions have not been resolved in this job")
	}
	files, err := k.collectionFiles()
	if err != nil {
		return err
	}
	sizes, err := readSizesNow(k.wd.file(collideDir, collideSizesFile))
	if err != nil {
		return err
	}
	local := &source.Locator{Roots: []string{h.Root}, HTTP: k.httpClient()}
	remote := &remoteFiles{local: local, http: k.httpClient(), files: map[string]*remoteFile{}, wait: k.spec.VersionWait}
	logs := make([]*rewritelog.Tail, len(k.spec.Hosts))
	var total int64
	for field, f := range files {
		if f.host == k.step.Host {
			total += sizes[field]
			continue
		}
		if logs[f.host] == nil {
			logs[f.host] = rewritelog.NewTail(k.wd.host(&k.spec.Hosts[f.host], workdir.LogFile), m.Collide.LogSizes[f.host])
		}
		remote.files[field] = &remoteFile{url: k.spec.Hosts[f.host].FileURL(k.spec.relName(f.name)), size: sizes[field], log: logs[f.host]}
	}
	collide := k.wd.file(collideDir, workdir.CollideFile)
	table, err := manifest.OpenTable(collide)
	if err != nil {
		return err
	}
	defer table.Close()
	byFile := k.wd.file(collideDir, collideHostPrefix+h.Name)
	in, err := os.Open(byFile)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(k.sorter.TempDir, 0o755); err != nil {
		return err
	}
	raw := filepath.Join(k.sorter.TempDir, "saved-collisions-now.tsv")
	rw := stage.Rewrite{In: manifest.NewReader(bufio.NewReaderSize(in, 256<<10), byFile), Originals: []*manifest.Table{table}, Open: remote,
		Roots: local.Roots, Log: k.wd.host(h, workdir.LogFile), LogFrom: m.Collide.LogSizes[k.step.Host],
		HardLinks: k.spec.HardLinks, SHA256: k.spec.withIndex(), Policy: k.policy, Jobs: k.spec.Jobs,
		Cache: k.wd.host(h, workdir.CacheDir), Algorithm: k.algo, Saved: raw, Apart: k.wd.host(h, workdir.ApartAgainFile), Total: total,
		Messages: k, Meter: k.prog}
	res, err := rw.Run(ctx)
	if err != nil {
		return err
	}
	back := stage.CollideBack{Origins: k.wd.file(collideDir, workdir.CollideOrigins), SavedNow: raw,
		Saved: k.wd.host(h, workdir.SavedCollisionsFile), Sorter: k.sorter}
	if err := back.Run(ctx); err != nil {
		return err
	}
	k.marker.Rewrite = &RewriteResult{RewriteResult: res, Remote: remote.stats}
	k.marker.Note = res.Note(false) + remote.stats.note()
	fmt.Fprintf(k.Log, "warcdedup: %s: %s\n", k.name(), k.marker.Note)
	return nil
}
