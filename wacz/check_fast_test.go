package wacz

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// guardedFile is a package file whose reads of the range [from, to)
// fail: what a check must not read.
type guardedFile struct {
	memFile
	from, to int64
}

var errGuarded = errors.New("read of a deferred member")

func (f *guardedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < f.to && off+int64(len(p)) > f.from {
		return 0, errGuarded
	}
	return f.memFile.ReadAt(p, off)
}

// packageWithDatapackage is packageBytes with datapackage.json as edit
// makes it (its digest file of the edited one).
func packageWithDatapackage(t *testing.T, members []testMember, edit func(string) string) []byte {
	t.Helper()
	dp := edit(datapackageFor(members))
	all := append(append([]testMember(nil), members...), testMember{name: DatapackageName, data: dp}, testMember{name: DigestName, data: digestFor(dp)})
	return buildZip(t, all)
}

// TestCheckDeferred proves that Check with Deferred reads none of the
// deferred members' bytes, leaves their SHA-256 to the caller, and
// still finds a size datapackage.json disagrees with and every problem
// of the other members.
func TestCheckDeferred(t *testing.T) {
	members := validMembers(t)
	warc := members[0]
	sum := sha256.Sum256([]byte(warc.data))
	wrongHash := func(dp string) string {
		return strings.Replace(dp, fmt.Sprintf("%x", sum), strings.Repeat("0", 64), 1)
	}
	deferWARC := func(name string) bool { return name == warc.name }
	cases := []struct {
		name  string
		dp    func(string) string
		edit  func([]testMember) []testMember
		kinds []error // of the problems found with Deferred, in order
		whole error   // a problem a check of every byte finds
	}{
		{"as its metadata says", func(dp string) string { return dp }, nil, nil, nil},
		{"the WARC member's hash in datapackage.json is wrong: the caller's to find", wrongHash, nil, nil, ErrHash},
		{"the WARC member's size in datapackage.json is wrong", func(dp string) string {
			return strings.Replace(dp, fmt.Sprintf(`"bytes": %d`, len(warc.data)), `"bytes": 7`, 1)
		}, nil, []error{ErrHash}, ErrHash},
		{"pages.jsonl is not what datapackage.json says", func(dp string) string { return dp }, func(m []testMember) []testMember {
			m[2].data = strings.Replace(m[2].data, "All Pages", "All Pagez", 1)
			return m
		}, []error{ErrHash}, ErrHash},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := validMembers(t)
			dp := c.dp
			var b []byte
			if c.edit != nil {
				// datapackage.json of the members as they were, the
				// members then changed.
				orig := datapackageFor(m)
				m = c.edit(m)
				b = packageWithDatapackage(t, m, func(string) string { return orig })
			} else {
				b = packageWithDatapackage(t, m, dp)
			}
			f := &guardedFile{memFile: memFile{b: b}}
			p, err := NewPackage(f, int64(len(b)), "test.wacz")
			if err != nil {
				t.Fatal(err)
			}
			wm := p.Member(warc.name)
			f.from, f.to = wm.DataOffset, wm.DataOffset+wm.CompressedSize
			r, err := Check(p, CheckOptions{Deferred: deferWARC})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Problems) != len(c.kinds) {
				t.Fatalf("problems %v, want %d of kinds %v", r.Problems, len(c.kinds), c.kinds)
			}
			for i, k := range c.kinds {
				if !errors.Is(r.Problems[i], k) {
					t.Errorf("problem %v, want %v", r.Problems[i], k)
				}
				if errors.Is(r.Problems[i], errGuarded) {
					t.Errorf("the deferred member was read: %v", r.Problems[i])
				}
			}
			// The check of every byte finds what the caller is left.
			f.from, f.to = 0, 0
			whole, err := Check(p, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := whole.Err(); (err == nil) != (c.whole == nil) || c.whole != nil && !errors.Is(err, c.whole) {
				t.Errorf("the check of every byte: %v, want %v", err, c.whole)
			}
		})
	}
}

// TestCheckWritten proves that the check of a package just written
// (Written: no SHA-256 read back) finds a byte changed on disk in any
// member by its CRC-32, a datapackage.json that is not the one written,
// and one whose hash is not the one a member was written with, and
// nothing in the package as written.
func TestCheckWritten(t *testing.T) {
	dir := t.TempDir()
	members := validMembers(t)
	old, _ := packageOf(t, members)
	warc := []byte(members[0].data)
	offsets := responseOffsets(t, warc)
	rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", offsets[1], offsets[2])
	b := &Rebuild{Source: old, Replace: map[string]Replacement{"archive/data.warc.gz": {Path: writeTemp(t, dir, "data.warc.gz", rw.data)}},
		FreshIndex: true}
	p, res := rebuildTo(t, b, dir, "new.wacz")
	written, err := os.ReadFile(filepath.Join(dir, "new.wacz"))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(member string, at int64) func([]byte, *Result) {
		return func(b []byte, _ *Result) { b[p.Member(member).DataOffset+at] ^= 0x01 }
	}
	cases := []struct {
		name   string
		edit   func(b []byte, res *Result)
		kind   error
		member string
	}{
		{"as written", func([]byte, *Result) {}, nil, ""},
		{"a byte of the new WARC member changed on disk", flip("archive/data.warc.gz", 200), ErrDamaged, "archive/data.warc.gz"},
		{"a byte of the fresh index changed on disk", flip("indexes/index.cdxj", 10), ErrDamaged, "indexes/index.cdxj"},
		{"a byte of a member copied changed on disk", flip("pages/pages.jsonl", 3), ErrDamaged, "pages/pages.jsonl"},
		{"datapackage.json reads back other than written", func(_ []byte, res *Result) {
			res.Datapackage = bytes.Replace(res.Datapackage, []byte("1.1.1"), []byte("1.1.2"), 1)
		}, ErrDamaged, DatapackageName},
		{"a member was written with another SHA-256 than datapackage.json gives", func(_ []byte, res *Result) {
			res.MemberSHA256["archive/data.warc.gz"] = make([]byte, 32)
		}, ErrHash, "archive/data.warc.gz"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(written)
			r := *res
			r.MemberSHA256 = map[string][]byte{}
			for k, v := range res.MemberSHA256 {
				r.MemberSHA256[k] = v
			}
			r.Datapackage = bytes.Clone(res.Datapackage)
			c.edit(b, &r)
			np, err := NewPackage(bytes.NewReader(b), int64(len(b)), "new.wacz")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Check(np, CheckOptions{Written: &r})
			if err != nil {
				t.Fatal(err)
			}
			if c.kind == nil {
				if err := rep.Err(); err != nil || rep.CRC32 != res.CRC32 {
					t.Errorf("problems %v, CRC-32 %08x (written %08x)", err, rep.CRC32, res.CRC32)
				}
				return
			}
			wantKind(t, rep.Err(), c.kind, c.member)
		})
	}
}

// TestRebuildPackageSHA256 proves that a rebuild takes the whole file's
// SHA-256 as it writes it when asked (the hash of the file on disk), and
// that one without it (NoPackageSHA256) writes the same bytes with the
// same CRC-32 and no SHA-256.
func TestRebuildPackageSHA256(t *testing.T) {
	dir := t.TempDir()
	members := validMembers(t)
	old, _ := packageOf(t, members)
	warc := []byte(members[0].data)
	offsets := responseOffsets(t, warc)
	rw := revisitsOf(t, warc, "x.wacz#archive/data.warc.gz", offsets[1])
	repl := map[string]Replacement{"archive/data.warc.gz": {Path: writeTemp(t, dir, "data.warc.gz", rw.data)}}
	files := map[bool][]byte{}
	for _, c := range []struct {
		name    string
		without bool
	}{{"whole-file SHA-256 taken", false}, {"whole-file SHA-256 left out", true}} {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("new-%v.wacz", c.without)
			_, res := rebuildTo(t, &Rebuild{Source: old, Replace: repl, FreshIndex: true, NoPackageSHA256: c.without}, dir, name)
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			files[c.without] = b
			if res.CRC32 != crc32.ChecksumIEEE(b) || res.Size != int64(len(b)) {
				t.Errorf("written as %d bytes, CRC-32 %08x; the file has %d, %08x", res.Size, res.CRC32, len(b), crc32.ChecksumIEEE(b))
			}
			want := sha256.Sum256(b)
			switch {
			case c.without && res.SHA256 != nil:
				t.Errorf("SHA-256 %x taken though left out", res.SHA256)
			case !c.without && !bytes.Equal(res.SHA256, want[:]):
				t.Errorf("SHA-256 %x as written; the file's is %x", res.SHA256, want)
			}
		})
	}
	if !bytes.Equal(files[false], files[true]) {
		t.Error("the two rebuilds wrote different bytes")
	}
}
