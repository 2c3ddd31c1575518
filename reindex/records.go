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
// index a restored record whose line the index does not have.
type Files struct {
	Roots []string
}

// Fields returns the mime and WARC-Payload-Digest of the response at
// offset of file, as the indexers write them: the HTTP Content-Type up to
// its first ";", trimmed ("" without one), and the header's value.
func (s *Files) Fields(file string, offset int64) (string, string, error) {
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
		return "", "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", "", err
	}
	if offset >= fi.Size() {
		return "", "", fmt.Errorf("%s: offset %d: the file has %d bytes", file, offset, fi.Size())
	}
	rr, err := record.NewReader(io.NewSectionReader(f, offset, fi.Size()-offset), file)
	if err != nil {
		return "", "", err
	}
	rec, err := rr.Next()
	if err != nil {
		return "", "", err
	}
	if rec.Type != "response" {
		return "", "", fmt.Errorf("%s: offset %d: a %s record, not the restored response", file, offset, rec.Type)
	}
	head, err := rr.ReadHTTPHead()
	if err != nil {
		return "", "", err
	}
	return contentType(head.Raw), rec.Header.Get("WARC-Payload-Digest"), nil
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
