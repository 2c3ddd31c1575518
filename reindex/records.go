package reindex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/record"
)

// Files reads records from the rewritten files under one of Roots, to
// index a restored record whose line the index does not have. It keeps
// the file read last open, and one record.Reader (its buffers are a few
// hundred kB): the records asked for in file and offset order, as an
// update following the log on disk asks for them (stream.go), open each
// file once. Close lets the file go.
type Files struct {
	Roots []string

	name string   // of the file open, as asked for
	f    *os.File // nil if none
	size int64
	rr   *record.Reader
}

// Fields returns the mime and WARC-Payload-Digest of the response at
// offset of file, as the indexers write them: the HTTP Content-Type up to
// its first ";", trimmed ("" without one), and the header's value.
func (s *Files) Fields(file string, offset int64) (string, string, error) {
	if err := s.open(file); err != nil {
		return "", "", err
	}
	if offset >= s.size {
		return "", "", fmt.Errorf("%s: offset %d: the file has %d bytes", file, offset, s.size)
	}
	var err error
	if s.rr, err = record.Reuse(s.rr, io.NewSectionReader(s.f, offset, s.size-offset), file); err != nil {
		return "", "", err
	}
	s.rr.SetBase(offset)
	rec, err := s.rr.Next()
	if err != nil {
		return "", "", err
	}
	if rec.Type != "response" {
		return "", "", fmt.Errorf("%s: offset %d: a %s record, not the restored response", file, offset, rec.Type)
	}
	head, err := s.rr.ReadHTTPHead()
	if err != nil {
		return "", "", err
	}
	return contentType(head.Raw), rec.Header.Get("WARC-Payload-Digest"), nil
}

// open makes file the file open, found under the first root that has it.
func (s *Files) open(file string) error {
	if s.f != nil && s.name == file {
		return nil
	}
	s.Close()
	var f *os.File
	var err error
	for _, root := range s.Roots {
		if f, err = os.Open(filepath.Join(root, filepath.FromSlash(file))); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if f == nil {
		if err == nil {
			err = errors.New("no --root given")
		}
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	s.name, s.f, s.size = file, f, fi.Size()
	return nil
}

// Close closes the file open, if any.
func (s *Files) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.name = nil, ""
	return err
}

// contentType is the mime of an HTTP head as warcio.js gives it.
func contentType(head []byte) string {
	for _, line := range bytes.Split(head, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(name)), "content-type") {
			v, _, _ := strings.Cut(string(value), ";")
			return strings.TrimSpace(v)
		}
	}
	return ""
}
