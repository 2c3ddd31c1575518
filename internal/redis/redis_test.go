package redis_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/redis"
	"warcdedup/internal/redistest"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url  string
		want redis.Address
		err  string
	}{
		{url: "redis://127.0.0.1:6380/2", want: redis.Address{Network: "tcp", Addr: "127.0.0.1:6380", DB: 2}},
		{url: "redis://dedupe-index", want: redis.Address{Network: "tcp", Addr: "dedupe-index:6379"}},
		{url: "redis://:secret@host:1/0", want: redis.Address{Network: "tcp", Addr: "host:1", Password: "secret"}},
		{url: "redis://secret@host", want: redis.Address{Network: "tcp", Addr: "host:6379", Password: "secret"}},
		{url: "redis://user:pw@host", want: redis.Address{Network: "tcp", Addr: "host:6379", Username: "user", Password: "pw"}},
		{url: "rediss://host/3", want: redis.Address{Network: "tcp", Addr: "host:6379", TLS: true, DB: 3}},
		{url: "redis://[::1]:7000", want: redis.Address{Network: "tcp", Addr: "[::1]:7000"}},
		{url: "unix:///run/redis.sock?db=4", want: redis.Address{Network: "unix", Addr: "/run/redis.sock", DB: 4}},
		{url: "http://host", err: "scheme"},
		{url: "redis:///0", err: "no host"},
		{url: "redis://host/x", err: "not a number"},
		{url: "unix://", err: "no socket"},
	} {
		got, err := redis.ParseURL(c.url)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.url, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.url, got, err, c.want)
		}
	}
}

// closeMark ends a fake reply after which the server hangs up.
const closeMark = "\x00close"

// fakeServer answers every command with the bytes reply, once per
// command read, so that replies the real server never sends can be tried.
func fakeServer(t *testing.T, reply func(cmd []string) string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					cmd, err := readCommand(r)
					if err != nil {
						return
					}
					out := reply(cmd)
					if out == "" {
						continue // never answer
					}
					out, closing := strings.CutSuffix(out, closeMark)
					if _, err := c.Write([]byte(out)); err != nil || closing {
						return
					}
				}
			}()
		}
	}()
	return "redis://" + l.Addr().String()
}

// readCommand reads a command as clients send it: an array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || line[0] != '*' {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	args := make([]string, n)
	for i := range args {
		h, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, _ := strconv.Atoi(strings.TrimSpace(h[1:]))
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

// TestReplies reads every kind of reply, and refuses what is not RESP2,
// from a server that answers GET with a canned reply.
func TestReplies(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply string
		want  redis.Value
		err   string // of the connection
		rerr  string // an error reply
	}{
		{name: "status", reply: "+OK\r\n", want: redis.Value{Kind: redis.Status, Str: "OK"}},
		{name: "error reply", reply: "-WRONGTYPE Operation against a key\r\n", rerr: "WRONGTYPE"},
		{name: "integer", reply: ":-42\r\n", want: redis.Value{Kind: redis.Int, Int: -42}},
		{name: "bulk", reply: "$5\r\na\r\nb \r\n", want: redis.Value{Kind: redis.Bulk, Str: "a\r\nb "}},
		{name: "empty bulk", reply: "$0\r\n\r\n", want: redis.Value{Kind: redis.Bulk}},
		{name: "nil bulk", reply: "$-1\r\n", want: redis.Value{Kind: redis.Nil}},
		{name: "nil array", reply: "*-1\r\n", want: redis.Value{Kind: redis.Nil}},
		{name: "nested array", reply: "*2\r\n:1\r\n*1\r\n$1\r\nx\r\n", want: redis.Value{Kind: redis.Array, Array: []redis.Value{
			{Kind: redis.Int, Int: 1}, {Kind: redis.Array, Array: []redis.Value{{Kind: redis.Bulk, Str: "x"}}}}}},
		{name: "unknown type", reply: "%1\r\n", err: "reply starts with '%'"},
		{name: "bad integer", reply: ":x\r\n", err: "not an integer"},
		{name: "huge bulk", reply: "$99999999999\r\n", err: "bulk string of"},
		{name: "huge array", reply: "*99999999999\r\n", err: "array of"},
		{name: "bulk without CRLF", reply: "$1\r\nxy\r\n", err: "not followed by CRLF"},
		{name: "LF only", reply: "+OK\n", err: "not ended by CRLF"},
		{name: "cut bulk", reply: "$10\r\nabc" + closeMark, err: "unexpected EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := fakeServer(t, func(cmd []string) string {
				if cmd[0] == "PING" {
					return "+PONG\r\n"
				}
				return c.reply
			})
			conn, err := redis.Dial(context.Background(), url, redis.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			v, err := conn.Do("GET", "k")
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) && !strings.Contains(err.Error(), "no answer") {
					t.Fatalf("reply %q: %v, %v; want an error saying %q", c.reply, v, err, c.err)
				}
				if _, err2 := conn.Do("PING"); err2 == nil {
					t.Errorf("the connection is still used after %v", err)
				}
			case c.rerr != "":
				var re redis.Error
				if !errors.As(err, &re) || !strings.Contains(err.Error(), c.rerr) {
					t.Fatalf("reply %q: %v; want an error reply %q", c.reply, err, c.rerr)
				}
				if _, err := conn.Do("PING"); err != nil {
					t.Errorf("after an error reply the connection fails: %v", err)
				}
			default:
				if err != nil || !reflect.DeepEqual(v, c.want) {
					t.Fatalf("reply %q: %+v, %v; want %+v", c.reply, v, err, c.want)
				}
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	port := redistest.FreePort(t)
	_, err := redis.Dial(context.Background(), fmt.Sprintf("redis://127.0.0.1:%d", port), redis.Options{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("redis 127.0.0.1:%d", port)) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("dial of a closed port: %v; want an error naming the address and the refusal", err)
	}
}

// TestSilentServer: a server that accepts and never answers fails the
// round trip after the timeout instead of hanging.
func TestSilentServer(t *testing.T) {
	url := fakeServer(t, func(cmd []string) string {
		if cmd[0] == "PING" {
			return "+PONG\r\n"
		}
		return ""
	})
	conn, err := redis.Dial(context.Background(), url, redis.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.Do("GET", "k")
	if err == nil || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("silent server: %v; want a timeout", err)
	}
}

// TestServer runs the commands the export and import use against
// Debian's redis-server.
func TestServer(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c, err := redis.Dial(ctx, srv.URL, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// A pipeline of mixed commands, an error reply among them.
	p := c.Pipeline()
	p.Send("HSET", "h:c", "a", "0 20240101000000 http://x/ 10", "b", "1 20240101000001 http://y/ 20")
	p.Send("SADD", "allcrawls", "c")
	p.Send("RPUSH", "c:c:wacz", `{"filename":"a.wacz"}`)
	p.Send("HINCRBY", "allcounts", "totalUrls", "2")
	p.Send("HGET", "h:c", "nope")
	p.Send("LPUSH", "h:c", "x") // WRONGTYPE
	p.Send("HGET", "h:c", "a")
	vs, err := p.Exec()
	if err != nil {
		t.Fatal(err)
	}
	if vs[0].Int != 2 || vs[1].Int != 1 || vs[2].Int != 1 || vs[3].Int != 2 || !vs[4].IsNil() ||
		vs[5].Kind != redis.Err || !strings.HasPrefix(vs[5].Str, "WRONGTYPE") || vs[6].Str != "0 20240101000000 http://x/ 10" {
		t.Fatalf("pipeline replies: %+v", vs)
	}

	// MULTI/EXEC: the queued commands answer QUEUED, EXEC all results.
	p = c.Pipeline()
	p.Send("MULTI")
	p.Send("RENAME", "h:c", "h:d")
	p.Send("SMOVE", "allcrawls", "allcrawls", "c")
	p.Send("EXEC")
	vs, err = p.Exec()
	if err != nil {
		t.Fatal(err)
	}
	if vs[1].Str != "QUEUED" || vs[3].Kind != redis.Array || len(vs[3].Array) != 2 || vs[3].Array[0].Str != "OK" {
		t.Fatalf("MULTI/EXEC replies: %+v", vs)
	}

	// Scans give every element once the walk ends.
	p = c.Pipeline()
	for i := range 2500 {
		p.Send("HSET", "big", fmt.Sprintf("f%04d", i), strconv.Itoa(i))
		p.Send("SADD", "set", fmt.Sprintf("m%04d", i))
	}
	if _, err := p.Exec(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	s := c.Scan("HSCAN", "big", "COUNT", "100")
	for {
		batch, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if batch == nil {
			break
		}
		for i := 0; i < len(batch); i += 2 {
			if batch[i+1] != strings.TrimLeft(batch[i][1:], "0") && !(batch[i] == "f0000" && batch[i+1] == "0") {
				t.Fatalf("HSCAN pair %q %q", batch[i], batch[i+1])
			}
			seen[batch[i]] = true
		}
	}
	if len(seen) != 2500 {
		t.Fatalf("HSCAN gave %d fields, want 2500", len(seen))
	}
	members, err := redis.Strings(c.Do("SMEMBERS", "set"))
	if err != nil || len(members) != 2500 {
		t.Fatalf("SMEMBERS: %d, %v", len(members), err)
	}
	var keys []string
	s = c.Scan("SCAN", "", "MATCH", "h:*", "COUNT", "10")
	for {
		batch, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if batch == nil {
			break
		}
		keys = append(keys, batch...)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"h:d"}) {
		t.Fatalf("SCAN MATCH h:*: %q", keys)
	}

	// A server that goes away: the error names it, the connection is done.
	srv.Stop()
	if _, err := c.Do("PING"); err == nil || !strings.Contains(err.Error(), srv.Addr) {
		t.Fatalf("PING to a stopped server: %v", err)
	}
	if _, err := c.Do("PING"); err == nil {
		t.Fatal("a failed connection was used again")
	}
}

func TestAuthAndDB(t *testing.T) {
	srv := redistest.StartWith(t, "--requirepass", "s3cret")
	ctx := context.Background()
	if _, err := redis.Dial(ctx, srv.URL, redis.Options{}); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("no password: %v", err)
	}
	if _, err := redis.Dial(ctx, "redis://:wrong@"+srv.Addr, redis.Options{}); err == nil {
		t.Fatal("a wrong password was taken")
	}
	c, err := redis.Dial(ctx, "redis://:s3cret@"+srv.Addr+"/3", redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	c0, err := redis.Dial(ctx, "redis://:s3cret@"+srv.Addr+"/0", redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	if v, err := c0.Do("GET", "k"); err != nil || !v.IsNil() {
		t.Fatalf("database 0 sees database 3's key: %+v %v", v, err)
	}
}

// BenchmarkPipelineHSET measures what the export's batches cost: HSET of
// one field per command, 1,000 commands per round trip.
func BenchmarkPipelineHSET(b *testing.B) {
	srv := redistest.Start(b)
	c, err := redis.Dial(context.Background(), srv.URL, redis.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	value := "0 20240605101112 https://example.com/some/path/to/a/page.html 12345"
	b.ResetTimer()
	p := c.Pipeline()
	for i := range b.N {
		p.Send("HSET", "h:bench", fmt.Sprintf("%064x", i), value)
		if p.Len() == 1000 {
			if _, err := p.Exec(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := p.Exec(); err != nil {
		b.Fatal(err)
	}
}
