// Package redis is a small client of the Redis protocol (RESP2) over one
// connection: commands sent one at a time or pipelined, their replies
// read back as Values. It is what the crawl index's export to a Redis
// dedup index needs (hashes, sets, lists, SCAN, MULTI/EXEC) and no more:
// no pooling, no cluster, no RESP3. Kvrocks speaks the same protocol.
package redis

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Options tune a connection.
type Options struct {
	// DialTimeout bounds connecting (and the AUTH and SELECT after it);
	// 10 seconds if zero.
	DialTimeout time.Duration
	// Timeout bounds each round trip (one command, or one pipeline
	// written and its replies read); 5 minutes if zero: a DEL of a large
	// hash is slow, a server that stopped answering is not.
	Timeout time.Duration
}

// Conn is one connection. It is not safe for concurrent use.
type Conn struct {
	nc      net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	where   string // the server, for messages: host:port or a socket path
	timeout time.Duration
	err     error // the I/O or protocol error that made the connection unusable
}

// Address is a parsed Redis URL.
type Address struct {
	Network  string // "tcp" or "unix"
	Addr     string // host:port or a socket path
	TLS      bool
	Username string
	Password string
	DB       int
}

// ParseURL reads the URL forms Redis clients take:
// redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], rediss://... (TLS), and
// unix:///PATH[?db=DB] for a socket. The port is 6379 by default.
func ParseURL(raw string) (Address, error) {
	var a Address
	u, err := url.Parse(raw)
	if err != nil {
		return a, fmt.Errorf("redis URL %q: %v", raw, err)
	}
	if u.User != nil {
		a.Username = u.User.Username()
		a.Password, _ = u.User.Password()
		if _, ok := u.User.Password(); !ok {
			// redis://PASSWORD@host: a lone user part is the password.
			a.Username, a.Password = "", u.User.Username()
		}
	}
	db := ""
	switch u.Scheme {
	case "redis", "rediss":
		if u.Hostname() == "" {
			return a, fmt.Errorf("redis URL %q names no host", raw)
		}
		a.Network, a.TLS = "tcp", u.Scheme == "rediss"
		port := u.Port()
		if port == "" {
			port = "6379"
		}
		a.Addr = net.JoinHostPort(u.Hostname(), port)
		db = strings.Trim(u.Path, "/")
		if db == "" {
			db = u.Query().Get("db")
		}
	case "unix":
		if u.Path == "" {
			return a, fmt.Errorf("redis URL %q names no socket", raw)
		}
		a.Network, a.Addr = "unix", u.Path
		db = u.Query().Get("db")
	default:
		return a, fmt.Errorf("redis URL %q: the scheme must be redis://, rediss:// or unix://", raw)
	}
	if db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return a, fmt.Errorf("redis URL %q: database %q is not a number", raw, db)
		}
		a.DB = n
	}
	return a, nil
}

// Dial connects to the server the URL names, authenticates and selects
// its database.
func Dial(ctx context.Context, rawURL string, opt Options) (*Conn, error) {
	a, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if opt.DialTimeout == 0 {
		opt.DialTimeout = 10 * time.Second
	}
	if opt.Timeout == 0 {
		opt.Timeout = 5 * time.Minute
	}
	dctx, cancel := context.WithTimeout(ctx, opt.DialTimeout)
	defer cancel()
	var nc net.Conn
	if a.TLS {
		host, _, _ := net.SplitHostPort(a.Addr)
		d := tls.Dialer{Config: &tls.Config{ServerName: host}}
		nc, err = d.DialContext(dctx, a.Network, a.Addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(dctx, a.Network, a.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", a.Addr, err)
	}
	c := &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10),
		where: a.Addr, timeout: opt.DialTimeout}
	hello := func() error {
		if a.Password != "" {
			args := []string{"AUTH", a.Password}
			if a.Username != "" {
				args = []string{"AUTH", a.Username, a.Password}
			}
			if _, err := c.Do(args...); err != nil {
				return err
			}
		}
		if a.DB != 0 {
			if _, err := c.Do("SELECT", strconv.Itoa(a.DB)); err != nil {
				return err
			}
		}
		_, err := c.Do("PING")
		return err
	}
	if err := hello(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("redis %s: %w", a.Addr, err)
	}
	c.timeout = opt.Timeout
	return c, nil
}

// Where names the server, for messages.
func (c *Conn) Where() string { return c.where }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Do sends one command and returns its reply; an error reply is returned
// as an Error.
func (c *Conn) Do(args ...string) (Value, error) {
	p := c.Pipeline()
	p.Send(args...)
	vs, err := p.Exec()
	if err != nil {
		return Value{}, err
	}
	return vs[0], vs[0].Err()
}

// Pipeline is a batch of commands written together and answered together:
// one round trip for the batch. Other commands may be sent on the
// connection while a batch is being filled.
type Pipeline struct {
	c   *Conn
	buf []byte
	n   int
}

// Pipeline starts a batch.
func (c *Conn) Pipeline() *Pipeline {
	return &Pipeline{c: c}
}

// Send adds a command to the batch.
func (p *Pipeline) Send(args ...string) {
	p.buf = appendCommand(p.buf, args)
	p.n++
}

// Len is the number of commands in the batch.
func (p *Pipeline) Len() int { return p.n }

// Size is the number of bytes the batch will write.
func (p *Pipeline) Size() int { return len(p.buf) }

// Exec writes the batch and reads its replies, one per command, in order.
// Error replies are Values of kind Err, not an error: the other commands
// ran. The error is one of the connection, after which it is unusable.
func (p *Pipeline) Exec() ([]Value, error) {
	c := p.c
	if c.err != nil {
		return nil, c.err
	}
	n, buf := p.n, p.buf
	p.n, p.buf = 0, p.buf[:0]
	if n == 0 {
		return nil, nil
	}
	c.nc.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.w.Write(buf); err != nil {
		return nil, c.fail(err)
	}
	if err := c.w.Flush(); err != nil {
		return nil, c.fail(err)
	}
	out := make([]Value, n)
	for i := range out {
		v, err := readValue(c.r)
		if err != nil {
			return nil, c.fail(err)
		}
		out[i] = v
	}
	return out, nil
}

// fail marks the connection unusable with err, named by the server.
func (c *Conn) fail(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		err = fmt.Errorf("no answer within %v: %w", c.timeout, err)
	}
	c.err = fmt.Errorf("redis %s: %w", c.where, err)
	c.nc.Close()
	return c.err
}

// Strings is an array reply of strings (SMEMBERS, LRANGE, HMGET: a nil
// element is ""), or an error reply as an error.
func Strings(v Value, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if v.Kind == Nil {
		return nil, nil
	}
	if v.Kind != Array {
		return nil, &ProtocolError{fmt.Sprintf("an array was expected, not a reply of kind %d", v.Kind)}
	}
	out := make([]string, len(v.Array))
	for i, e := range v.Array {
		out[i] = e.Str
	}
	return out, nil
}

// Int64 is an integer reply, or an error reply as an error.
func Int64(v Value, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	if err := v.Err(); err != nil {
		return 0, err
	}
	if v.Kind != Int {
		return 0, &ProtocolError{fmt.Sprintf("an integer was expected, not a reply of kind %d", v.Kind)}
	}
	return v.Int, nil
}

// Scan walks a SCAN, HSCAN or SSCAN iteration a batch at a time. The
// server may give an element more than once (when the key set changes
// during the walk); every element there from start to end is given.
type Scan struct {
	c      *Conn
	cmd    string
	key    string
	opts   []string
	cursor string
	done   bool
}

// Scan starts a SCAN (key "") or an HSCAN or SSCAN of key, with options
// such as "MATCH", pattern, "COUNT", "1000".
func (c *Conn) Scan(cmd, key string, opts ...string) *Scan {
	return &Scan{c: c, cmd: cmd, key: key, opts: opts, cursor: "0"}
}

// Next returns the next batch: keys (SCAN), members (SSCAN) or field,
// value, field, value... (HSCAN). It returns nil, nil at the end.
func (s *Scan) Next() ([]string, error) {
	for !s.done {
		args := []string{s.cmd}
		if s.key != "" {
			args = append(args, s.key)
		}
		args = append(append(args, s.cursor), s.opts...)
		v, err := s.c.Do(args...)
		if err != nil {
			return nil, err
		}
		if v.Kind != Array || len(v.Array) != 2 || v.Array[0].Kind != Bulk {
			return nil, &ProtocolError{s.cmd + " reply is not [cursor, elements]"}
		}
		s.cursor = v.Array[0].Str
		s.done = s.cursor == "0"
		batch, err := Strings(v.Array[1], nil)
		if err != nil {
			return nil, err
		}
		if len(batch) > 0 {
			return batch, nil
		}
	}
	return nil, nil
}
