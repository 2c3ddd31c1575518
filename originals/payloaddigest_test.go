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

// TestOpenPayloadDigest proves that an original kept in memory carries the
// digest its payload hashes to, computed when read, which the rewrite
// trusts instead of hashing each duplicate compared with it: the line's
// digest when the payload is the one hashed, another when the file changed
// since the manifest was made (a stale manifest), and none for a payload
// streamed from the file (the duplicate is hashed then).
func TestOpenPayloadDigest(t *testing.T) {
	small := "the original's payload"
	large := strings.Repeat("the original's payload ", 20000) // over what is kept in memory
	tests := []struct {
		name    string
		payload string // what the manifest hashed
		stored  string // what the file holds now, of the same length
		want    func(lineDigest string) string
	}{
		{"kept in memory, as hashed", small, small, func(d string) string { return d }},
		{"kept in memory, changed since hashed", small, strings.Replace(small, "original", "0riginal", 1), func(string) string {
			sum := sha1.Sum([]byte(strings.Replace(small, "original", "0riginal", 1)))
			return digest.SHA1.Format(sum[:])
		}},
		{"streamed", large, large, func(string) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := warctest.Response("http://example.com/o", "2024-01-02T00:00:00Z", tt.stored)
			sum := sha1.Sum([]byte(tt.payload))
			line := manifest.Line{File: "o.warc", Length: int64(len(rec)), URI: "http://example.com/o",
				Date: "2024-01-02T00:00:00Z", Digest: digest.SHA1.Format(sum[:]), Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}
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
			if want := tt.want(line.Digest); got.PayloadDigest != want {
				t.Errorf("PayloadDigest %q, want %q (line's %s)", got.PayloadDigest, want, line.Digest)
			}
		})
	}
}
