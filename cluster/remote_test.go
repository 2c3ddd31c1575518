package cluster

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"warcdedup/rewritelog"
	"warcdedup/source"
)

// A file of 1000 bytes and its rewrite: the record at 200 (300 bytes)
// becomes a revisit of 100 bytes, and the one at 700 (200 bytes) one of 50,
// so the record at 600 moves to 400 and the file is 650 bytes long.
var (
	v0 = func() []byte {
		b := make([]byte, 1000)
		for i := range b {
			b[i] = byte(i*7 + i/13)
		}
		return b
	}()
	v1 = func() []byte {
		b := append([]byte(nil), v0[:200]...)
		b = append(b, bytes.Repeat([]byte{'r'}, 100)...)
		b = append(b, v0[500:700]...)
		b = append(b, bytes.Repeat([]byte{'s'}, 50)...)
		return append(b, v0[900:]...)
	}()
)

// logBlockText is a log's "# file" line for d/a.warc and, of its two
// entries, the first n.
func logBlockText(n int) string {
	fx := rewritelog.Fixity{File: "d/a.warc", OldSize: 1000, OldSum: "aa", NewSize: 650, NewSum: "bb"}
	b := append(fx.AppendTo(nil), '\n')
	for i, e := range []rewritelog.Entry{
		{File: "d/a.warc", OldOffset: 200, OldLength: 300, NewOffset: 200, NewLength: 100, Kind: rewritelog.Revisit, PayloadDigest: "sha1:X", RefersToURI: "http://e/", RefersTo: "2020-01-01T00:00:00Z"},
		{File: "d/a.warc", OldOffset: 700, OldLength: 200, NewOffset: 500, NewLength: 50, Kind: rewritelog.Revisit, PayloadDigest: "sha1:Y", RefersToURI: "http://e/", RefersTo: "2020-01-01T00:00:00Z"},
	} {
		if i < n {
			b = append(e.AppendTo(b), '\n')
		}
	}
	return string(b)
}

// TestRemoteFiles proves that an original on another host is read from
// the version of its file the host's log names: while the host has
// replaced the file but not logged it yet, the reader waits and reads
// again, and gets the record's bytes at its new place; a version the log
// never names fails after the wait with the sizes said.
func TestRemoteFiles(t *testing.T) {
	var content atomic.Pointer[[]byte]
	content.Store(&v0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "a.warc", time.Time{}, bytes.NewReader(*content.Load()))
	}))
	defer srv.Close()
	logName := filepath.Join(t.TempDir(), "rewrite.log")
	h := source.NewHTTP(2)
	h.Backoff = time.Millisecond
	r := &remoteFiles{http: h, wait: 5 * time.Second, files: map[string]*remoteFile{
		"d/a.warc": {url: srv.URL + "/d/a.warc", size: 1000, log: rewritelog.NewTail(logName, 0)},
	}}
	read := func() ([]byte, error) {
		body, err := r.Open(context.Background(), "d/a.warc", 600, 100)
		if err != nil {
			return nil, err
		}
		defer body.Close()
		return io.ReadAll(body)
	}
	want := v0[600:700]
	if got, err := read(); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the hashed version: %v", err)
	}

	// Replaced, logged 300 ms later.
	content.Store(&v1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		os.WriteFile(logName, []byte("# run 2026-01-01T00:00:00Z\n"+logBlockText(2)), 0o644)
	}()
	start := time.Now()
	if got, err := read(); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the new version: %v (%q)", err, got)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("read after %v: before the log named the version", d)
	}

	// Replaced again, never logged.
	v2 := v1[:640]
	content.Store(&v2)
	r.wait = 300 * time.Millisecond
	_, err := read()
	var se *source.SizeError
	if !errors.As(err, &se) || se.Want != 650 || se.Got != 640 {
		t.Fatalf("err %v, want the sizes 650 and 640 said", err)
	}
}
