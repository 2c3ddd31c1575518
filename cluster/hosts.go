package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Host is one storage host of a hosts file: a line "NAME ROOT URL".
type Host struct {
	// Name is the host's Slurm node name: its jobs are pinned there
	// (sbatch --nodelist).
	Name string `json:"name"`
	// Root is the directory on that host that holds its share of the
	// collection; a file's name in the manifests is its path relative to
	// Root, and must be unique across the hosts.
	Root string `json:"root"`
	// URL is the HTTP base URL that serves Root: the file REL is at
	// URL/REL. Several hosts may give one URL, a front that redirects each
	// request to the host that holds the file (as SWAP's hosts do).
	URL string `json:"url"`
}

// FileURL is the URL of the file with relative name rel (unescaped).
func (h *Host) FileURL(rel string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return h.URL + "/" + strings.Join(parts, "/")
}

// ReadHosts reads a hosts file: one "NAME ROOT URL" line per storage host;
// blank lines and lines starting with # are ignored. Names must be plain
// Slurm node names, each given once; roots absolute paths; URLs http or
// https, without query or fragment.
func ReadHosts(r io.Reader, source string) ([]Host, error) {
	var hosts []Host
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"NAME ROOT URL\", found %d fields", source, n, len(f))
		}
		h := Host{Name: f[0], Root: f[1], URL: strings.TrimRight(f[2], "/")}
		if strings.ContainsAny(h.Name, ",[]=:/\\@%'\"$`") || strings.HasPrefix(h.Name, "-") {
			return nil, fmt.Errorf("%s:%d: %q is not a plain node name", source, n, h.Name)
		}
		if prev, dup := seen[h.Name]; dup {
			return nil, fmt.Errorf("%s:%d: host %s is on line %d already", source, n, h.Name, prev)
		}
		seen[h.Name] = n
		if !path.IsAbs(h.Root) || filepath.Clean(h.Root) != h.Root {
			return nil, fmt.Errorf("%s:%d: root %q: want a clean absolute path (the directory on %s)", source, n, h.Root, h.Name)
		}
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%s:%d: URL %q: want http(s)://HOST[:PORT][/PATH] serving %s", source, n, f[2], h.Root)
		}
		hosts = append(hosts, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s: no host (want \"NAME ROOT URL\" lines)", source)
	}
	return hosts, nil
}
