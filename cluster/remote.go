package cluster

import (
	"bufio"
	"bytes"
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
// a binary search of the block's lines in the log (a block's entries are
// in increasing old offset, and each line gives where its record went),
// so that memory does not grow with the log's entries, only with the
// replacements of the files named (a few tens of bytes each), and a
// record's follow reads a few kilobytes of the log, not the block.
type hostLog struct {
	name  string
	since int64

	mu       sync.Mutex
	read     int64 // bytes of the log taken in
	versions map[string][]version
	// followed counts the bytes of the log read to follow records.
	followed int64
}

// version is one replacement of a file: its size before and after, and
// where its entries' lines are in the log.
type version struct {
	oldSize, newSize int64
	entries, end     int64 // the first entry's line, and the line after the last
}

// followWindow is the most bytes of a block's lines read whole to follow
// a record: the binary search narrows the block to this first.
const followWindow = 8 << 10

func newHostLog(name string, since int64) *hostLog {
	return &hostLog{name: name, since: since, read: since, versions: map[string][]version{}}
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
	vs := l.versions[file]
	if len(vs) == 0 {
		return size, at, nil
	}
	f, err := os.Open(l.name)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	for _, v := range vs {
		if at, err = l.follow(f, v, at); err != nil {
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

// follow returns where the record at off before the replacement v stands
// after it (rewritelog.Block.Follow). The block's lines are narrowed by
// a binary search on their old offsets to a window that starts with the
// last entry at or before off (or with the block's first), and the
// window's entries followed as a Block: its first entry's shift, which
// its line gives (new offset less old), is that of the entries before.
func (l *hostLog) follow(f io.ReaderAt, v version, off int64) (int64, error) {
	lo, hi := v.entries, v.end // line starts; the entry sought is in [lo, hi)
	for hi-lo > followWindow {
		s, line, err := l.lineAfter(f, lo+(hi-lo)/2, hi)
		if err != nil {
			return 0, err
		}
		if line == nil {
			break // a few long lines
		}
		e, err := rewritelog.ParseEntry(line)
		if err != nil {
			return 0, fmt.Errorf("%s: the line at byte %d: %w", l.name, s, err)
		}
		if e.OldOffset <= off {
			lo = s
		} else {
			hi = s
		}
	}
	window := make([]byte, hi-lo)
	if _, err := f.ReadAt(window, lo); err != nil {
		return 0, fmt.Errorf("%s: %w", l.name, err)
	}
	l.followed += hi - lo
	var entries []rewritelog.Entry
	for line := range bytes.Lines(window) {
		if line = bytes.TrimSuffix(line, []byte("\n")); len(line) == 0 {
			continue
		}
		e, err := rewritelog.ParseEntry(line)
		if err != nil {
			return 0, fmt.Errorf("%s: in the lines from byte %d: %w", l.name, lo, err)
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 || entries[0].OldOffset > off {
		return off, nil // before every record the block rewrote
	}
	moved, err := rewritelog.NewBlock(entries).Follow(off)
	if err != nil {
		return 0, err
	}
	return moved + entries[0].NewOffset - entries[0].OldOffset, nil
}

// lineAfter returns the first line of the log that starts after byte at
// and before end, and where it starts; nil if none does.
func (l *hostLog) lineAfter(f io.ReaderAt, at, end int64) (int64, []byte, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, at, end-at), 4<<10)
	s := at
	for {
		part, err := r.ReadSlice('\n')
		s += int64(len(part))
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			l.followed += s - at
			return 0, nil, nil // the line at at runs to end
		}
	}
	line, err := r.ReadBytes('\n')
	l.followed += s - at + int64(len(line))
	if err != nil {
		return 0, nil, fmt.Errorf("%s: the line at byte %d is cut", l.name, s)
	}
	return s, line[:len(line)-1], nil
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
				b = &logBlock{file: fx.File, dry: fx.NewSum == "-", v: version{oldSize: fx.OldSize, newSize: fx.NewSize, entries: end}}
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
