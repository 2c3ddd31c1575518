package refs

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/digest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/warcsum"
)

// TestProtect proves that a record an existing revisit refers to is kept as
// a response under Protect, and rewritten without it.
func TestProtect(t *testing.T) {
	body := strings.Repeat("same payload ", 200)
	a := warctest.Response("http://x/a", "2020-01-01T00:00:00Z", body)
	b := warctest.Response("http://x/b", "2020-01-02T00:00:00Z", body)
	// A revisit written by a crawler, pointing at b.
	sum := sha1.Sum([]byte(body))
	old := warctest.Record("revisit", "http://x/c", "2020-01-03T00:00:00Z", "HTTP/1.1 200 OK\r\n\r\n",
		"WARC-Payload-Digest: "+digest.SHA1.Format(sum[:]),
		"WARC-Refers-To-Target-URI: http://x/b", "WARC-Refers-To-Date: 2020-01-02T00:00:00Z",
		"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest")
	for _, protect := range []bool{false, true} {
		dir := t.TempDir()
		warctest.WriteFile(t, dir, "f.warc", []byte(a+b+old))
		inputs, _ := warcsum.Collect([]string{dir}, false)
		var before bytes.Buffer
		r := warcsum.Runner{Options: warcsum.Options{Revisits: true}}
		if _, err := r.Run(inputs, &before); err != nil {
			t.Fatal(err)
		}
		// Number b as a copy of a, as the earlier stages would.
		var dups []string
		for _, s := range strings.Split(strings.TrimSpace(before.String()), "\n") {
			l, _ := manifest.Parse([]byte(s))
			if l.URI == "http://x/b" {
				l.Fields, l.Ext, l.Copy, l.RefURI, l.RefDate = 10, 0, 2, "http://x/a", "2020-01-01T00:00:00Z"
				dups = append(dups, l.String())
			}
		}
		rw := Rewriter{Roots: []string{dir}, InPlace: true}
		if protect {
			var err error
			if rw.Protect, err = ReadProtection(manifest.NewReader(bytes.NewReader(before.Bytes()), "before")); err != nil {
				t.Fatal(err)
			}
		}
		st, err := rw.Run(context.Background(), manifest.NewReader(strings.NewReader(strings.Join(dups, "\n")+"\n"), "dups"), nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, "f.warc"))
		kept := bytes.Equal(data, []byte(a+b+old))
		if protect != kept || (protect && st.Protected != 1) || (!protect && st.Revisits != 1) {
			t.Errorf("protect %v: file kept %v, stats %+v", protect, kept, st)
		}
	}
}

// TestHasEscape proves which manifest URIs hold an escape the manifest
// made (whitespace and control bytes), as opposed to a URI's own %XX.
func TestHasEscape(t *testing.T) {
	for uri, want := range map[string]bool{
		"http://x/a%20b":   true,
		"http://x/a%09b":   true,
		"http://x/a%7Fb":   true,
		"http://x/%1F":     true,
		"http://x/a%2Fb":   false,
		"http://x/%C3%A9":  false,
		"http://x/100%":    false,
		"http://x/plain":   false,
		"http://x/a%2":     false,
		"http://x/%41%42%": false,
	} {
		if got := hasEscape(uri); got != want {
			t.Errorf("hasEscape(%q) = %v, want %v", uri, got, want)
		}
	}
}

// TestCancelledRunReturns proves that a cancelled run returns, without
// waiting for files never started and without closing a file's lines twice.
func TestCancelledRunReturns(t *testing.T) {
	var in strings.Builder
	for f := range 6 {
		for i := range 3 {
			fmt.Fprintf(&in, "f%d.warc %d 10 http://x/%d 2020-01-02T00:00:00Z sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA 0 2 http://x/0 2020-01-01T00:00:00Z\n", f, i*10, i)
		}
	}
	for _, jobs := range []int{1, 4} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() {
			rw := Rewriter{Roots: []string{t.TempDir()}, InPlace: true, Jobs: jobs}
			_, err := rw.Run(ctx, manifest.NewReader(strings.NewReader(in.String()), "m"), io.Discard)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("jobs %d: a cancelled run reported success", jobs)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("jobs %d: Run did not return after its context was cancelled", jobs)
		}
	}
}
