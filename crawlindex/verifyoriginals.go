package crawlindex

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/record"
)

// A crawl's files may be whole, of the size and even the SHA-256 the
// commit recorded, and the index still wrong about them: an index
// imported from CDX lines that were not the files', a crawl recorded
// again after its packages were written anew, a file recorded with no
// SHA-256 and changed since. What a later crawl's revisits rest on is
// that each original the index names is at its place: the record at that
// offset of that file has that payload digest. VerifyOriginals reads
// every one there. The originals are sorted on digest; listed in the
// order of their files and offsets (the system sort), each file is
// opened once and read forward, whatever the size of the index: memory
// does not grow with it.

// OriginalsCheck is how VerifyOriginals lists, sorts and reads.
type OriginalsCheck struct {
	// TempDir holds the originals listed and sorted by place ("" is the
	// system's temporary directory).
	TempDir string
	// Sort sorts the manifest file in into out in the order command
	// gives (manifest.ByFile's): the system sort.
	Sort func(ctx context.Context, command, in, out string) error
	// Digest is the payload digest, in the algorithm and form of want
	// (field 6 of a manifest line), of the one record r holds whole,
	// named name in messages; an error says why there is none (no such
	// record there, damage, not one record).
	Digest func(r io.Reader, name, want string) (string, error)
	// Note, if set, receives each original of an imported crawl found
	// no original (OriginalsStats.NoOriginal), naming its file and
	// offset.
	Note func(string)
}

// OriginalsStats counts what VerifyOriginals read and found.
type OriginalsStats struct {
	Originals int64 // read at their place
	Bytes     int64 // the records' bytes read
	Files     int64 // files opened
	Remote    int64 // originals of crawls served over HTTP: not read
	// NoOriginal counts the originals of imported crawls that are no
	// originals (NoOriginal): responses cut short by their crawler
	// (WARC-Truncated), segments (WARC-Segment-Number), or records of
	// another kind than a response that their index line listed as a 200
	// capture. A CDX line cannot show it, nothing the operator can mend,
	// and a run leaves them out (stage.Resolve), so they are noted, not
	// problems.
	NoOriginal int64
	Problems   int64
}

// VerifyOriginals reads every original of the committed generation at
// its place (the file of its crawl's location, its offset and length)
// and checks that the record there has the payload digest the index
// gives, each problem (naming the crawl, file, offset and digest) going
// to report; the error is one that stopped the check.
func (ix *Index) VerifyOriginals(ctx context.Context, opt OriginalsCheck, report func(string)) (OriginalsStats, error) {
	var st OriginalsStats
	if !ix.Exists() {
		return st, fmt.Errorf("%s: %w", ix.Dir, ErrNoIndex)
	}
	tmp, err := os.MkdirTemp(opt.TempDir, atomicfile.TempPrefix+"originals-")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(tmp)
	listed, sorted := filepath.Join(tmp, "originals.manifest"), filepath.Join(tmp, "originals-by-file.manifest")
	if err := ix.listOriginals(listed); err != nil {
		return st, err
	}
	if err := opt.Sort(ctx, manifest.ByFile.Command, listed, sorted); err != nil {
		return st, err
	}
	if err := os.Remove(listed); err != nil {
		return st, err
	}
	f, err := os.Open(sorted)
	if err != nil {
		return st, err
	}
	defer f.Close()
	in := manifest.NewReader(bufio.NewReaderSize(f, 256<<10), sorted)
	in.RequireFields(6)
	in.RequireOrder(manifest.ByFile)
	p := &placeReader{ix: ix, opt: opt, st: &st, report: report}
	defer p.close()
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		l, err := in.Next()
		if err == io.EOF {
			// The last file's originals not read are counted before the
			// figures are returned (a deferred close counted them after).
			p.close()
			return st, nil
		}
		if err != nil {
			return st, err
		}
		if err := p.check(&l); err != nil {
			return st, err
		}
	}
}

// listOriginals writes every original of the index to the file name.
func (ix *Index) listOriginals(name string) error {
	r, err := ix.Originals()
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := os.Create(name)
	if err != nil {
		return err
	}
	defer out.Close()
	w := manifest.NewWriter(out)
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := w.Write(&l); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Close()
}

// placeReader reads originals sorted by file and offset at their place,
// one file open at a time.
type placeReader struct {
	ix     *Index
	opt    OriginalsCheck
	st     *OriginalsStats
	report func(string)

	file   string   // the current file, as the index names it
	path   string   // its path
	f      *os.File // open, or nil
	size   int64    // its size
	remote bool     // of a crawl served over HTTP: not read
	// imported: of a crawl committed from CDX lines alone, which may
	// name a record cut short.
	imported bool
	failed   error // why it could not be opened
	skipped  int64 // its originals not read for that
}

func (p *placeReader) problem(format string, args ...any) {
	p.st.Problems++
	p.report(fmt.Sprintf(format, args...))
}

// check reads the original l at its place.
func (p *placeReader) check(l *manifest.Line) error {
	if l.File != p.file {
		p.close()
		if stop := p.open(l.File); stop != nil {
			return stop
		}
	}
	if p.path == "" {
		if p.remote {
			p.st.Remote++
		}
		return nil // not read: remote, or not a committed crawl's (Verify names it)
	}
	if p.failed != nil {
		p.skipped++
		return nil
	}
	crawl := CrawlOf(p.file)
	if l.Offset+l.Length > p.size {
		p.st.Originals++
		p.problem("crawl %s: %s: offset %d: the index has an original of %s there (%d bytes), past the file's end (%d bytes)", crawl, p.path, l.Offset, l.Digest, l.Length, p.size)
		return nil
	}
	name := fmt.Sprintf("%s (the record at offset %d)", p.path, l.Offset)
	got, err := p.opt.Digest(io.NewSectionReader(p.f, l.Offset, l.Length), name, l.Digest)
	p.st.Originals++
	p.st.Bytes += l.Length
	var cut string
	if err != nil && p.imported {
		// Read again only when the digest could not be taken: what an
		// imported crawl's index line could not show.
		cut = NoOriginal(func() io.Reader { return io.NewSectionReader(p.f, l.Offset, l.Length) }, name, l.Length)
	}
	switch {
	case cut != "":
		p.st.NoOriginal++
		if p.opt.Note != nil {
			p.opt.Note(fmt.Sprintf("crawl %s: %s: offset %d: the index has an original of %s there (%d bytes), which is %s: its crawl was imported from index lines, which cannot show it; runs leave it out and keep their own copies", crawl, p.path, l.Offset, l.Digest, l.Length, cut))
		}
	case err != nil:
		p.problem("crawl %s: %s: offset %d: the index has an original of %s there (%d bytes), which cannot be read there: %v", crawl, p.path, l.Offset, l.Digest, l.Length, err)
	case got != l.Digest:
		p.problem("crawl %s: %s: offset %d: the index has an original of %s there (%d bytes); the record there has payload digest %s", crawl, p.path, l.Offset, l.Digest, l.Length, got)
	}
	return nil
}

// open makes the file the index names file the current one.
func (p *placeReader) open(file string) error {
	p.file, p.path, p.f, p.remote, p.imported, p.failed, p.skipped = file, "", nil, false, false, nil, 0
	name, err := manifest.UnescapeFile(file)
	if err != nil {
		return fmt.Errorf("index: original in %q: %w", file, err)
	}
	crawl := CrawlOf(name)
	k := p.ix.Registry.Crawl(crawl)
	if k == nil {
		return nil
	}
	if strings.Contains(k.Location, "://") {
		p.remote = true
		return nil
	}
	p.imported = k.Imported
	p.path = filepath.Join(k.Location, filepath.FromSlash(strings.TrimPrefix(name, crawl+"/")))
	p.f, p.failed = os.Open(p.path)
	if p.failed != nil {
		return nil
	}
	fi, err := p.f.Stat()
	if err != nil {
		p.f.Close()
		p.f, p.failed = nil, err
		return nil
	}
	p.size = fi.Size()
	p.st.Files++
	return nil
}

// close closes the current file, naming its originals not read.
func (p *placeReader) close() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	if p.failed != nil {
		p.problem("crawl %s: %s: the index has %d originals in it, not read: %v", CrawlOf(p.file), p.path, p.skipped, p.failed)
		p.failed = nil
	}
}

// CutShort is what cuts short the record at the start of r, named name:
// a response with WARC-Truncated or WARC-Segment-Number, which is never
// a copy of another; "" for anything else (another record, no record,
// damage). Only a crawl imported from index lines has such originals.
func CutShort(r io.Reader, name string) string {
	rr, err := record.NewReader(r, name)
	if err != nil {
		return ""
	}
	rec, err := manifest.NextRecord(rr)
	if err != nil || rec.Offset != 0 || rec.Type != "response" {
		return ""
	}
	if v, ok := rec.Header.Lookup("WARC-Truncated"); ok {
		return fmt.Sprintf("a response its crawler cut short (WARC-Truncated: %s)", v)
	}
	if v, ok := rec.Header.Lookup("WARC-Segment-Number"); ok {
		return fmt.Sprintf("one segment of a record (WARC-Segment-Number: %s)", v)
	}
	return ""
}
