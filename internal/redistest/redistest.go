// Package redistest starts Debian's redis-server on 127.0.0.1, on a free
// port, with its files in a temporary directory and nothing saved, for
// tests that must talk to a real Redis (the dedup index of Browsertrix's
// crawler). Tests skip when redis-server is not installed, unless the
// environment sets WARCDEDUP_REQUIRE_REDIS=1 (as .ci/run does), in which
// case they fail.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is one running redis-server. Stop and Restart let a test take it
// down and bring it back on the same address (empty: nothing is saved).
type Server struct {
	// URL is "redis://127.0.0.1:PORT/0", as --redisDedupeUrl takes it.
	URL  string
	Addr string // 127.0.0.1:PORT
	Port int
	Dir  string // its working directory and log

	t      testing.TB
	bin    string
	args   []string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts a server that lives until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t)
}

// StartWith starts a server with more configuration, as redis-server
// arguments ("--requirepass", "secret").
func StartWith(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := Binary(t)
	s := &Server{t: t, bin: bin, Dir: t.TempDir(), args: args}
	t.Cleanup(s.Stop)
	// A free port may be taken by another test before the server binds
	// it: then another.
	for try := 1; ; try++ {
		s.Port = FreePort(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		s.URL = "redis://" + s.Addr + "/0"
		err := s.start()
		if err == nil {
			return s
		}
		if try == 3 {
			t.Fatal(err)
		}
	}
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

func (s *Server) start() error {
	s.Stop()
	cmd := exec.Command(s.bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.Port),
		"--dir", s.Dir, "--logfile", filepath.Join(s.Dir, "redis.log"),
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--databases", "16", "--loglevel", "warning")
	cmd.Args = append(cmd.Args, s.args...)
	// Dies with the test binary even when a timeout skips the cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func(exited chan struct{}) { cmd.Wait(); close(exited) }(s.exited)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := ping(s.Addr)
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			s.cmd = nil
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("redis-server exited at start (port %d taken?)\n%s", s.Port, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("redis-server did not answer: %v\n%s", err, log)
		}
	}
}

// ping sends PING in the protocol's inline form and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	// A server that wants a password answers -NOAUTH: it is up.
	if l := strings.TrimSpace(line); l != "+PONG" && !strings.HasPrefix(l, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
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

// Binary returns the redis-server command, or skips the test (fails it
// under WARCDEDUP_REQUIRE_REDIS=1).
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/redis-server"); serr == nil {
			bin, err = "/usr/bin/redis-server", nil
		}
	}
	if err != nil {
		if os.Getenv("WARCDEDUP_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server is required (WARCDEDUP_REQUIRE_REDIS=1) but not installed (Debian: apt-get install redis-server)")
		}
		t.Skip("redis-server not installed")
	}
	return bin
}
