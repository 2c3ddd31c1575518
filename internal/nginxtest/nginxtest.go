// Package nginxtest starts Debian's nginx on 127.0.0.1 serving a directory,
// the way a storage host serves WARC files, for tests that must talk to a
// real HTTP server. Tests skip when nginx is not installed, unless the
// environment sets WARCDEDUP_REQUIRE_NGINX=1 (as .ci/run does), in which
// case they fail.
package nginxtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Start serves root at the returned base URL ("http://127.0.0.1:PORT")
// until the test ends: files under /warcs/, and /moved/NAME redirects to
// /warcs/NAME.
func Start(t testing.TB, root string) string {
	t.Helper()
	return StartServer(t, root, Options{}).URL
}

// Options adds to the configuration Start writes, for tests that need a
// server that behaves unlike a plain file server.
type Options struct {
	// Port to listen on (127.0.0.1); 0 picks a free one. Tests that must
	// know every server's address before writing any configuration (hosts
	// that redirect to each other) reserve ports with FreePort.
	Port int
	// HTTP holds directives for the http block (a map, for example).
	HTTP string
	// Server holds directives for the server block (named locations).
	Server string
	// Warcs holds extra directives for location /warcs/, which serves root
	// (an error_page that sends misses elsewhere, for example).
	Warcs string
}

// Server is one running nginx. Stop and Restart let a test take a storage
// host down and bring it back on the same address.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT".
	URL  string
	Port int

	t      testing.TB
	bin    string
	prefix string
	conf   string
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// StartServer serves root with opt's additions until the test ends.
func StartServer(t testing.TB, root string, opt Options) *Server {
	t.Helper()
	bin := binary(t)
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	port := opt.Port
	if port == 0 {
		port = FreePort(t)
	}
	prefix := t.TempDir()
	if err := os.MkdirAll(filepath.Join(prefix, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    sendfile on;
    keepalive_requests 10000;
%[4]s
    server {
        listen 127.0.0.1:%[2]d;
        root %[3]s;
        location /warcs/ {
            alias %[3]s/;
%[6]s
        }
        # A front host that sends clients to the host holding the file.
        location /moved/ { rewrite ^/moved/(.*)$ /warcs/$1 redirect; }
%[5]s
    }
}
`, prefix, port, abs, opt.HTTP, opt.Server, opt.Warcs)
	s := &Server{
		URL:    fmt.Sprintf("http://127.0.0.1:%d", port),
		Port:   port,
		t:      t,
		bin:    bin,
		prefix: prefix,
		conf:   filepath.Join(prefix, "nginx.conf"),
	}
	if err := os.WriteFile(s.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	s.Restart()
	return s
}

// Stop ends the server; its address then refuses connections. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts the server again on the same address with the same
// configuration (it starts it if stopped) and waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	cmd := exec.Command(s.bin, "-p", s.prefix, "-c", s.conf)
	cmd.Stderr = os.Stderr
	// Dies with the test binary even when a timeout skips the cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func(exited chan struct{}) { cmd.Wait(); close(exited) }(s.exited)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.prefix, "logs", "error.log"))
			s.t.Fatalf("nginx did not start: %v\n%s", err, log)
		}
		select {
		case <-s.exited:
			// The configuration is wrong or the port is taken.
			s.cmd = nil
			log, _ := os.ReadFile(filepath.Join(s.prefix, "logs", "error.log"))
			s.t.Fatalf("nginx exited at start\n%s", log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		if os.Getenv("WARCDEDUP_REQUIRE_NGINX") == "1" {
			t.Fatal("nginx is required (WARCDEDUP_REQUIRE_NGINX=1) but not installed")
		}
		t.Skip("nginx not installed")
	}
	return bin
}
