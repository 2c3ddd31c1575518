package cluster

import (
	"bufio"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/rewritelog"
	"warcdedup/source"
)

// remoteFiles opens the records of a rewrite's originals: those in the
// host's own files from its root (the rewrite moves their offsets itself),
// those in other hosts' files over HTTP. The other hosts rewrite their
// files at the same time, and a rewritten file is shorter, so an original
// there is not where the manifest says once the file is replaced. Each
// host logs every replacement in its rewrite log, on the shared work
// directory, before the next file's: the "# file" line gives the file's
// sizes before and after, and the entries how its records moved. Every
// version of a file has its own size (a rewrite only shortens it), so the
// size a server reports with the bytes (Content-Range) says which version
// they are from: remoteFiles asks for the record where the latest version
// the log names has it, with that size required (source.HTTP.OpenSized),
// and when the server has another version, reads the log again and asks
// again, until the log names the version (the host logs a replaced file
// right after the rename) or VersionWait has passed.
type remoteFiles struct {
	local originals.Opener // the host's own files
	http  *source.HTTP
	files map[string]*remoteFile // by manifest field 1, the other hosts' files
	wait  time.Duration

	mu    sync.Mutex
	stats RemoteStats
}

// RemoteStats counts a rewrite's reads of originals on other hosts.
type RemoteStats struct {
	Reads int64 `json:"reads"` // originals read from another host
	Bytes int64 `json:"bytes"` // their bytes as stored
	// Moved counts those read from a version of their file that its
	// host's rewrite had replaced, at the place its log gave.
	Moved int64 `json:"moved"`
	// Again counts reads asked again because the host had replaced the
	// file but not logged it yet.
	Again int64 `json:"again"`
}

// note says what a rewrite read from other hosts, after its stage's note.
func (s RemoteStats) note() string {
	return fmt.Sprintf("; %s originals read from other hosts, %s of them in files replaced since", progress.Count(s.Reads), progress.Count(s.Moved))
}

// remoteFile is a file on another host.
type remoteFile struct {
	url  string
	size int64 // when the host hashed it
	log  *hostLog
}

func (r *remoteFiles) Open(ctx context.Context, file string, offset, length int64) (io.ReadCloser, error) {
	rf, ok := r.files[file]
	if !ok {
		return r.local.Open(ctx, file, offset, length)
	}
	name, err := manifest.UnescapeFile(file)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(r.wait)
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		size, at, err := rf.log.locate(name, rf.size, offset)
		if err != nil {
			return nil, fmt.Errorf("%s: offset %d: %w", name, offset, err)
		}
		body, err := r.http.OpenSized(ctx, rf.url, at, length, size)
		var other *source.SizeError
		if !errors.As(err, &other) || time.Now().After(deadline) {
			if err == nil {
				r.mu.Lock()
				r.stats.Reads++
				r.stats.Bytes += length
				if size != rf.size {
					r.stats.Moved++
				}
				r.mu.Unlock()
			}
			return body, err
		}
		r.mu.Lock()
		r.stats.Again++
		r.mu.Unlock()
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// hostLog is another host's rewrite log as far as it has been read: where
// the blocks of each file that its entries since the job's hash name are
// in the log, not their entries. A record is followed through a block by
// reading the block again from the log (rewritelog.Reader, which checks
// it); the blocks read last are kept, up to budget entries in all, so
// that memory does not grow with the log's entries (about 32 bytes each
// held), only with the replacements of the files named.
type hostLog struct {
	name  string
	since int64
	// budget is the most entries kept of the blocks read again; a block
	// larger than it is read for each record followed through it.
	budget int

	mu       sync.Mutex
	read     int64 // bytes of the log taken in
	versions map[string][]version
	cache    blockCache
}

// hostLogBudget is a hostLog's budget: 2^20 entries, about 32 MB.
const hostLogBudget = 1 << 20

// version is one replacement of a file: its size before and after, and
// where its block (its "# file" line and its entries) is in the log.
type version struct {
	oldSize, newSize int64
	start, end       int64
}

func newHostLog(name string, since int64) *hostLog {
	return &hostLog{name: name, since: since, read: since, budget: hostLogBudget, versions: map[string][]version{}}
}

// locate returns the size of the latest version of file that the log names
// (size0, the size when hashed, when none) and where the record at offset
// of the hashed version stands in it. The log is read again first.
func (l *hostLog) locate(file string, size0, offset int64) (size, at int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refresh(); err != nil {
		return 0, 0, err
	}
	size, at = size0, offset
	for _, v := range l.versions[file] {
		b, err := l.block(v)
		if err != nil {
			return 0, 0, err
		}
		if at, err = b.Follow(at); err != nil {
			return 0, 0, err
		}
		size = v.newSize
	}
	return size, at, nil
}

// sizeNow returns the size of the latest version of file that the log
// names (size0, the size when hashed, when none).
func (l *hostLog) sizeNow(file string, size0 int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refresh(); err != nil {
		return 0, err
	}
	if vs := l.versions[file]; len(vs) > 0 {
		return vs[len(vs)-1].newSize, nil
	}
	return size0, nil
}

// block returns the Block of v's entries, from the cache or read again
// from the log.
func (l *hostLog) block(v version) (rewritelog.Block, error) {
	if b, ok := l.cache.get(v.start); ok {
		return b, nil
	}
	f, err := os.Open(l.name)
	if err != nil {
		return rewritelog.Block{}, err
	}
	defer f.Close()
	// The block read on its own: its entries are checked against its
	// "# file" line, an error names the block.
	r := rewritelog.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, v.start, v.end-v.start), 64<<10),
		fmt.Sprintf("%s (the block at byte %d)", l.name, v.start))
	var b rewritelog.Block
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rewritelog.Block{}, err
		}
		b.Add(e)
	}
	if v.oldSize-b.Saved() != v.newSize {
		return rewritelog.Block{}, fmt.Errorf("%s: the block at byte %d changed since it was read", l.name, v.start)
	}
	l.cache.put(v.start, b, l.budget)
	return b, nil
}

// refresh takes in the whole blocks the log has gained, reading it from
// where the last refresh stopped, a line at a time: a "# file" line and
// its entries, whole when the entries account for the change of size (a
// rewrite's entries each shorten the file, so no part of a block does).
// A block still being written is left for the next refresh.
func (l *hostLog) refresh() error {
	f, err := os.Open(l.name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.NewSectionReader(f, l.read, 1<<62), 64<<10)
	var b *logBlock
	pos, used := l.read, l.read // pos: of the next line; used: taken in up to
	// closeBlock takes in the open block if it is whole, and reports
	// whether it was.
	closeBlock := func() bool {
		if b == nil {
			return true
		}
		if b.v.oldSize-b.saved != b.v.newSize {
			return false
		}
		b.v.end = pos
		if !b.dry {
			l.versions[b.file] = append(l.versions[b.file], b.v)
		}
		b, used = nil, pos
		return true
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("%s: a line at byte %d longer than %d bytes", l.name, pos, br.Size())
		}
		if err != nil { // a line half written, or none
			break
		}
		end := pos + int64(len(line))
		line = line[:len(line)-1]
		switch {
		case len(line) > 0 && line[0] == '#':
			if !closeBlock() {
				l.read = used
				return nil
			}
			fx, ok, err := rewritelog.ParseFixity(line)
			if err != nil {
				return fmt.Errorf("%s: %w", l.name, err)
			}
			if ok {
				b = &logBlock{file: fx.File, dry: fx.NewSum == "-", v: version{oldSize: fx.OldSize, newSize: fx.NewSize, start: pos}}
			} else {
				used = end
			}
		case len(line) > 0:
			e, err := rewritelog.ParseEntry(line)
			if err != nil {
				return fmt.Errorf("%s: %w", l.name, err)
			}
			if b == nil || e.File != b.file {
				return fmt.Errorf("%s: an entry of %s outside its file's block", l.name, e.File)
			}
			b.saved += e.OldLength - e.NewLength
		default:
			if b == nil {
				used = end
			}
		}
		pos = end
	}
	closeBlock()
	l.read = used
	return nil
}

// logBlock is a file's block of a log being read.
type logBlock struct {
	file  string
	dry   bool  // a dry run's: it moves nothing
	saved int64 // by its entries so far
	v     version
}

// blockCache holds the blocks a hostLog read last, by their place in the
// log, up to a number of entries in all.
type blockCache struct {
	entries int
	order   *list.List // of *cachedBlock, the last used first
	byStart map[int64]*list.Element
}

type cachedBlock struct {
	start int64
	b     rewritelog.Block
}

func (c *blockCache) get(start int64) (rewritelog.Block, bool) {
	e, ok := c.byStart[start]
	if !ok {
		return rewritelog.Block{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedBlock).b, true
}

// put keeps b, dropping the blocks used longest ago while the entries
// kept are more than budget; a block larger than the budget is not kept.
func (c *blockCache) put(start int64, b rewritelog.Block, budget int) {
	if b.Len() > budget {
		return
	}
	if c.order == nil {
		c.order, c.byStart = list.New(), map[int64]*list.Element{}
	}
	for c.entries+b.Len() > budget {
		last := c.order.Back()
		cb := c.order.Remove(last).(*cachedBlock)
		delete(c.byStart, cb.start)
		c.entries -= cb.b.Len()
	}
	c.byStart[start] = c.order.PushFront(&cachedBlock{start: start, b: b})
	c.entries += b.Len()
}
