package collres

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"warcdedup/digest"
	"warcdedup/internal/nginxtest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/source"
)

// httpCollection is a collection with duplicates across files, plain and
// gzip, and one stale line (its file changed after hashing).
func httpCollection(t *testing.T) (string, []manifest.Line) {
	files := collection{}
	for i := range 5 {
		var recs []string
		for j := range 8 {
			body := fmt.Sprintf("page %d\n", j%4) + strings.Repeat("<p>text</p>", 300*(1+j%4))
			recs = append(recs, warctest.Response(fmt.Sprintf("http://h%d/%d", i, j), fmt.Sprintf("2020-0%d-%02dT00:00:00Z", i+1, j+1), body))
		}
		if i%2 == 0 {
			files[fmt.Sprintf("d%d/f%d.warc.gz", i, i)] = warctest.Gzip(recs...)
		} else {
			files[fmt.Sprintf("f%d.warc", i)] = []byte(strings.Join(recs, ""))
		}
	}
	dir := files.write(t)
	lines := hashDir(t, dir, digest.SHA1)
	return dir, lines
}

func fastHTTP() *source.HTTP {
	h := source.NewHTTP(3)
	h.Backoff = time.Millisecond
	h.IdleTimeout = 2 * time.Second
	return h
}

// TestHTTPSources proves that records fetched from nginx (directly, through
// a redirect, and through a locations file) resolve exactly as from disk.
func TestHTTPSources(t *testing.T) {
	dir, lines := httpCollection(t)
	want, st, warnings := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true, Jobs: 2}, lines)
	if st.Stale != 0 || len(warnings) != 0 || st.Clusters != 4 {
		t.Fatalf("local run: %+v %v", st, warnings)
	}
	base := nginxtest.Start(t, dir)
	var locations strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&locations, "%s %s/warcs/%s\n", l.File, base, l.File)
	}
	locs, err := source.ReadLocations(strings.NewReader(locations.String()), "locs")
	if err != nil {
		t.Fatal(err)
	}
	for name, loc := range map[string]*source.Locator{
		"nginx url template":   {URLTemplate: base + "/warcs/{file}", HTTP: fastHTTP()},
		"nginx redirect":       {URLTemplate: base + "/moved/{file}", HTTP: fastHTTP()},
		"nginx locations file": {Locations: locs, HTTP: fastHTTP()},
	} {
		t.Run(name, func(t *testing.T) {
			got, st, warnings := resolve(t, Resolver{Source: loc, Number: true, Jobs: 4}, lines)
			if len(warnings) != 0 || !bytes.Equal(format(got), format(want)) {
				t.Errorf("stats %+v warnings %v: output differs from the local run", st, warnings)
			}
		})
	}
}

// TestHTTPFaults proves that a storage host that fails at random (500s,
// bodies cut short, redirects) still yields the local result, thanks to
// retries and resumption.
func TestHTTPFaults(t *testing.T) {
	dir, lines := httpCollection(t)
	want, _, _ := resolve(t, Resolver{Source: &source.Locator{Roots: []string{dir}}, Number: true}, lines)
	files := http.StripPrefix("/warcs/", http.FileServer(http.Dir(dir)))
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(5, 6))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		roll := rng.IntN(10)
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/front/"):
			http.Redirect(w, r, "/warcs/"+strings.TrimPrefix(r.URL.Path, "/front/"), http.StatusFound)
		case roll < 2:
			http.Error(w, "overloaded", http.StatusInternalServerError)
		case roll < 4:
			// Serve the range into a buffer, then send only half of it.
			rec := httptest.NewRecorder()
			files.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			body := rec.Body.Bytes()
			w.Write(body[:len(body)/2])
			panic(http.ErrAbortHandler)
		default:
			files.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	h := fastHTTP()
	h.Retries = 20
	got, st, warnings := resolve(t, Resolver{Source: &source.Locator{URLTemplate: srv.URL + "/front/{file}", HTTP: h}, Number: true, Jobs: 3}, lines)
	if len(warnings) != 0 || !bytes.Equal(format(got), format(want)) {
		t.Errorf("stats %+v warnings %v: output differs from the local run", st, warnings)
	}
}
