package originals_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/policy"
	"warcdedup/source"
)

// TestNotePayloadDigest proves that an original's payload is known to
// have a digest only once noted with its line's digest (a duplicate equal
// to it hashed whole to it), only for that digest, and only when the
// payload is kept in memory, where it cannot change: the rewrite trusts it
// instead of hashing the duplicates compared with it.
func TestNotePayloadDigest(t *testing.T) {
	small := "the original's payload"
	large := strings.Repeat("the original's payload ", 20000) // over what is kept in memory
	other := sha1.Sum([]byte("another payload"))
	tests := []struct {
		name    string
		payload string
		noted   string // the digest noted: "line", "other" or none
		asked   string // the digest asked about: "line" or "other"
		want    bool
	}{
		{"in memory, noted with its line's digest", small, "line", "line", true},
		{"in memory, not noted", small, "", "line", false},
		{"in memory, noted with another digest", small, "other", "line", false},
		{"in memory, noted with its line's, asked of another", small, "line", "other", false},
		{"streamed, noted with its line's digest", large, "line", "line", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := warctest.Response("http://example.com/o", "2024-01-02T00:00:00Z", tt.payload)
			sum := sha1.Sum([]byte(tt.payload))
			line := manifest.Line{File: "o.warc", Length: int64(len(rec)), URI: "http://example.com/o",
				Date: "2024-01-02T00:00:00Z", Digest: digest.SHA1.Format(sum[:]), Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}
			digests := map[string]string{"line": line.Digest, "other": digest.SHA1.Format(other[:])}
			text := line.Append(nil)
			tab, err := manifest.NewTable(bytes.NewReader(text), int64(len(text)), "originals.manifest")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			warctest.WriteFile(t, dir, "o.warc", []byte(rec))
			o, err := originals.New(&source.Locator{Roots: []string{dir}}, tab)
			if err != nil {
				t.Fatal(err)
			}
			got, body, err := o.Open(context.Background(), &line, policy.Replay, nil)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if body != nil {
				body.Close()
			}
			if tt.noted != "" {
				got.NotePayloadDigest(digests[tt.noted])
			}
			if has := got.PayloadHasDigest(digests[tt.asked]); has != tt.want {
				t.Errorf("PayloadHasDigest %v, want %v", has, tt.want)
			}
		})
	}
}
