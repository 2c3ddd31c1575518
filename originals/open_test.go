package originals_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/rewritelog"
	"warcdedup/source"
)

// shifted is a Mover that says every record of one file moved by delta,
// or was rewritten.
type shifted struct {
	file  string
	delta int64
	err   error
}

func (s shifted) Move(file string, off int64) (int64, error) {
	if file != s.file {
		return off, nil
	}
	return off + s.delta, s.err
}

// TestOpenMoves proves that an original is read where the Mover given to
// Open puts it, and where its line says without one: the log that moves
// offsets is an input of each read, not a setting of the Originals.
func TestOpenMoves(t *testing.T) {
	const payload = "the original's payload"
	pad := warctest.Response("http://example.com/pad", "2024-01-01T00:00:00Z", "padding")
	orig := warctest.Response("http://example.com/o", "2024-01-02T00:00:00Z", payload)
	sum := sha1.Sum([]byte(payload))
	line := manifest.Line{File: "o.warc", Offset: int64(len(pad)), Length: int64(len(orig)), URI: "http://example.com/o",
		Date: "2024-01-02T00:00:00Z", Digest: digest.SHA1.Format(sum[:]), Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}
	text := line.Append(nil)
	tab, err := manifest.NewTable(bytes.NewReader(text), int64(len(text)), "originals.manifest")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		file  string // o.warc as it is on disk
		moves originals.Mover
		want  error // nil: the original is read
	}{
		{"where the line says, no mover", pad + orig, nil, nil},
		{"moved back by a replacement of the padding", orig, shifted{"o.warc", -int64(len(pad)), nil}, nil},
		{"not moved, the file shortened", orig, nil, manifest.ErrNotARecord},
		{"rewritten by a run", pad + orig, shifted{"o.warc", 0, rewritelog.ErrRewritten}, rewritelog.ErrRewritten},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			warctest.WriteFile(t, dir, "o.warc", []byte(tt.file))
			o, err := originals.New(&source.Locator{Roots: []string{dir}}, tab)
			if err != nil {
				t.Fatal(err)
			}
			l := line
			got, body, err := o.Open(context.Background(), &l, policy.Replay, tt.moves)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("Open: %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			p := got.Payload
			if body != nil {
				p, err = io.ReadAll(body)
				body.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			if string(p) != payload || got.URI != line.URI {
				t.Errorf("read %s %q, want %s %q", got.URI, p, line.URI, payload)
			}
		})
	}
}

// TestOpenAfterReplace proves that an original read after its file was
// replaced (under Lock, as the rewrite and undo replace files) is read
// from the new version, although the Originals keep the files they read
// open (KeepOpen, as the rewrite does): the old version, still open, has
// another record at the moved offset. Both reads stream the payload (over payloadInline), so neither
// comes from the payload cache.
// The same holds when the replacement named the file in another spelling
// of field 1 (the duplicates' manifest "o.warc", the originals'
// "o%2Ewarc", both the file o.warc): the lock of a replacement and the
// files kept open go by the file, not by its spelling, as the log's moves
// do (kept open under one spelling and left so by Lock of the other, the
// old version was read at the moved offset: another record).
func TestOpenAfterReplace(t *testing.T) {
	payload := strings.Repeat("the original's payload ", 20000)
	pad := warctest.Response("http://example.com/pad", "2024-01-01T00:00:00Z", "padding")
	orig := warctest.Response("http://example.com/o", "2024-01-02T00:00:00Z", payload)
	sum := sha1.Sum([]byte(payload))
	tests := []struct{ origSpelling, replaceSpelling string }{
		{"o.warc", "o.warc"},
		{"o%2Ewarc", "o.warc"},
		{"o.warc", "o%2ewarc"},
	}
	for _, tt := range tests {
		t.Run(tt.origSpelling+" replaced as "+tt.replaceSpelling, func(t *testing.T) {
			line := manifest.Line{File: tt.origSpelling, Offset: int64(len(pad)), Length: int64(len(orig)), URI: "http://example.com/o",
				Date: "2024-01-02T00:00:00Z", Digest: digest.SHA1.Format(sum[:]), Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}
			text := line.Append(nil)
			tab, err := manifest.NewTable(bytes.NewReader(text), int64(len(text)), "originals.manifest")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := warctest.WriteFile(t, dir, "o.warc", []byte(pad+orig))
			o, err := originals.New(&source.Locator{Roots: []string{dir}}, tab)
			if err != nil {
				t.Fatal(err)
			}
			defer o.KeepOpen()()
			read := func(moves originals.Mover) {
				t.Helper()
				l := line
				got, body, err := o.Open(context.Background(), &l, policy.Replay, moves)
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if body == nil {
					t.Fatal("the payload came from memory, not from the file")
				}
				p, err := io.ReadAll(body)
				body.Close()
				if err != nil || string(p) != payload || got.URI != line.URI {
					t.Fatalf("read %s, %d bytes (%v), want %s, %d bytes", got.URI, len(p), err, line.URI, len(payload))
				}
			}
			read(nil)
			lock := o.Lock(tt.replaceSpelling)
			lock.Lock()
			if err := os.WriteFile(path+".new", []byte(orig), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
			lock.Unlock()
			// The log moves offsets by the file's name (unescaped).
			read(shifted{"o.warc", -int64(len(pad)), nil})
		})
	}
}
