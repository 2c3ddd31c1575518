package replaytest

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// startServer serves ReplayWeb.page's files at / and root under /warcs/,
// on 127.0.0.1, until the test ends; it returns the base URL. Files are
// served by http.ServeContent: with Range, and without any
// Content-Encoding, so a .warc.gz arrives as stored.
func startServer(t testing.TB, rwp, root string) string {
	t.Helper()
	mux := http.NewServeMux()
	warcs := http.StripPrefix("/warcs/", http.FileServer(http.Dir(root)))
	mux.Handle("/warcs/", noCache(warcs))
	app := http.FileServer(http.Dir(rwp))
	mux.Handle("/", noCache(app))
	return serve(t, mux)
}

// noCache keeps Chromium from reusing a file of an earlier test that had
// the same name.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// serve runs h on a free port of 127.0.0.1 until the test ends.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		srv.Serve(l)
		close(done)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return "http://" + l.Addr().String()
}

// refusingProxy answers every request with 403 and keeps what was asked:
// Chromium is told to use it for everything not on 127.0.0.1, so a request
// meant for the outside world ends here.
type refusingProxy struct {
	mu      sync.Mutex
	refused []string
}

func (p *refusingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	what := r.Method + " " + r.Host
	if r.Method != http.MethodConnect && r.URL.IsAbs() {
		what = r.Method + " " + r.URL.String()
	}
	p.mu.Lock()
	p.refused = append(p.refused, what)
	p.mu.Unlock()
	w.Header().Set("Connection", "close")
	http.Error(w, "refused: tests reach nothing outside 127.0.0.1", http.StatusForbidden)
}

func (p *refusingProxy) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// startProxy starts a refusingProxy and returns its address (host:port).
func startProxy(t testing.TB) (*refusingProxy, string) {
	t.Helper()
	p := &refusingProxy{}
	base := serve(t, p)
	return p, strings.TrimPrefix(base, "http://")
}
