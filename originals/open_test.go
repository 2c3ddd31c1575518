package originals_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"io"
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
