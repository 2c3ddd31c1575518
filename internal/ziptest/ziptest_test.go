package ziptest

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// archive is a ZIP of a stored and a deflated member, written without
// data descriptors (CreateRaw), as package wacz writes a package.
func archive(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	src := zip.NewWriter(&b)
	for _, m := range []struct {
		name   string
		method uint16
	}{{"archive/data.warc.gz", zip.Store}, {"pages/pages.jsonl", zip.Deflate}} {
		w, err := src.CreateHeader(&zip.FileHeader{Name: m.name, Method: m.method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(bytes.Repeat([]byte(m.name), 100))
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	// Once more, raw: no data descriptors.
	return Rewrite{Raw: true, Header: func(_ int, h *zip.FileHeader) { h.Flags &^= 0x8 }}.Bytes(t, b.Bytes())
}

// members are the names, contents and flags of the members of b, and
// where each one's data starts.
func members(t *testing.T, b []byte) (names []string, contents [][]byte, flags []uint16, at []int64) {
	t.Helper()
	r, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		c, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		off, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		names, contents, flags, at = append(names, f.Name), append(contents, c), append(flags, f.Flags), append(at, off)
	}
	return
}

// TestRewrite proves what each way of writing anew changes (data
// descriptors, where the data is) and keeps (each member's name and
// contents, in order), on bytes and on a file in its place.
func TestRewrite(t *testing.T) {
	orig := archive(t)
	names, contents, flags, at := members(t, orig)
	if flags[0]&0x8 != 0 || flags[1]&0x8 != 0 {
		t.Fatalf("the archive to write anew has data descriptors already: flags %v", flags)
	}
	pad := func(i int, h *zip.FileHeader) {
		if i == 0 {
			h.Extra = append(h.Extra, 0x66, 0x66, 16, 0)
			h.Extra = append(h.Extra, make([]byte, 16)...)
		}
	}
	tests := []struct {
		name        string
		rw          Rewrite
		descriptors bool
		moved       int64 // how much further on each member's data is
	}{
		{"streamed", Rewrite{}, true, 0},
		{"copied raw", Rewrite{Raw: true}, false, 0},
		{"copied raw, the first header padded", Rewrite{Raw: true, Header: pad}, false, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.wacz")
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			tt.rw.File(t, path)
			onDisk, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if b := tt.rw.Bytes(t, orig); !bytes.Equal(b, onDisk) {
				t.Errorf("Bytes and File write different archives")
			}
			n, c, f, a := members(t, onDisk)
			if !slices.Equal(n, names) || !slices.EqualFunc(c, contents, bytes.Equal) {
				t.Errorf("members %q, want %q with their contents", n, names)
			}
			for i := range f {
				if got := f[i]&0x8 != 0; got != tt.descriptors {
					t.Errorf("%s: data descriptor %v, want %v", n[i], got, tt.descriptors)
				}
				if !tt.descriptors && a[i]-at[i] != tt.moved {
					t.Errorf("%s: data at %d, was at %d, want %d further on", n[i], a[i], at[i], tt.moved)
				}
			}
		})
	}
}
