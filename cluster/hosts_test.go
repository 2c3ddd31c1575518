package cluster

import (
	"strings"
	"testing"
)

// TestReadHosts proves what a hosts file may hold and what it is refused
// for, with the line named.
func TestReadHosts(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Host
		err        string
	}{
		{"hosts with their own URLs, comments and blank lines",
			"# storage\nstore1 /data/warcs http://store1:8080/warcs/\n\nstore2  /data/warcs\thttp://store2:8080/warcs\n",
			[]Host{{"store1", "/data/warcs", "http://store1:8080/warcs"}, {"store2", "/data/warcs", "http://store2:8080/warcs"}}, ""},
		{"one URL for all (a front that redirects)",
			"a /x https://front/w\nb /y https://front/w\n",
			[]Host{{"a", "/x", "https://front/w"}, {"b", "/y", "https://front/w"}}, ""},
		{"two fields", "store1 /data\n", nil, "hosts:1: want \"NAME ROOT URL\""},
		{"a host twice", "s /a http://h/\ns /b http://h/\n", nil, "hosts:2: host s is on line 1 already"},
		{"a relative root", "s data http://h/\n", nil, "hosts:1: root \"data\""},
		{"an unclean root", "s /data/../x http://h/\n", nil, "hosts:1: root"},
		{"not a node name", "s[1-2] /data http://h/\n", nil, "not a plain node name"},
		{"not an HTTP URL", "s /data ftp://h/\n", nil, "hosts:1: URL"},
		{"a URL with a query", "s /data http://h/w?x=1\n", nil, "hosts:1: URL"},
		{"no host at all", "# nothing\n", nil, "no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadHosts(strings.NewReader(tt.text), "hosts")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("host %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestFileURL proves that a file's URL escapes each part of its name and
// keeps the slashes.
func TestFileURL(t *testing.T) {
	h := Host{URL: "http://h:1/warcs"}
	for name, want := range map[string]string{
		"a.warc.gz":           "http://h:1/warcs/a.warc.gz",
		"crawl 1/x#y.warc":    "http://h:1/warcs/crawl%201/x%23y.warc",
		"iipc+jwarc/t/a.warc": "http://h:1/warcs/iipc+jwarc/t/a.warc",
	} {
		if got := h.FileURL(name); got != want {
			t.Errorf("%q: %s, want %s", name, got, want)
		}
	}
}
