package redis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Kind is the type of a reply.
type Kind uint8

// The reply types of RESP2.
const (
	Nil    Kind = iota // a null bulk string or null array
	Status             // a simple string: +OK
	Err                // an error reply: -ERR ...
	Int                // an integer: :42
	Bulk               // a bulk string: $3 abc
	Array              // an array of replies: *2 ...
)

// Value is one reply. Str holds a Status, Err or Bulk reply, Int an
// integer, Array the elements of an array.
type Value struct {
	Kind  Kind
	Str   string
	Int   int64
	Array []Value
}

// Err returns the reply as an error if it is an error reply, else nil.
func (v Value) Err() error {
	if v.Kind == Err {
		return Error(v.Str)
	}
	return nil
}

// IsNil reports a null reply (a missing key or field).
func (v Value) IsNil() bool { return v.Kind == Nil }

// Error is an error reply of the server ("ERR unknown command", "WRONGTYPE
// ..."): the command failed, the connection is still good.
type Error string

func (e Error) Error() string { return "redis: " + string(e) }

// ProtocolError is a reply that is not RESP2: the connection cannot be
// used any more.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "redis protocol: " + e.Msg }

// Limits on what a reply may announce, so that a damaged stream or a
// server that is not Redis cannot make the client allocate without bound:
// Redis itself refuses strings over 512 MiB.
const (
	maxBulk  = 512 << 20
	maxArray = 1 << 24
)

// appendCommand appends a command as a RESP array of bulk strings.
func appendCommand(dst []byte, args []string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// readValue reads one reply.
func readValue(r *bufio.Reader) (Value, error) {
	line, err := readLine(r)
	if err != nil {
		return Value{}, err
	}
	if len(line) == 0 {
		return Value{}, &ProtocolError{"empty line where a reply was expected"}
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return Value{Kind: Status, Str: string(body)}, nil
	case '-':
		return Value{Kind: Err, Str: string(body)}, nil
	case ':':
		n, err := parseInt(body)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: Int, Int: n}, nil
	case '$':
		n, err := parseInt(body)
		switch {
		case err != nil:
			return Value{}, err
		case n == -1:
			return Value{Kind: Nil}, nil
		case n < 0 || n > maxBulk:
			return Value{}, &ProtocolError{fmt.Sprintf("bulk string of %d bytes", n)}
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return Value{}, unexpectedEOF(err)
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Value{}, &ProtocolError{"bulk string not followed by CRLF"}
		}
		return Value{Kind: Bulk, Str: string(buf[:n])}, nil
	case '*':
		n, err := parseInt(body)
		switch {
		case err != nil:
			return Value{}, err
		case n == -1:
			return Value{Kind: Nil}, nil
		case n < 0 || n > maxArray:
			return Value{}, &ProtocolError{fmt.Sprintf("array of %d elements", n)}
		}
		v := Value{Kind: Array, Array: make([]Value, n)}
		for i := range v.Array {
			if v.Array[i], err = readValue(r); err != nil {
				return Value{}, unexpectedEOF(err)
			}
		}
		return v, nil
	}
	return Value{}, &ProtocolError{fmt.Sprintf("reply starts with %q", line[0])}
}

// readLine reads a line ending in CRLF, without it. A line longer than the
// reader's buffer is refused: only bulk strings are long, and they are
// read by their length.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, &ProtocolError{"reply line too long"}
	case err == io.EOF && len(line) > 0:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, &ProtocolError{"reply line not ended by CRLF"}
	}
	return line[:len(line)-2], nil
}

func parseInt(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, &ProtocolError{fmt.Sprintf("%q is not an integer", b)}
	}
	return n, nil
}

// unexpectedEOF is err, except that the end of the stream inside a reply
// is unexpected.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
