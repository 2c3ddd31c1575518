// Package storagetest starts one nginx per storage host, each serving its
// own root directory under /warcs/ on its own 127.0.0.1 port, the way the
// hosts of a cluster serve their share of a collection. In SWAP mode
// (University of Maryland's SWAP storage, ../shared/spec/prior-art.md)
// every host also answers a GET for a file it does not hold with a 302 to
// the host that holds it, so a client needs to know one host.
//
// Tests skip without nginx, or fail when WARCDEDUP_REQUIRE_NGINX=1 (see
// internal/nginxtest).
package storagetest

import (
	"crypto/md5"
	"fmt"
	"io/fs"
	"math/big"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"warcdedup/internal/nginxtest"
)

// Host is one storage host to start: its name (a cluster node's, such as
// "store1") and the directory it serves.
type Host struct {
	Name string
	Root string
}

// Storage is the set of running hosts.
type Storage struct {
	t       testing.TB
	names   []string
	servers map[string]*nginxtest.Server
}

// Start serves each host's root at its own address until the test ends.
func Start(t testing.TB, hosts ...Host) *Storage {
	t.Helper()
	return start(t, false, hosts)
}

// StartSWAP is Start with SWAP redirects: a host asked for /warcs/REL that
// it does not hold answers 302 to /warcs/REL on the host that holds it, or
// 404 when no host does. Who holds what is read from the roots when the
// hosts start (files added later are served by their own host but not
// redirected to). Place files by Slice to lay out a collection the way SWAP
// does.
func StartSWAP(t testing.TB, hosts ...Host) *Storage {
	t.Helper()
	return start(t, true, hosts)
}

func start(t testing.TB, swap bool, hosts []Host) *Storage {
	t.Helper()
	if len(hosts) == 0 {
		t.Fatal("storagetest: no hosts")
	}
	s := &Storage{t: t, servers: make(map[string]*nginxtest.Server)}
	ports := make(map[string]int)
	for _, h := range hosts {
		if _, dup := ports[h.Name]; dup || h.Name == "" {
			t.Fatalf("storagetest: host name %q empty or repeated", h.Name)
		}
		// Every address is fixed before any configuration is written,
		// because in SWAP mode each host's configuration names the others.
		ports[h.Name] = nginxtest.FreePort(t)
		s.names = append(s.names, h.Name)
	}
	var opt nginxtest.Options
	if swap {
		holders, err := holderMap(hosts, ports)
		if err != nil {
			t.Fatal(err)
		}
		opt.HTTP = holders
		opt.Warcs = "            error_page 404 = @swap;"
		opt.Server = `        location @swap {
            if ($swap_holder = "") { return 404; }
            return 302 $swap_holder$request_uri;
        }`
	}
	for _, h := range hosts {
		o := opt
		o.Port = ports[h.Name]
		s.servers[h.Name] = nginxtest.StartServer(t, h.Root, o)
	}
	return s
}

// holderMap writes the nginx map from a request's path to the base URL of
// the host whose root holds that file. nginx cannot hash a path, so the
// placement is listed file by file.
func holderMap(hosts []Host, ports map[string]int) (string, error) {
	holder := make(map[string]string)
	for _, h := range hosts {
		base := fmt.Sprintf("http://127.0.0.1:%d", ports[h.Name])
		err := filepath.WalkDir(h.Root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(h.Root, path)
			if err != nil {
				return err
			}
			uri := "/warcs/" + filepath.ToSlash(rel)
			if strings.ContainsAny(uri, "\"\\$;{}'") || strings.IndexFunc(uri, isControlOrSpace) >= 0 {
				return fmt.Errorf("storagetest: %s: a name nginx's map cannot hold as written", path)
			}
			if other, dup := holder[uri]; dup {
				return fmt.Errorf("storagetest: %s is on two hosts (%s and %s)", rel, other, h.Name)
			}
			holder[uri] = base
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	uris := make([]string, 0, len(holder))
	for uri := range holder {
		uris = append(uris, uri)
	}
	sort.Strings(uris)
	// The map's hash buckets must fit its longest key.
	bucket := 64
	for _, uri := range uris {
		for bucket < len(uri)+32 {
			bucket *= 2
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "    map_hash_bucket_size %d;\n    map_hash_max_size %d;\n", bucket, 4*len(uris)+1024)
	// $uri is the decoded, normalised path, so a client's escaping of the
	// name does not matter.
	b.WriteString("    map $uri $swap_holder {\n        default \"\";\n")
	for _, uri := range uris {
		fmt.Fprintf(&b, "        \"%s\" \"%s\";\n", uri, holder[uri])
	}
	b.WriteString("    }\n")
	return b.String(), nil
}

func isControlOrSpace(r rune) bool { return r <= ' ' || r == 0x7f }

// URL is host's base URL ("http://127.0.0.1:PORT"); its files are under
// URL + "/warcs/".
func (s *Storage) URL(host string) string { return s.server(host).URL }

// Stop takes host down: connections to its address are refused until
// Restart.
func (s *Storage) Stop(host string) { s.server(host).Stop() }

// Restart brings host back on the same address.
func (s *Storage) Restart(host string) { s.server(host).Restart() }

func (s *Storage) server(host string) *nginxtest.Server {
	s.t.Helper()
	srv, ok := s.servers[host]
	if !ok {
		s.t.Fatalf("storagetest: no host %q", host)
	}
	return srv
}

// Slice is the SWAP placement of the file at relative path rel among n
// hosts: MD5(rel) read as a big-endian unsigned integer, modulo n.
func Slice(rel string, n int) int {
	sum := md5.Sum([]byte(rel))
	var x big.Int
	x.SetBytes(sum[:])
	return int(x.Mod(&x, big.NewInt(int64(n))).Int64())
}
