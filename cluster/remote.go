package cluster

import (
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

// hostLog is another host's rewrite log as far as it has been read: the
// versions of each file that its entries since the job's hash name.
type hostLog struct {
	name  string
	since int64

	mu       sync.Mutex
	read     int64 // bytes of the log taken in
	versions map[string][]*version
}

// version is one replacement of a file: its size before and after, and
// how its entries moved the records.
type version struct {
	oldSize, newSize int64
	block            rewritelog.Block
}

func newHostLog(name string, since int64) *hostLog {
	return &hostLog{name: name, since: since, read: since, versions: map[string][]*version{}}
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
		if at, err = v.block.Follow(at); err != nil {
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

// refresh takes in the whole blocks the log has gained: a "# file" line
// and its entries, whole when the entries account for the change of size
// (a rewrite's entries each shorten the file, so no part of a block
// does). A block still being written is left for the next refresh.
func (l *hostLog) refresh() error {
	f, err := os.Open(l.name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, l.read, 1<<62))
	if err != nil {
		return err
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1] // whole lines only
	var b *logBlock
	used := 0 // bytes of data taken in
	// closeBlock takes in the open block if it is whole, and reports
	// whether it was.
	closeBlock := func(end int) bool {
		if b == nil {
			return true
		}
		v := b.v
		if v.oldSize-v.block.Saved() != v.newSize {
			return false
		}
		if !b.dry {
			l.versions[b.file] = append(l.versions[b.file], v)
		}
		b, used = nil, end
		return true
	}
	for pos := 0; pos < len(data); {
		end := pos + bytes.IndexByte(data[pos:], '\n') + 1
		line := data[pos : end-1]
		switch {
		case len(line) > 0 && line[0] == '#':
			if !closeBlock(pos) {
				l.read += int64(used)
				return nil
			}
			fx, ok, err := rewritelog.ParseFixity(line)
			if err != nil {
				return fmt.Errorf("%s: %w", l.name, err)
			}
			if ok {
				b = &logBlock{file: fx.File, dry: fx.NewSum == "-", v: &version{oldSize: fx.OldSize, newSize: fx.NewSize}}
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
			b.v.block.Add(&e)
		default:
			if b == nil {
				used = end
			}
		}
		pos = end
	}
	closeBlock(len(data))
	l.read += int64(used)
	return nil
}

// logBlock is a file's block of a log being read.
type logBlock struct {
	file string
	dry  bool // a dry run's: it moves nothing
	v    *version
}
