package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blob is the file the test servers hold.
var blob = func() []byte {
	b := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// faultServer serves blob with http.ServeContent (which honours Range) at
// /f, after fault decides what to do with request n (1-based): return true
// if it handled the request itself.
func faultServer(t *testing.T, fault func(n int64, w http.ResponseWriter, r *http.Request) bool) (*httptest.Server, *atomic.Int64) {
	var count atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := count.Add(1)
		if fault != nil && fault(n, w, r) {
			return
		}
		if r.URL.Path != "/f" {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(blob))
	}))
	t.Cleanup(srv.Close)
	return srv, &count
}

// shortBody answers a range request with the right headers but only half
// the bytes, then drops the connection.
func shortBody(w http.ResponseWriter, r *http.Request) {
	var first, last int64
	fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(blob)))
	w.Header().Set("Content-Length", fmt.Sprint(last-first+1))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(blob[first : first+(last-first+1)/2])
	panic(http.ErrAbortHandler)
}

func testHTTP() *HTTP {
	h := NewHTTP(2)
	h.Backoff = time.Millisecond
	h.IdleTimeout = 300 * time.Millisecond
	return h
}

// TestHTTPRange proves that exactly the asked bytes arrive through every
// kind of trouble a storage host gives, and that permanent errors are not
// retried.
func TestHTTPRange(t *testing.T) {
	const off, n = 1000, 300000
	tests := []struct {
		name     string
		path     string
		fault    func(n int64, w http.ResponseWriter, r *http.Request) bool
		wantErr  string
		requests int64 // expected number of requests, 0 to not check
	}{
		{"plain range", "/f", nil, "", 1},
		{"500 twice, then served", "/f", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			if n <= 2 {
				http.Error(w, "busy", http.StatusInternalServerError)
				return true
			}
			return false
		}, "", 3},
		{"always 503 gives up after the retries", "/f", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return true
		}, "503", 6},
		{"404 is not retried", "/missing", nil, "404", 1},
		{"redirect to the holding host", "/front", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/front" {
				http.Redirect(w, r, "/f", http.StatusFound)
				return true
			}
			return false
		}, "", 2},
		{"short body is resumed where it stopped", "/f", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			if n == 1 {
				shortBody(w, r)
				return true
			}
			return false
		}, "", 2},
		{"slow first answer times out and is retried", "/f", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			if n == 1 {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, len(blob)))
				w.WriteHeader(http.StatusPartialContent)
				w.(http.Flusher).Flush()
				time.Sleep(time.Second)
				return true
			}
			return false
		}, "", 2},
		{"server ignoring Range is refused", "/f", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			w.Write(blob)
			return true
		}, "ignored the Range", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, count := faultServer(t, tt.fault)
			h := testHTTP()
			got, err := func() ([]byte, error) {
				r, err := h.Open(context.Background(), srv.URL+tt.path, off, n)
				if err != nil {
					return nil, err
				}
				defer r.Close()
				return io.ReadAll(r)
			}()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
			} else if err != nil || !bytes.Equal(got, blob[off:off+n]) {
				t.Fatalf("err %v, %d bytes; want the %d bytes at %d", err, len(got), n, off)
			}
			if tt.requests != 0 && count.Load() != tt.requests {
				t.Errorf("%d requests, want %d", count.Load(), tt.requests)
			}
		})
	}
}

// TestHTTPPerHost proves that no more than PerHost requests are open to one
// host at once.
func TestHTTPPerHost(t *testing.T) {
	var open, most atomic.Int64
	srv, _ := faultServer(t, func(n int64, w http.ResponseWriter, r *http.Request) bool {
		now := open.Add(1)
		defer open.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(blob))
		return true
	})
	h := testHTTP()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.Open(context.Background(), srv.URL+"/f", int64(i*100), 100)
			if err != nil {
				failed.Add(1)
				return
			}
			if b, err := io.ReadAll(r); err != nil || !bytes.Equal(b, blob[i*100:i*100+100]) {
				failed.Add(1)
			}
			r.Close()
		}()
	}
	wg.Wait()
	if failed.Load() != 0 || most.Load() > 2 || most.Load() < 1 {
		t.Errorf("failed %d, at most %d requests open at once; want 0 failures and at most 2", failed.Load(), most.Load())
	}
}

// TestHTTPContextCancel proves that a cancelled run does not wait out the
// backoff.
func TestHTTPContextCancel(t *testing.T) {
	srv, _ := faultServer(t, func(n int64, w http.ResponseWriter, r *http.Request) bool {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return true
	})
	h := testHTTP()
	h.Backoff = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := h.Open(ctx, srv.URL+"/f", 0, 10)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// TestHTTPResumeSameVersion proves that a body cut short is not resumed
// from a file that changed meanwhile: bytes of two versions are never
// spliced together.
func TestHTTPResumeSameVersion(t *testing.T) {
	changed := append([]byte(nil), blob...)
	changed[500000] ^= 0xFF
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		content, mod := blob, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		if n.Add(1) > 1 {
			content, mod = changed, mod.Add(time.Hour) // replaced after the first request
		}
		if n.Load() == 1 {
			// As nginx does, the first answer names its version.
			w.Header().Set("Last-Modified", mod.Format(http.TimeFormat))
			shortBody(w, r)
			return
		}
		http.ServeContent(w, r, "f", mod, bytes.NewReader(content))
	}))
	defer srv.Close()
	r, err := testHTTP().Open(context.Background(), srv.URL+"/f", 0, 900000)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = io.ReadAll(r)
	if err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("err %v: want the change reported, not a spliced body", err)
	}
}

// TestHTTPTrickle proves that a server sending a few bytes at a time, never
// silent long enough for the idle timeout, is cut off by the minimum rate:
// the read fails with ErrTooSlow within the record's allowance, retries
// included, instead of taking minutes.
func TestHTTPTrickle(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var first, last int64
		fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(blob)))
		w.Header().Set("Content-Length", fmt.Sprint(last-first+1))
		w.WriteHeader(http.StatusPartialContent)
		for i := first; i <= last; i += 64 {
			w.Write(blob[i:min(i+64, last+1)])
			w.(http.Flusher).Flush()
			select {
			case <-time.After(20 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	h := testHTTP()
	h.IdleTimeout = 200 * time.Millisecond // never reached: a byte comes every 20 ms
	h.MinRate = 16 << 10                   // 64 bytes / 20 ms is 3.2 KB/s
	h.Retries = 2
	const length = 8 << 10
	start := time.Now()
	r, err := h.Open(context.Background(), srv.URL+"/f", 0, length)
	if err == nil {
		_, err = io.ReadAll(r)
		r.Close()
	}
	took := time.Since(start)
	allowance := time.Duration(h.Retries+1) * (h.IdleTimeout + time.Duration(float64(length)/float64(h.MinRate)*float64(time.Second)))
	if !errors.Is(err, ErrTooSlow) {
		t.Fatalf("err %v after %v, want ErrTooSlow", err, took)
	}
	if took > allowance+time.Second {
		t.Errorf("took %v, the allowance is %v", took, allowance)
	}
}

// TestHTTPOpenSized proves that a reader of a file of an expected size gets
// the bytes of that version only: another size is a *SizeError that names
// the size found, before any byte is handed over, and is not retried.
func TestHTTPOpenSized(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		size    int64
		wantGot int64 // -2: no error
	}{
		{"the expected version", "/f", int64(len(blob)), -2},
		{"a shorter version than expected", "/f", int64(len(blob)) + 100, int64(len(blob))},
		{"through a redirect", "/front", int64(len(blob)) - 1, int64(len(blob))},
		{"a version too short for the range (416)", "/short", int64(len(blob)), 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, count := faultServer(t, func(n int64, w http.ResponseWriter, r *http.Request) bool {
				switch r.URL.Path {
				case "/front":
					http.Redirect(w, r, "/f", http.StatusFound)
					return true
				case "/short":
					http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(blob[:50]))
					return true
				}
				return false
			})
			r, err := testHTTP().OpenSized(context.Background(), srv.URL+tt.path, 10, 100, tt.size)
			var se *SizeError
			if tt.wantGot == -2 {
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(got, blob[10:110]) {
					t.Fatalf("err %v, %d bytes", err, len(got))
				}
				return
			}
			if !errors.As(err, &se) || se.Got != tt.wantGot || se.Want != tt.size {
				t.Fatalf("err %v, want a SizeError saying %d, not %d", err, tt.wantGot, tt.size)
			}
			if want := int64(1) + map[bool]int64{true: 1}[tt.path == "/front"]; count.Load() != want {
				t.Errorf("%d requests, want %d (no retry)", count.Load(), want)
			}
		})
	}
}

// TestHTTPStats proves that Stats counts the bytes received over the
// network and the requests made, a resumption included: a body cut at
// half costs a second request and only the rest of the bytes.
func TestHTTPStats(t *testing.T) {
	srv, _ := faultServer(t, func(n int64, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			shortBody(w, r)
			return true
		}
		return false
	})
	h := testHTTP()
	for _, c := range []struct{ offset, length int64 }{{1000, 200000}, {0, 10}} {
		r, err := h.Open(context.Background(), srv.URL+"/f", c.offset, c.length)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, blob[c.offset:c.offset+c.length]) {
			t.Fatalf("read %d at %d: %v, bytes equal %v", c.length, c.offset, err, bytes.Equal(got, blob[c.offset:c.offset+c.length]))
		}
	}
	if st := h.Stats(); st.Bytes != 200010 || st.Requests != 3 {
		t.Errorf("stats %+v: want 200010 bytes in 3 requests", st)
	}
}
