package recompress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/gzmulti"
	"warcdedup/record"
)

func warcRec(uri, block string) string {
	return fmt.Sprintf("WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: %s\r\nWARC-Date: 2024-01-02T03:04:05Z\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", uri, len(block), block)
}

func arcFile() []string {
	desc := "1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
	body := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello"
	return []string{
		fmt.Sprintf("filedesc://t.arc 0.0.0.0 20240102030405 text/plain %d\n%s\n", len(desc), desc),
		fmt.Sprintf("http://example.com/ 93.184.216.34 20240102030406 text/plain %d\n%s\n", len(body), body),
		"dns:example.com 10.0.0.1 20240102030407 text/dns 3\nabc\n",
	}
}

// noise is incompressible, so that records span the readers' buffers.
func noise(n int) string {
	b := make([]byte, n)
	for i, x := 0, uint32(7); i < n; i++ {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return string(b)
}

func warcFile() []string {
	recs := []string{warcRec("urn:info", "software: test\r\n")}
	for i := range 30 {
		recs = append(recs, warcRec(fmt.Sprintf("urn:r%d", i), strings.Repeat("x", i*7)))
	}
	return append(recs, warcRec("urn:big", noise(700<<10)), warcRec("urn:last", "end"))
}

// members compresses the concatenation of parts cut at the part indexes
// given (none: one member for all).
func members(parts []string, cuts ...int) []byte {
	var buf bytes.Buffer
	from := 0
	for _, c := range append(cuts, len(parts)) {
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(strings.Join(parts[from:c], "")))
		zw.Close()
		from = c
	}
	return buf.Bytes()
}

// gzAt compresses s cut at byte offsets.
func gzAt(s string, cuts ...int) []byte {
	var buf bytes.Buffer
	from := 0
	for _, c := range append(cuts, len(s)) {
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(s[from:c]))
		zw.Close()
		from = c
	}
	return buf.Bytes()
}

func inflate(t *testing.T, data []byte) []byte {
	t.Helper()
	z, err := gzmulti.NewReader(bytes.NewReader(data), "f")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(gzmulti.NewStream(z))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// perRecord checks that data holds n records, each whole in a gzip member
// of its own, and returns the number of members.
func perRecord(t *testing.T, data []byte, n int) {
	t.Helper()
	rr, _ := record.NewReader(bytes.NewReader(data), "new")
	got := 0
	for {
		_, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = rr.Finish()
		}
		if err != nil {
			t.Fatalf("record %d: %v", got, err)
		}
		got++
	}
	z, _ := gzmulti.NewReader(bytes.NewReader(data), "new")
	m := 0
	for {
		if _, err := z.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, z)
		m++
	}
	if got != n || m != n {
		t.Errorf("%d records in %d members, want %d in as many", got, m, n)
	}
}

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func temporaries(t *testing.T, dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	return m
}

// TestRecompressForms: every gzip form becomes one member per record, the
// inflated bytes unchanged.
func TestRecompressForms(t *testing.T) {
	w, a := warcFile(), arcFile()
	wAll, aAll := strings.Join(w, ""), strings.Join(a, "")
	cases := []struct {
		name    string
		data    []byte
		records int
	}{
		{"whole WARC in one member", members(w), len(w)},
		{"whole ARC in one member", members(a), len(a)},
		{"members of several records", members(w, 1, 5, 6, 20), len(w)},
		{"records cut across members", gzAt(wAll, 10, 500, len(wAll)-300<<10, len(wAll)-5), len(w)},
		{"ARC records cut across members", gzAt(aAll, 3, len(a[0])+7), len(a)},
		{"line ends before, between and after records", gzAt("\r\n" + w[0] + "\r\n\r\n" + w[1] + "\n" + w[2] + "\r\n\r\n"), 3},
		{"some records in members of their own", members(w, 1, 2, 10, 11), len(w)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := write(t, dir, "f.warc.gz", tc.data)
			os.Chmod(p, 0o640)
			res, err := File(context.Background(), p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Recompressed || res.Records != int64(tc.records) || res.Output != p {
				t.Errorf("result %+v", res)
			}
			got, _ := os.ReadFile(p)
			perRecord(t, got, tc.records)
			if !bytes.Equal(inflate(t, got), inflate(t, tc.data)) {
				t.Error("the inflated bytes changed")
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 || fi.Size() != res.After {
				t.Errorf("mode %v, size %d (result says %d)", fi.Mode(), fi.Size(), res.After)
			}
			if tmps := temporaries(t, dir); len(tmps) > 0 {
				t.Errorf("temporary files left: %v", tmps)
			}
		})
	}
}

// TestRecompressLeavesAlone: in place, a file already one record per
// member, a plain file and an empty one are not rewritten; with -o, each
// is written (a plain one as NAME.gz).
func TestRecompressLeavesAlone(t *testing.T) {
	w := warcFile()
	cases := []struct {
		name    string
		data    []byte
		outcome Outcome
		out     string // with -o
	}{
		{"one record per member", members(w, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32), PerRecord, "f.warc.gz"},
		{"plain", []byte(strings.Join(w, "")), Plain, "f.warc.gz.gz"},
		{"empty", nil, Empty, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := write(t, dir, "f.warc.gz", tc.data)
			before, _ := os.Stat(p)
			res, err := File(context.Background(), p, Options{})
			if err != nil || res.Outcome != tc.outcome {
				t.Fatalf("%v %+v", err, res)
			}
			if after, _ := os.Stat(p); !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
				t.Error("the file was replaced")
			}
			if tc.out == "" {
				return
			}
			out := filepath.Join(dir, "out")
			res, err = File(context.Background(), p, Options{OutputDir: out})
			if err != nil || res.Outcome != Recompressed || res.Output != filepath.Join(out, tc.out) {
				t.Fatalf("-o: %v %+v", err, res)
			}
			got, _ := os.ReadFile(res.Output)
			perRecord(t, got, len(w))
			if !bytes.Equal(inflate(t, got), []byte(strings.Join(w, ""))) {
				t.Error("the inflated bytes changed")
			}
		})
	}
}

// TestRecompressRefusesDamage: a file with any damage is left untouched,
// byte for byte, and no temporary file is left.
func TestRecompressRefusesDamage(t *testing.T) {
	w := warcFile()
	all := strings.Join(w, "")
	whole := members(w)
	badCRC := bytes.Clone(whole)
	badCRC[len(badCRC)-6] ^= 1
	corrupt := bytes.Clone(whole)
	for i := 100; i < 140; i++ {
		corrupt[i] ^= 0x5a
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"whole-file gzip clipped", whole[:len(whole)*3/4]},
		{"whole-file gzip fails its CRC", badCRC},
		{"corrupt deflate data", corrupt},
		{"garbage after the member", append(bytes.Clone(whole), "garbage"...)},
		{"garbage between members", append(append(members(w[:3]), "junk"...), members(w[3:])...)},
		{"junk between records", gzAt(w[0] + "junk\r\n" + w[1])},
		{"last record truncated", gzAt(all[:len(all)-10])},
		{"header that does not parse", gzAt(w[0] + "WARC/1.0\r\nno colon\r\n\r\n" + w[1])},
		{"not WARC or ARC", gzAt("just text\n")},
		{"gzip inside gzip", gzAt(string(whole))},
		{"ARC with bytes after a record's length", gzAt(strings.Join(arcFile(), "") + "trailing junk")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := write(t, dir, "f.warc.gz", tc.data)
			before, _ := os.Stat(p)
			for _, opt := range []Options{{}, {DryRun: true}, {OutputDir: filepath.Join(dir, "out")}} {
				_, err := File(context.Background(), p, opt)
				var re *RefusedError
				if !errors.As(err, &re) || !errors.Is(err, ErrDamaged) || re.File != p {
					t.Errorf("%+v: %v, want a refusal for damage", opt, err)
				}
			}
			got, _ := os.ReadFile(p)
			after, _ := os.Stat(p)
			if !bytes.Equal(got, tc.data) || !os.SameFile(before, after) {
				t.Error("the file was changed")
			}
			if tmps := temporaries(t, dir); len(tmps) > 0 {
				t.Errorf("temporary files left: %v", tmps)
			}
			if _, err := os.Stat(filepath.Join(dir, "out", "f.warc.gz")); err == nil {
				t.Error("an output was written")
			}
		})
	}
}

// TestRecompressFileSafety: hard links, symbolic links, ownership, an
// existing output, a dry run.
func TestRecompressFileSafety(t *testing.T) {
	data := members(warcFile())
	t.Run("hard link refused in place, not with -o", func(t *testing.T) {
		dir := t.TempDir()
		p := write(t, dir, "f.warc.gz", data)
		os.Link(p, filepath.Join(dir, "g.warc.gz"))
		if _, err := File(context.Background(), p, Options{}); !errors.Is(err, ErrHardLinks) {
			t.Errorf("%v, want ErrHardLinks", err)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
			t.Error("changed")
		}
		if _, err := File(context.Background(), p, Options{OutputDir: filepath.Join(dir, "out")}); err != nil {
			t.Error(err)
		}
	})
	t.Run("symlink in the same directory replaces its file", func(t *testing.T) {
		dir := t.TempDir()
		p := write(t, dir, "f.warc.gz", data)
		link := filepath.Join(dir, "link.warc.gz")
		os.Symlink("f.warc.gz", link)
		res, err := File(context.Background(), link, Options{})
		if err != nil || res.Output != p {
			t.Fatalf("%v %+v", err, res)
		}
		if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
			t.Error("the link was replaced by a file")
		}
		got, _ := os.ReadFile(p)
		perRecord(t, got, len(warcFile()))
	})
	t.Run("symlink to another directory refused", func(t *testing.T) {
		dir, other := t.TempDir(), t.TempDir()
		p := write(t, other, "f.warc.gz", data)
		link := filepath.Join(dir, "link.warc.gz")
		os.Symlink(p, link)
		for _, opt := range []Options{{}, {OutputDir: filepath.Join(dir, "out")}} {
			if _, err := File(context.Background(), link, opt); !errors.Is(err, ErrSymlinkOut) {
				t.Errorf("%+v: %v, want ErrSymlinkOut", opt, err)
			}
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
			t.Error("changed")
		}
		// The same through a link to a directory link: ../other/f.
		os.Symlink(other, filepath.Join(dir, "d"))
		if _, err := File(context.Background(), filepath.Join(dir, "d", "f.warc.gz"), Options{}); err != nil {
			t.Errorf("a file named through a directory link: %v", err)
		}
	})
	t.Run("owner, group and mode kept", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("changing a file's owner needs root")
		}
		dir := t.TempDir()
		p := write(t, dir, "f.warc.gz", data)
		os.Chown(p, 1234, 5678)
		os.Chmod(p, os.ModeSetgid|0o640)
		if _, err := File(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 1234 || st.Gid != 5678 || fi.Mode()&(os.ModePerm|os.ModeSetgid) != 0o640|os.ModeSetgid {
			t.Errorf("owner %d:%d mode %v", st.Uid, st.Gid, fi.Mode())
		}
	})
	t.Run("existing output refused without force", func(t *testing.T) {
		dir := t.TempDir()
		p := write(t, dir, "f.warc.gz", data)
		out := filepath.Join(dir, "out")
		os.Mkdir(out, 0o755)
		write(t, out, "f.warc.gz", []byte("old"))
		if _, err := File(context.Background(), p, Options{OutputDir: out}); err == nil || !strings.Contains(err.Error(), "exists") {
			t.Errorf("%v", err)
		}
		if _, err := File(context.Background(), p, Options{OutputDir: out, Force: true}); err != nil {
			t.Error(err)
		}
		if _, err := File(context.Background(), p, Options{OutputDir: dir, Force: true}); err == nil || !strings.Contains(err.Error(), "the file itself") {
			t.Errorf("-o its own directory: %v", err)
		}
	})
	t.Run("dry run writes nothing", func(t *testing.T) {
		dir := t.TempDir()
		p := write(t, dir, "f.warc.gz", data)
		res, err := File(context.Background(), p, Options{DryRun: true})
		if err != nil || res.Outcome != Recompressed || res.Records != int64(len(warcFile())) || res.After != 0 {
			t.Errorf("%v %+v", err, res)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, data) || len(temporaries(t, dir)) > 0 {
			t.Error("written")
		}
	})
	t.Run("leftovers of a killed run removed", func(t *testing.T) {
		dir := t.TempDir()
		p := write(t, dir, "f.warc.gz", data)
		write(t, dir, ".tmp-f.warc.gz-123", []byte("half"))
		if _, err := File(context.Background(), p, Options{}); err != nil {
			t.Fatal(err)
		}
		if tmps := temporaries(t, dir); len(tmps) > 0 {
			t.Errorf("%v", tmps)
		}
	})
}

// TestUnchanged: a file that grew or was replaced after it was read is not
// replaced.
func TestUnchanged(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "f.warc.gz", []byte("abc"))
	for name, change := range map[string]func(){
		"appended": func() {
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("more")
			f.Close()
		},
		"replaced": func() {
			os.Remove(p)
			os.WriteFile(p, []byte("abc"), 0o644)
		},
	} {
		tg, err := openTarget(p, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.Unchanged(); err != nil {
			t.Fatalf("%s: before the change: %v", name, err)
		}
		change()
		if err := tg.Unchanged(); err == nil {
			t.Errorf("%s: not noticed", name)
		}
		tg.close()
	}
}

// TestCheckFindsBadVersions: the check of a new version is not a formality.
func TestCheckFindsBadVersions(t *testing.T) {
	w := warcFile()
	old := members(w)
	good := members(w, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32)
	changed := members(append(append([]string{}, w[:3]...), append([]string{strings.Replace(w[3], "xxx", "xyx", 1)}, w[4:]...)...),
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32)
	cases := []struct {
		name string
		cur  []byte
		ok   bool
	}{
		{"one record per member", good, true},
		{"whole file in one member", old, false},
		{"two records in a member", members(w, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32), false},
		{"last record missing", good[:bytes.LastIndex(good, []byte{0x1f, 0x8b, 8})], false},
		{"a byte changed", changed, false},
		{"a member damaged", append(bytes.Clone(good[:len(good)-4]), 0, 0, 0, 0), false},
	}
	for _, tc := range cases {
		err := check(context.Background(), bytes.NewReader(old), bytes.NewReader(tc.cur), int64(len(tc.cur)), "f", int64(len(w)))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
