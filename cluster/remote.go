package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// log is its host's rewrite log from where it stood when the host
	// hashed it: where the file's records are now.
	log *rewritelog.Tail
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
		size, at, err := rf.log.Where(name, rf.size, offset)
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
