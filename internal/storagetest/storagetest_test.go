package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// collection lays out files over n host roots by SWAP placement and
// returns the roots and each file's content by relative path.
func collection(t *testing.T, names []string) ([]Host, map[string][]byte) {
	t.Helper()
	hosts := make([]Host, len(names))
	for i, name := range names {
		hosts[i] = Host{Name: name, Root: t.TempDir()}
	}
	files := make(map[string][]byte)
	for i := 0; i < 12; i++ {
		rel := fmt.Sprintf("crawl-%d/part-%05d.warc.gz", i%3, i)
		body := bytes.Repeat([]byte(fmt.Sprintf("%s:%d|", rel, i)), 100+i)
		files[rel] = body
		path := filepath.Join(hosts[Slice(rel, len(hosts))].Root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return hosts, files
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, c *http.Client, url, rng string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestSWAPRedirects proves that every host serves every file of the
// collection, its own directly and the others' through one 302 to the
// holder, and that a Range request survives the redirect.
func TestSWAPRedirects(t *testing.T) {
	names := []string{"store1", "store2", "store3"}
	hosts, files := collection(t, names)
	s := StartSWAP(t, hosts...)
	for rel, body := range files {
		holder := names[Slice(rel, len(names))]
		for _, via := range names {
			url := s.URL(via) + "/warcs/" + rel
			resp, _ := get(t, noRedirect, url, "")
			switch {
			case via == holder && resp.StatusCode != http.StatusOK:
				t.Errorf("%s from its holder %s: status %d", rel, via, resp.StatusCode)
			case via != holder && (resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != s.URL(holder)+"/warcs/"+rel):
				t.Errorf("%s from %s: status %d Location %q, want 302 to %s", rel, via, resp.StatusCode, resp.Header.Get("Location"), holder)
			}
			resp, got := get(t, http.DefaultClient, url, "bytes=10-29")
			if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(got, body[10:30]) {
				t.Errorf("%s via %s, range 10-29: status %d body %q, want 206 %q", rel, via, resp.StatusCode, got, body[10:30])
			}
		}
	}
	for _, via := range names {
		if resp, _ := get(t, noRedirect, s.URL(via)+"/warcs/crawl-0/absent.warc.gz", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("absent file via %s: status %d, want 404", via, resp.StatusCode)
		}
	}
	t.Run("curl", func(t *testing.T) {
		curl, err := exec.LookPath("curl")
		if err != nil {
			t.Skip("curl not installed")
		}
		for rel, body := range files {
			via := names[(Slice(rel, len(names))+1)%len(names)]
			out := filepath.Join(t.TempDir(), "part")
			cmd := exec.Command(curl, "-sS", "-L", "-r", "100-199", "-o", out, "-w", "%{http_code} %{num_redirects}", s.URL(via)+"/warcs/"+rel)
			status, err := cmd.Output()
			if err != nil {
				t.Fatalf("curl: %v", err)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if string(status) != "206 1" || !bytes.Equal(got, body[100:200]) {
				t.Errorf("curl -L -r 100-199 %s via %s: %q, body equal %v; want \"206 1\" and the range", rel, via, status, bytes.Equal(got, body[100:200]))
			}
		}
	})
}

// TestStopRestart proves that a stopped host refuses connections, that the
// other hosts still redirect to it (the client sees the failure at the
// holder), and that it serves again after Restart.
func TestStopRestart(t *testing.T) {
	names := []string{"store1", "store2", "store3"}
	hosts, files := collection(t, names)
	s := StartSWAP(t, hosts...)
	var rel string
	for r := range files {
		if Slice(r, len(names)) == 1 {
			rel = r
			break
		}
	}
	if rel == "" {
		t.Fatal("no file placed on store2")
	}
	s.Stop("store2")
	if _, err := http.Get(s.URL("store2") + "/warcs/" + rel); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("stopped host: err %v, want connection refused", err)
	}
	if _, err := http.Get(s.URL("store1") + "/warcs/" + rel); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("through a live host to the stopped one: err %v, want connection refused", err)
	}
	s.Restart("store2")
	if resp, got := get(t, http.DefaultClient, s.URL("store1")+"/warcs/"+rel, ""); resp.StatusCode != 200 || !bytes.Equal(got, files[rel]) {
		t.Errorf("after restart: status %d, body differs: %v", resp.StatusCode, !bytes.Equal(got, files[rel]))
	}
}

// TestPlainHostsDoNotRedirect proves that without SWAP a host answers 404
// for a file it does not hold.
func TestPlainHostsDoNotRedirect(t *testing.T) {
	names := []string{"store1", "store2"}
	hosts, files := collection(t, names)
	s := Start(t, hosts...)
	for rel, body := range files {
		holder := names[Slice(rel, len(names))]
		for _, via := range names {
			resp, got := get(t, noRedirect, s.URL(via)+"/warcs/"+rel, "")
			want := http.StatusNotFound
			if via == holder {
				want = http.StatusOK
			}
			if resp.StatusCode != want || (want == 200 && !bytes.Equal(got, body)) {
				t.Errorf("%s via %s: status %d, want %d", rel, via, resp.StatusCode, want)
			}
		}
	}
}

func TestSlice(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		n    int
		want int
	}{
		// The whole 128-bit digest counts, not its last byte: md5("a") is
		// 0cc175b9c0f1b6a831c399e269772661 (0x61 mod 3 = 1, the number
		// mod 3 = 1; mod 7: 0x61 mod 7 = 6, the number mod 7 = 0).
		{"a", 2, 1},
		{"a", 3, 1},
		{"a", 7, 0},
		{"a", 1, 0},
		// md5("") = d41d8cd98f00b204e9800998ecf8427e
		{"", 2, 0},
		{"", 7, 1},
	} {
		if got := Slice(tc.rel, tc.n); got != tc.want {
			t.Errorf("Slice(%q, %d) = %d, want %d", tc.rel, tc.n, got, tc.want)
		}
	}
}
