// Package ziptest writes ZIP archives anew for tests, as another writer
// would have written them: a streaming writer's data descriptors after
// every member, members' data at other offsets. The members' contents
// and order stay as they were.
//
// It imports no package of the module, so that every package's tests
// can use it, those of package wacz included (internal/jobtest, the
// shared test helpers, imports wacz: its tests cannot import jobtest).
package ziptest

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"testing"
)

// Rewrite says how Bytes and File write each member anew with
// archive/zip.
type Rewrite struct {
	// Raw copies each member's data as stored (zip.Writer.CreateRaw: its
	// CRC-32 and sizes in the local header, no data descriptor). Else
	// the data is compressed anew as a streaming writer does
	// (Browsertrix, ArchiveWeb.page; zip.Writer.CreateHeader: zero CRC-32
	// and sizes in the local header, a data descriptor after the data).
	Raw bool
	// Header, when set, changes the header of the i-th member (a copy
	// of the archive's) before it is written.
	Header func(i int, h *zip.FileHeader)
}

// Bytes returns the ZIP archive b written anew.
func (rw Rewrite) Bytes(t testing.TB, b []byte) []byte {
	t.Helper()
	r, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rw.write(t, r, &out)
	return out.Bytes()
}

// File writes the ZIP archive at path anew, in its place.
func (rw Rewrite) File(t testing.TB, path string) {
	t.Helper()
	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tmp := path + ".rewrite"
	out, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	rw.write(t, &r.Reader, out)
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// write writes the members of r to out.
func (rw Rewrite) write(t testing.TB, r *zip.Reader, out io.Writer) {
	t.Helper()
	zw := zip.NewWriter(out)
	for i, f := range r.File {
		h := f.FileHeader
		if rw.Header != nil {
			rw.Header(i, &h)
		}
		var w io.Writer
		var data io.ReadCloser
		var err error
		if rw.Raw {
			w, err = zw.CreateRaw(&h)
			if err == nil {
				var raw io.Reader
				raw, err = f.OpenRaw()
				data = io.NopCloser(raw)
			}
		} else {
			w, err = zw.CreateHeader(&h)
			if err == nil {
				data, err = f.Open()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, data); err != nil {
			t.Fatal(err)
		}
		if err := data.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}
