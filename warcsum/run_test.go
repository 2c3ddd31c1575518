package warcsum

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"warcdedup/internal/warctest"
)

// TestOnFileSHA256 proves that a run asked for them gives each file's
// SHA-256 as read, in input order, the same from the cache, and none for
// a file that could not be read whole.
func TestOnFileSHA256(t *testing.T) {
	dir := t.TempDir()
	good := []byte(warctest.Response("http://a/", "2024-01-01T00:00:00Z", "payload") + warctest.Response("http://b/", "2024-01-01T00:00:00Z", "other"))
	gz := warctest.Gzip(warctest.Response("http://c/", "2024-01-01T00:00:00Z", "zipped"))
	warctest.WriteFile(t, dir, "a.warc", good)
	warctest.WriteFile(t, dir, "b.warc.gz", gz)
	warctest.WriteFile(t, dir, "c.warc.gz", gz[:len(gz)-9]) // cut inside its trailer
	want := map[string]string{"a.warc": sha256Hex(good), "b.warc.gz": sha256Hex(gz), "c.warc.gz": ""}
	inputs, err := Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := NewCache(filepath.Join(t.TempDir(), "cache"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"read", "from the cache"} {
		got := map[string]string{}
		var order []string
		r := Runner{Jobs: 2, Cache: cache, OnFile: func(in Input, sum string) {
			got[in.Name] = sum
			order = append(order, in.Name)
		}, OnFileError: func(Input, error) {}}
		if _, err := r.Run(inputs, io.Discard); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || !slices.IsSorted(order) {
			t.Errorf("%s: sums %v in order %v, want %v", run, got, order, want)
		}
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
