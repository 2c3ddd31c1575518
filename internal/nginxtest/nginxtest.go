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
	"testing"
	"time"
)

// Start serves root at the returned base URL ("http://127.0.0.1:PORT")
// until the test ends.
func Start(t testing.TB, root string) string {
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
	port := freePort(t)
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	os.MkdirAll(filepath.Join(prefix, "logs"), 0o755)
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
    server {
        listen 127.0.0.1:%[2]d;
        root %[3]s;
        location /warcs/ { alias %[3]s/; }
        # A front host that sends clients to the host holding the file.
        location /moved/ { rewrite ^/moved/(.*)$ /warcs/$1 redirect; }
    }
}
`, prefix, port, abs)
	confPath := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", prefix, "-c", confPath)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(prefix, "logs", "error.log"))
			t.Fatalf("nginx did not start: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
