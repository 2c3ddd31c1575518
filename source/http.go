package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP reads byte ranges of files from storage hosts, which are plain HTTP
// servers. It keeps connections alive, follows redirects (a front host may
// answer 302 with the host that holds the file), retries transient failures
// with exponential backoff, resumes a body that ends early where it stopped,
// and limits the requests open at once to each host.
type HTTP struct {
	Client      *http.Client
	PerHost     int           // requests open at once per host
	Retries     int           // further attempts after a transient failure
	Backoff     time.Duration // wait before the first retry; doubled for each next one
	IdleTimeout time.Duration // an attempt that receives no byte for this long fails
	// MinRate bounds the time a record may take: an attempt fails after
	// IdleTimeout plus the time its bytes take at MinRate bytes a second,
	// and the whole record (retries included) after Retries+1 times what
	// the first attempt was allowed. A server trickling a few bytes at a
	// time is cut off; 0 means no bound.
	MinRate int64

	mu    sync.Mutex
	hosts map[string]chan struct{}

	// What crossed the network, for a job's figures (Stats).
	requests, bytes atomic.Int64
}

// HTTPStats counts what an HTTP read from the storage hosts.
type HTTPStats struct {
	Requests int64 `json:"requests"` // requests made, retries and resumptions included
	Bytes    int64 `json:"bytes"`    // bytes of bodies received
}

// Stats returns what h has read so far.
func (h *HTTP) Stats() HTTPStats {
	return HTTPStats{Requests: h.requests.Load(), Bytes: h.bytes.Load()}
}

// DefaultHTTP returns an HTTP with 4 requests per host, 5 retries starting
// at 200ms, a 60s idle timeout and a minimum rate of 64 KiB/s.
func DefaultHTTP() *HTTP { return NewHTTP(4) }

// NewHTTP returns an HTTP allowing perHost requests open at once per host.
func NewHTTP(perHost int) *HTTP {
	perHost = max(perHost, 1)
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   perHost,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		// Compressed transfer would hide the stored bytes behind a decoder.
		DisableCompression: true,
	}
	return &HTTP{
		Client:      &http.Client{Transport: transport},
		PerHost:     perHost,
		Retries:     5,
		Backoff:     200 * time.Millisecond,
		IdleTimeout: 60 * time.Second,
		MinRate:     64 << 10,
	}
}

// HTTPError is a response that retrying will not change (404, 403, 416...).
type HTTPError struct {
	URL    string
	Status string
}

func (e *HTTPError) Error() string { return fmt.Sprintf("%s: %s", e.URL, e.Status) }

// errRetry marks a failure worth another attempt.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

func (h *HTTP) slot(ctx context.Context, host string) (release func(), err error) {
	h.mu.Lock()
	if h.hosts == nil {
		h.hosts = map[string]chan struct{}{}
	}
	sem, ok := h.hosts[host]
	if !ok {
		sem = make(chan struct{}, max(h.PerHost, 1))
		h.hosts[host] = sem
	}
	h.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Open returns a reader of length bytes at offset of the file at rawURL. The
// first request is made before Open returns, so a missing file is an error
// here; later failures are retried from the byte where they happened.
func (h *HTTP) Open(ctx context.Context, rawURL string, offset, length int64) (io.ReadCloser, error) {
	return h.open(ctx, rawURL, offset, length, -1)
}

// SizeError is a file that is not the size it was expected to have: another
// version of it than the one the offsets were computed for.
type SizeError struct {
	URL  string
	Want int64
	Got  int64 // -1 when the server did not say
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s: the file is %d bytes, not the %d expected (another version of it)", e.URL, e.Got, e.Want)
}

// OpenSized is Open of a file that must be size bytes long: the first
// response's Content-Range must give that size, or the reader is not
// returned and the error is a *SizeError. The bytes read then come from
// that version of the file (a resumed request asks for that version only).
// A reader of a file that another host replaces by shorter versions tells
// by the size which version it read, and so where its records are.
func (h *HTTP) OpenSized(ctx context.Context, rawURL string, offset, length, size int64) (io.ReadCloser, error) {
	return h.open(ctx, rawURL, offset, length, size)
}

func (h *HTTP) open(ctx context.Context, rawURL string, offset, length, size int64) (io.ReadCloser, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	release, err := h.slot(ctx, u.Host)
	if err != nil {
		return nil, err
	}
	r := &rangeReader{h: h, ctx: ctx, url: rawURL, pos: offset, start: offset, end: offset + length, release: release, size: size}
	if h.MinRate > 0 {
		r.deadline = time.Now().Add(time.Duration(h.Retries+1) * r.allowance())
	}
	if err := r.connect(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// rangeReader reads bytes [start, end) of a URL, reconnecting from pos.
type rangeReader struct {
	h          *HTTP
	ctx        context.Context
	url        string
	start, end int64
	pos        int64
	body       io.ReadCloser
	cancel     context.CancelFunc
	idle       *time.Timer
	release    func()
	attempts   int
	// The version of the file the first response came from: a resumed
	// request asks for the rest of that version only (If-Range), and its
	// total size must not change, or bytes of two versions would be
	// spliced together.
	validator string    // ETag, or Last-Modified
	total     string    // from Content-Range
	deadline  time.Time // for the whole record; zero: none
	size      int64     // the file's size that the first response must give; -1: any
}

// allowance is how long an attempt may take for the bytes still to come.
func (r *rangeReader) allowance() time.Duration {
	if r.h.MinRate <= 0 {
		return 0
	}
	return r.h.IdleTimeout + time.Duration(float64(r.end-r.pos)/float64(r.h.MinRate)*float64(time.Second))
}

// ErrTooSlow is a record that took longer than its rate allows.
var ErrTooSlow = errors.New("too slow")

// connect requests [pos, end), retrying transient failures. attempts
// counts the failures since bytes last arrived; Retries bounds it.
func (r *rangeReader) connect() error {
	for {
		err := r.request()
		if err == nil {
			return nil
		}
		if err := r.retry(err); err != nil {
			return err
		}
	}
}

// retry waits before the next attempt after err, or returns err when it is
// not transient or the retries are spent.
func (r *rangeReader) retry(err error) error {
	var transient errRetry
	if !errors.As(err, &transient) || r.attempts >= r.h.Retries {
		return err
	}
	r.attempts++
	t := time.NewTimer(r.h.Backoff << (r.attempts - 1))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
}

func (r *rangeReader) request() error {
	r.closeBody()
	ctx, cancel := context.WithCancel(r.ctx)
	if !r.deadline.IsZero() {
		if time.Now().After(r.deadline) {
			cancel()
			return r.tooSlow()
		}
		d := time.Now().Add(r.allowance())
		if d.After(r.deadline) {
			d = r.deadline
		}
		ctx, cancel = context.WithDeadline(r.ctx, d)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		cancel()
		return err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", r.pos, r.end-1))
	if r.validator != "" {
		req.Header.Set("If-Range", r.validator)
	}
	r.h.requests.Add(1)
	resp, err := r.h.Client.Do(req)
	if err != nil {
		cancel()
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		return errRetry{fmt.Errorf("%s: %w", r.url, err)}
	}
	if err := r.check(resp); err != nil {
		resp.Body.Close()
		cancel()
		return err
	}
	r.body, r.cancel = resp.Body, cancel
	r.idle = time.AfterFunc(r.h.IdleTimeout, cancel)
	return nil
}

// check accepts a response that carries exactly the bytes asked for.
func (r *rangeReader) check(resp *http.Response) error {
	switch {
	case resp.StatusCode == http.StatusPartialContent:
		cr := resp.Header.Get("Content-Range")
		first, _, err := parseContentRange(cr)
		if err != nil || first != r.pos {
			return fmt.Errorf("%s: Content-Range %q does not start at %d", r.url, cr, r.pos)
		}
		_, total, _ := strings.Cut(cr, "/")
		if r.total != "" && total != r.total {
			return &HTTPError{r.url, fmt.Sprintf("the file changed while it was read (size %s, now %s)", r.total, total)}
		}
		if r.total == "" {
			if r.size >= 0 && total != strconv.FormatInt(r.size, 10) {
				got, err := strconv.ParseInt(total, 10, 64)
				if err != nil {
					got = -1
				}
				return &SizeError{URL: r.url, Want: r.size, Got: got}
			}
			r.total = total
			r.validator = resp.Header.Get("ETag")
			if r.validator == "" || strings.HasPrefix(r.validator, "W/") {
				// A weak ETag may not be used with If-Range.
				r.validator = resp.Header.Get("Last-Modified")
			}
		}
		return nil
	case resp.StatusCode == http.StatusOK && r.validator != "" && r.pos > r.start:
		// If-Range did not match: the server sends the new version whole.
		return &HTTPError{r.url, "the file changed while it was read (If-Range did not match)"}
	case resp.StatusCode == http.StatusOK:
		// A server that ignores Range sends the whole file; that is only
		// the bytes asked for when they are the whole file.
		if r.pos == 0 && resp.ContentLength == r.end {
			if r.size >= 0 && r.size != r.end {
				return &SizeError{URL: r.url, Want: r.size, Got: resp.ContentLength}
			}
			return nil
		}
		return &HTTPError{r.url, "server ignored the Range request (200 instead of 206)"}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && r.size >= 0 && r.end <= r.size:
		// The version expected holds the range: this one is shorter.
		got := int64(-1)
		if n, ok := strings.CutPrefix(resp.Header.Get("Content-Range"), "bytes */"); ok {
			if v, err := strconv.ParseInt(n, 10, 64); err == nil {
				got = v
			}
		}
		return &SizeError{URL: r.url, Want: r.size, Got: got}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return &HTTPError{r.url, fmt.Sprintf("%s: the file is shorter than offset %d", resp.Status, r.pos)}
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout:
		return errRetry{&HTTPError{r.url, resp.Status}}
	}
	return &HTTPError{r.url, resp.Status}
}

// parseContentRange reads "bytes first-last/total".
func parseContentRange(v string) (first, last int64, err error) {
	v, ok := strings.CutPrefix(v, "bytes ")
	span, _, ok2 := strings.Cut(v, "/")
	a, b, ok3 := strings.Cut(span, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, fmt.Errorf("bad Content-Range %q", v)
	}
	if first, err = strconv.ParseInt(a, 10, 64); err == nil {
		last, err = strconv.ParseInt(b, 10, 64)
	}
	return first, last, err
}

func (r *rangeReader) Read(p []byte) (int, error) {
	for {
		if r.pos >= r.end {
			return 0, io.EOF
		}
		if r.body == nil {
			if err := r.connect(); err != nil {
				return 0, err
			}
		}
		if int64(len(p)) > r.end-r.pos {
			p = p[:r.end-r.pos]
		}
		n, err := r.body.Read(p)
		r.pos += int64(n)
		r.h.bytes.Add(int64(n))
		if n > 0 {
			r.idle.Reset(r.h.IdleTimeout)
			r.attempts = 0
		}
		if r.pos >= r.end {
			r.closeBody()
			return n, nil
		}
		if err == nil {
			return n, nil
		}
		// The body ended early or broke: go on from pos with a new request.
		r.closeBody()
		if r.ctx.Err() != nil {
			return n, r.ctx.Err()
		}
		if !r.deadline.IsZero() && time.Now().After(r.deadline) {
			return n, r.tooSlow()
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		err = fmt.Errorf("%s: body ended at byte %d of %d-%d: %w", r.url, r.pos, r.start, r.end-1, err)
		if rerr := r.retry(errRetry{err}); rerr != nil {
			return n, rerr
		}
		if n > 0 {
			return n, nil
		}
	}
}

func (r *rangeReader) tooSlow() error {
	return fmt.Errorf("%s: %w: %d of bytes %d-%d read within the time %d bytes/s allows (%d retries)",
		r.url, ErrTooSlow, r.pos-r.start, r.start, r.end-1, r.h.MinRate, r.h.Retries)
}

func (r *rangeReader) closeBody() {
	if r.idle != nil {
		r.idle.Stop()
		r.idle = nil
	}
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
}

func (r *rangeReader) Close() error {
	r.closeBody()
	if r.release != nil {
		r.release()
		r.release = nil
	}
	return nil
}
