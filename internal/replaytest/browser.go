package replaytest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

//go:embed driver.js
var driverJS []byte

// ChromiumFlags keep Chromium on this machine: no background services, no
// QUIC, every request not for 127.0.0.1 sent to the refusing proxy, and
// every host name but 127.0.0.1 unresolvable. The proxy and profile flags
// are added by Start.
var ChromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
	"--no-first-run", "--no-default-browser-check",
	"--disable-background-networking", "--disable-component-update",
	"--disable-sync", "--disable-domain-reliability", "--disable-breakpad",
	"--disable-client-side-phishing-detection", "--metrics-recording-only",
	"--disable-default-apps", "--disable-extensions", "--mute-audio",
	// Screenshots show the page, not a scroll bar eating its right edge.
	"--hide-scrollbars",
	"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
	"--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
}

// Browser is ReplayWeb.page in a running Chromium, with the test server
// and the refusing proxy.
type Browser struct {
	base   string // the test server, "http://127.0.0.1:PORT"
	proxy  *refusingProxy
	driver *driver
}

// Start starts the test server serving the archive files under root, the
// proxy, Chromium and the driver, and stops them all when the test ends.
// It skips the test when a part is not installed (fails it under
// WARCDEDUP_REQUIRE_BROWSER=1).
func Start(t testing.TB, root string) *Browser {
	t.Helper()
	s := need(t, true)
	base := startServer(t, s.RWP, root)
	return startBrowser(t, s, base)
}

// StartPages starts the proxy, Chromium and the driver, without the test
// server or ReplayWeb.page, for pages opened as files (OpenFile); it
// needs, skips and fails as Start does, but not ReplayWeb.page.
func StartPages(t testing.TB) *Browser {
	t.Helper()
	return startBrowser(t, need(t, false), "")
}

// startBrowser starts the proxy, Chromium and the driver, which knows the
// test server as base ("" without one).
func startBrowser(t testing.TB, s Setup, base string) *Browser {
	t.Helper()
	b := &Browser{base: base}
	var proxyAddr string
	b.proxy, proxyAddr = startProxy(t)

	work := t.TempDir()
	profile := filepath.Join(work, "profile")
	args := append(append([]string{}, ChromiumFlags...),
		"--proxy-server=http://"+proxyAddr,
		"--user-data-dir="+profile,
		"about:blank")
	ws := startProcess(t, "chromium", exec.Command(s.Chromium, args...), devToolsRE, 30*time.Second)

	script := filepath.Join(work, "driver.js")
	if err := os.WriteFile(script, driverJS, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.Node, script, ws, b.base)
	cmd.Env = append(os.Environ(), "NODE_PATH="+s.Modules)
	b.driver = startDriver(t, cmd)
	return b
}

var devToolsRE = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// startProcess starts cmd in a process group of its own, which is killed
// when the test ends, and waits until its stderr prints a line matching
// ready; it returns the first submatch.
func startProcess(t testing.TB, name string, cmd *exec.Cmd, ready *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	log := &tailBuffer{max: 64 << 10}
	found := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			log.Write([]byte(line + "\n"))
			if m := ready.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	exited := make(chan struct{})
	go func() {
		<-drained
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	select {
	case m := <-found:
		return m
	case <-exited:
		t.Fatalf("%s exited before it was ready: %v\n%s", name, cmd.ProcessState, log)
	case <-time.After(timeout):
		t.Fatalf("%s not ready after %v\n%s", name, timeout, log)
	}
	return ""
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = w.b[len(w.b)-w.max:]
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// driver is the running driver.js: one JSON request a line on its stdin,
// one answer a line on its stdout.
type driver struct {
	mu      sync.Mutex
	in      io.WriteCloser
	answers chan []byte
	exited  chan struct{}
	stderr  *tailBuffer
}

func startDriver(t testing.TB, cmd *exec.Cmd) *driver {
	t.Helper()
	d := &driver{answers: make(chan []byte), exited: make(chan struct{}), stderr: &tailBuffer{max: 64 << 10}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = d.stderr
	var err error
	if d.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the driver: %v", err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				break
			}
			d.answers <- line
		}
		cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		d.in.Close()
		select {
		case <-d.exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-d.exited
		}
	})
	return d
}

// call sends req and decodes the answer into v; an answer with "error"
// fails the call.
func (d *driver) call(req any, v any, timeout time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := d.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("driver: %v\n%s", err, d.stderr)
	}
	select {
	case ans := <-d.answers:
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(ans, &e); err != nil {
			return fmt.Errorf("driver: unreadable answer %.200q: %v", ans, err)
		}
		if e.Error != "" {
			return fmt.Errorf("driver: %s\n%s", e.Error, d.stderr)
		}
		return json.Unmarshal(ans, v)
	case <-d.exited:
		return fmt.Errorf("driver exited\n%s", d.stderr)
	case <-time.After(timeout):
		return fmt.Errorf("driver: no answer after %v\n%s", timeout, d.stderr)
	}
}

// Base is the test server's URL, "http://127.0.0.1:PORT".
func (b *Browser) Base() string { return b.base }

// SourceURL is the URL under which the test server serves the file rel
// (slash-separated, relative to the root given to Start).
func (b *Browser) SourceURL(rel string) string {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return b.base + "/warcs/" + strings.Join(parts, "/")
}

// Refused lists what Chromium asked of the refusing proxy so far ("CONNECT
// host:443", "GET http://..."): requests that would have left the machine.
func (b *Browser) Refused() []string { return b.proxy.list() }

// Collection is one source loaded into ReplayWeb.page.
type Collection struct {
	b        *Browser
	Source   string        // the source URL
	ID       string        // ReplayWeb.page's collection id
	LoadTime time.Duration // from opening the page to the collection's answer
	Info     map[string]any
}

// Load opens ReplayWeb.page on the source URL (a .warc, .warc.gz or .wacz
// the test server serves) and waits until the collection is loaded.
func (b *Browser) Load(source string) (*Collection, error) {
	c := &Collection{b: b, Source: source, ID: CollectionID(source)}
	var ans struct {
		MS   int64          `json:"ms"`
		Info map[string]any `json:"info"`
	}
	timeout := 3 * time.Minute
	req := map[string]any{"op": "load", "source": source, "coll": c.ID, "timeoutMs": timeout.Milliseconds()}
	if err := b.driver.call(req, &ans, timeout+30*time.Second); err != nil {
		return nil, fmt.Errorf("loading %s: %w", source, err)
	}
	c.LoadTime = time.Duration(ans.MS) * time.Millisecond
	c.Info = ans.Info
	return c, nil
}

// Capture names a capture to fetch: its URL and 14-digit timestamp.
type Capture struct {
	Timestamp string
	URL       string
}

// Path is the replay path of the capture with the modifier mod: "id_"
// for its raw bytes, "mp_" for the page as ReplayWeb.page's frame shows it.
func (c *Collection) Path(cp Capture, mod string) string {
	return "/w/" + c.ID + "/" + cp.Timestamp + mod + "/" + cp.URL
}

// Response is what the service worker answered for a capture.
type Response struct {
	Status     int
	URL        string // the URL finally answered, after redirects
	Redirected bool
	Header     http.Header
	Body       []byte
	Err        string        // the fetch failed
	Time       time.Duration // from asking to the whole body
}

// Fetch fetches the raw captures (id_) from the collection, all in the
// one browser session, and returns the answers in order.
func (c *Collection) Fetch(captures []Capture) ([]Response, error) {
	return c.FetchMod(captures, "id_")
}

// FetchMod fetches the captures with the replay modifier mod.
func (c *Collection) FetchMod(captures []Capture, mod string) ([]Response, error) {
	paths := make([]string, len(captures))
	for i, cp := range captures {
		paths[i] = c.Path(cp, mod)
	}
	return c.b.fetchPaths(paths)
}

func (b *Browser) fetchPaths(paths []string) ([]Response, error) {
	out := make([]Response, 0, len(paths))
	const batch = 200 // bounds one answer's size
	for len(paths) > 0 {
		n := min(batch, len(paths))
		var ans struct {
			Results []struct {
				Status     int         `json:"status"`
				URL        string      `json:"url"`
				Redirected bool        `json:"redirected"`
				Headers    [][2]string `json:"headers"`
				Body       string      `json:"body"`
				Error      string      `json:"error"`
				MS         int64       `json:"ms"`
			} `json:"results"`
		}
		if err := b.driver.call(map[string]any{"op": "fetch", "paths": paths[:n]}, &ans, 5*time.Minute); err != nil {
			return nil, err
		}
		if len(ans.Results) != n {
			return nil, fmt.Errorf("driver: %d answers to %d fetches", len(ans.Results), n)
		}
		for i, r := range ans.Results {
			resp := Response{Status: r.Status, URL: r.URL, Redirected: r.Redirected, Err: r.Error, Header: http.Header{}, Time: time.Duration(r.MS) * time.Millisecond}
			for _, h := range r.Headers {
				resp.Header.Add(h[0], h[1])
			}
			body, err := base64.StdEncoding.DecodeString(r.Body)
			if err != nil {
				return nil, fmt.Errorf("driver: body of %s: %v", paths[i], err)
			}
			resp.Body = body
			out = append(out, resp)
		}
		paths = paths[n:]
	}
	return out, nil
}

// Loaded is a response a replayed page got: the URL asked, its status
// and the SHA-256 of its body (hex).
type Loaded struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	SHA256 string `json:"sha256"`
}

// View is what a tab showed: every response its frames got, in order,
// and the tab's URL once the network was quiet.
type View struct {
	Loaded []Loaded
	Href   string
}

// Open opens path of the test server in a tab of its own, waits until the
// network is quiet, and returns what the tab loaded.
func (b *Browser) Open(path string) (*View, error) {
	var ans struct {
		Requests []Loaded `json:"requests"`
		Href     string   `json:"href"`
	}
	if err := b.driver.call(map[string]any{"op": "frames", "path": path, "waitMs": 30000}, &ans, time.Minute); err != nil {
		return nil, err
	}
	return &View{ans.Requests, ans.Href}, nil
}

// ViewPath is the path of ReplayWeb.page showing the capture of the
// collection in its replay view, as a user's link to it reads.
func (c *Collection) ViewPath(cp Capture) string {
	v := url.Values{"url": {cp.URL}, "ts": {cp.Timestamp}, "view": {"replay"}}
	return "/?source=" + url.QueryEscape(c.Source) + "#" + v.Encode()
}

func (r *Response) diff(o *Response) []string {
	var d []string
	if r.Status != o.Status {
		d = append(d, fmt.Sprintf("status %d, was %d", o.Status, r.Status))
	}
	for _, h := range []string{"Content-Type", "Content-Encoding"} {
		if a, b := r.Header.Get(h), o.Header.Get(h); a != b {
			d = append(d, fmt.Sprintf("%s %q, was %q", h, b, a))
		}
	}
	if !bytes.Equal(r.Body, o.Body) {
		d = append(d, fmt.Sprintf("body of %d bytes (sha256 %.12x), was %d bytes (sha256 %.12x)", len(o.Body), sha(o.Body), len(r.Body), sha(r.Body)))
	}
	if r.Err != o.Err {
		d = append(d, fmt.Sprintf("fetch error %q, was %q", o.Err, r.Err))
	}
	return d
}

// Diff lists how after differs from before as a reader sees it: status,
// Content-Type, Content-Encoding, body bytes, a failed fetch. None means
// the capture replays the same.
func Diff(before, after *Response) []string { return before.diff(after) }

func sha(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// FileOptions say how OpenFile shows a page.
type FileOptions struct {
	Width, Height int    // of the viewport, in CSS pixels (default 1280x800)
	Media         string // "print" to lay the page out as printed; "" for the screen
	Screenshot    string // where to write a PNG of the whole page, if not ""
	PDF           string // where to write the page printed on A4, if not ""
}

// FileView is what a page opened as a file did and showed.
type FileView struct {
	Requests []FileRequest // every request the page made, the file itself first
	Console  []ConsoleMessage
	Errors   []string // uncaught exceptions
	Title    string   // document.title
	Text     string   // the body's innerText
	// Width and Height are the document's scroll size; ClientWidth is the
	// width it is laid out in. A Width above ClientWidth means the page
	// scrolls sideways.
	Width, Height, ClientWidth float64
	// Wide names the innermost elements (at most 10) that reach beyond
	// ClientWidth, with their right edge and text.
	Wide []string
	SVGs []SVGBox
}

// FileRequest is one request a page made.
type FileRequest struct {
	URL    string `json:"url"`
	Method string `json:"method"`
	Type   string `json:"type"` // puppeteer's resource type: document, image, ...
}

// ConsoleMessage is one message the page logged: its type ("log",
// "error", "warn", ...) and text.
type ConsoleMessage struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// SVGBox is an svg element as laid out: its id and aria-label, its size,
// and the boxes of its text elements relative to its top left corner.
type SVGBox struct {
	ID     string    `json:"id"`
	Label  string    `json:"label"`
	Width  float64   `json:"width"`
	Height float64   `json:"height"`
	Texts  []TextBox `json:"texts"`
}

// TextBox is the box an SVG text element's glyphs take, and the size of
// its font as drawn: its CSS font size scaled as its svg is.
type TextBox struct {
	Text   string  `json:"text"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	W      float64 `json:"w"`
	H      float64 `json:"h"`
	FontPx float64 `json:"px"`
}

// OpenFile opens the local file path as a file:// URL in a tab of its own,
// waits for its load event, and returns what the page requested, logged
// and laid out; it writes a screenshot and a PDF when opts asks for them.
// A page that must stand alone requests nothing but itself, and the
// refusing proxy (Refused) sees nothing.
func (b *Browser) OpenFile(path string, opts FileOptions) (*FileView, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	req := map[string]any{"op": "file", "url": u.String(), "width": opts.Width, "height": opts.Height,
		"media": opts.Media, "screenshot": opts.Screenshot, "pdf": opts.PDF, "timeoutMs": 60000}
	var ans struct {
		Requests []FileRequest    `json:"requests"`
		Console  []ConsoleMessage `json:"console"`
		Errors   []string         `json:"errors"`
		Title    string           `json:"title"`
		Text     string           `json:"text"`
		Width    float64          `json:"width"`
		Height   float64          `json:"height"`
		Client   float64          `json:"clientWidth"`
		Wide     []string         `json:"wide"`
		SVGs     []SVGBox         `json:"svgs"`
	}
	if err := b.driver.call(req, &ans, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return &FileView{ans.Requests, ans.Console, ans.Errors, ans.Title, ans.Text, ans.Width, ans.Height, ans.Client, ans.Wide, ans.SVGs}, nil
}
