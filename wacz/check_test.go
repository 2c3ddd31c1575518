package wacz

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// zipNumMembers is validMembers with its index as ZipNum blocks of n
// lines (blocks edited by edit, when given, before the .idx is made).
func zipNumMembers(t *testing.T, n int, finalNewline bool, edit func(blocks [][]byte) [][]byte, idxEdit func(string) string) []testMember {
	t.Helper()
	m := validMembers(t)
	lines := strings.Split(strings.TrimSuffix(m[1].data, "\n"), "\n")
	var blocks [][]byte
	for i := 0; i < len(lines); i += n {
		text := strings.Join(lines[i:min(i+n, len(lines))], "\n")
		if finalNewline {
			text += "\n"
		}
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(text))
		zw.Close()
		blocks = append(blocks, b.Bytes())
	}
	if edit != nil {
		blocks = edit(blocks)
	}
	var cdx bytes.Buffer
	idx := `!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}` + "\n"
	for i, b := range blocks {
		key := lineKey([]byte(lines[i*n]))
		sum := sha256.Sum256(b)
		idx += fmt.Sprintf("%s {\"offset\":%d,\"length\":%d,\"digest\":\"sha256:%x\",\"filename\":\"index.cdx.gz\"}\n", key, cdx.Len(), len(b), sum)
		cdx.Write(b)
	}
	if idxEdit != nil {
		idx = idxEdit(idx)
	}
	return []testMember{m[0], {name: "indexes/index.cdx.gz", data: cdx.String()}, {name: "indexes/index.idx", data: idx}, m[2]}
}

// TestCheckProblems checks packages whose ZIP is sound but whose content
// is not what their metadata and index say: each problem is found and
// named (package, member, line), and nothing else is reported.
func TestCheckProblems(t *testing.T) {
	editIndex := func(edit func(lines []string) []string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			m := validMembers(t)
			lines := strings.Split(strings.TrimSuffix(m[1].data, "\n"), "\n")
			m[1].data = strings.Join(edit(lines), "\n") + "\n"
			return packageBytes(m)
		}
	}
	cases := []struct {
		name   string
		make   func(t *testing.T) []byte
		kind   error
		naming []string
	}{
		{"a member changed after datapackage.json was written", func(t *testing.T) []byte {
			m := validMembers(t)
			b := packageBytes(m)
			// Change pages.jsonl's content and its CRC-32 in both directories:
			// a sound ZIP whose member no longer has the hash listed.
			old := m[2].data
			changed := strings.Replace(old, "All Pages", "All Pagez", 1)
			b = bytes.Replace(b, []byte(old), []byte(changed), 1)
			crc := crc32Of(changed)
			c, h := centralEntry(b, "pages/pages.jsonl"), localHeader(b, "pages/pages.jsonl")
			binary.LittleEndian.PutUint32(b[c+16:], crc)
			binary.LittleEndian.PutUint32(b[h+14:], crc)
			return b
		}, ErrHash, []string{"pages/pages.jsonl", "datapackage.json says sha256:"}},
		{"a member's bytes damaged (CRC-32)", func(t *testing.T) []byte {
			m := validMembers(t)
			b := packageBytes(m)
			return bytes.Replace(b, []byte("All Pages"), []byte("All Pagez"), 1)
		}, ErrDamaged, []string{"pages/pages.jsonl", "CRC-32"}},
		{"a size that datapackage.json gives wrong", func(t *testing.T) []byte {
			m := validMembers(t)
			dp := strings.Replace(datapackageFor(m), fmt.Sprintf(`"bytes": %d`, len(m[2].data)), fmt.Sprintf(`"bytes": %d`, len(m[2].data)+1), 1)
			return buildZip(t, append(m, testMember{name: DatapackageName, data: dp}, testMember{name: DigestName, data: digestFor(dp)}))
		}, ErrHash, []string{"pages/pages.jsonl", "datapackage.json says"}},
		{"a member datapackage.json does not list", func(t *testing.T) []byte {
			m := validMembers(t)
			dp := datapackageFor(m)
			m = append(m, testMember{name: "logs/crawl.log", data: "log\n"})
			return buildZip(t, append(m, testMember{name: DatapackageName, data: dp}, testMember{name: DigestName, data: digestFor(dp)}))
		}, ErrNotListed, []string{"logs/crawl.log", "does not list it"}},
		{"a resource the package lacks", func(t *testing.T) []byte {
			m := validMembers(t)
			dp := datapackageFor(append(m, testMember{name: "pages/extraPages.jsonl", data: "x"}))
			return buildZip(t, append(m, testMember{name: DatapackageName, data: dp}, testMember{name: DigestName, data: digestFor(dp)}))
		}, ErrNotListed, []string{"pages/extraPages.jsonl", "does not hold it"}},
		{"datapackage-digest.json of another datapackage.json", func(t *testing.T) []byte {
			m := validMembers(t)
			dp := datapackageFor(m)
			return buildZip(t, append(m, testMember{name: DatapackageName, data: dp}, testMember{name: DigestName, data: digestFor(dp + " ")}))
		}, ErrHash, []string{DigestName, "whose SHA-256 is"}},
		{"an index line at an offset where no record starts", editIndex(func(l []string) []string {
			l[1] = strings.Replace(l[1], `"offset":"`, `"offset":"1`, 1)
			return l
		}), ErrIndex, []string{"indexes/index.cdxj", "line 2", "no record starts there"}},
		{"a record without index line", editIndex(func(l []string) []string { return append(l[:1], l[2:]...) }), ErrIndex, []string{"has no index line"}},
		{"index lines out of order", editIndex(func(l []string) []string {
			l[0], l[1] = l[1], l[0]
			return l
		}), ErrIndex, []string{"indexes/index.cdxj", "line 2 is out of order"}},
		{"an index line naming a file the package lacks", editIndex(func(l []string) []string {
			l[0] = strings.Replace(l[0], `"filename":"data.warc.gz"`, `"filename":"gone.warc.gz"`, 1)
			return l
		}), ErrIndex, []string{`"gone.warc.gz"`, "no WARC member"}},
		{"an index line's length wrong", editIndex(func(l []string) []string {
			l[0] = strings.Replace(l[0], `"length":"`, `"length":"9`, 1)
			return l
		}), ErrIndex, []string{"line 1", "length 9"}},
		{"an index line's status wrong", editIndex(func(l []string) []string {
			l[0] = strings.Replace(l[0], `"status":"200"`, `"status":"404"`, 1)
			return l
		}), ErrIndex, []string{"status 404"}},
		{"an index line's digest wrong", editIndex(func(l []string) []string {
			l[0] = strings.Replace(l[0], `"digest":"`, `"digest":"AAAA`, 1)
			return l
		}), ErrIndex, []string{"digest AAAA"}},
		{"an index line's mime wrong", editIndex(func(l []string) []string {
			l[0] = strings.Replace(l[0], `"mime":"text/html"`, `"mime":"text/plain"`, 1)
			return l
		}), ErrIndex, []string{`mime "text/plain"`}},
		{"an index line's urlkey wrong", editIndex(func(l []string) []string {
			l[len(l)-1] = "com,example)/zzz" + l[len(l)-1][strings.IndexByte(l[len(l)-1], ' '):]
			return l
		}), ErrIndex, []string{`urlkey "com,example)/zzz"`}},
		{"an index line's timestamp wrong", editIndex(func(l []string) []string {
			l[len(l)-1] = strings.Replace(l[len(l)-1], " 2024", " 2023", 1)
			return l
		}), ErrIndex, []string{"timestamp 2023"}},
		{"two lines for one record", editIndex(func(l []string) []string {
			l = append(l, strings.Replace(l[len(l)-1], `"mime"`, `"mimx"`, 1))
			return l
		}), ErrIndex, []string{"a second line for the same record"}},
		{"ZipNum: a block's digest wrong", func(t *testing.T) []byte {
			return packageBytes(zipNumMembers(t, 2, true, nil, func(idx string) string {
				return strings.Replace(idx, `"digest":"sha256:`, `"digest":"sha256:00`, 1)
			}))
		}, ErrIndex, []string{"indexes/index.idx", "line 2", "digest sha256:00"}},
		{"ZipNum: a block's offset wrong", func(t *testing.T) []byte {
			return packageBytes(zipNumMembers(t, 2, true, nil, func(idx string) string {
				lines := strings.Split(idx, "\n")
				lines[2] = strings.Replace(lines[2], `"offset":`, `"offset":1`, 1)
				return strings.Join(lines, "\n")
			}))
		}, ErrIndex, []string{"indexes/index.idx", "line 3", "the block before ends at"}},
		{"ZipNum: a block's key wrong", func(t *testing.T) []byte {
			return packageBytes(zipNumMembers(t, 2, true, nil, func(idx string) string {
				lines := strings.Split(idx, "\n")
				lines[2] = "com,zzz)/" + lines[2][strings.IndexByte(lines[2], ' '):]
				return strings.Join(lines, "\n")
			}))
		}, ErrIndex, []string{"line 3", `key "com,zzz)/`}},
		{"ZipNum: two members in a block", func(t *testing.T) []byte {
			return packageBytes(zipNumMembers(t, 2, true, func(b [][]byte) [][]byte {
				return append([][]byte{append(append([]byte(nil), b[0]...), b[1]...)}, b[2:]...)
			}, nil))
		}, ErrIndex, []string{"the gzip member is"}},
		{"ZipNum: blocks short of the file's end", func(t *testing.T) []byte {
			return packageBytes(zipNumMembers(t, 2, true, nil, func(idx string) string {
				lines := strings.Split(strings.TrimSuffix(idx, "\n"), "\n")
				return strings.Join(lines[:len(lines)-1], "\n") + "\n"
			}))
		}, ErrIndex, []string{"its blocks end at"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.make(t)
			p, err := NewPackage(bytes.NewReader(b), int64(len(b)), "bad.wacz")
			if err != nil {
				t.Fatalf("the package does not open: %v", err)
			}
			r, err := Check(p, CheckOptions{Records: true})
			if err != nil {
				t.Fatal(err)
			}
			err = r.Err()
			wantKind(t, err, c.kind, append([]string{"bad.wacz"}, c.naming...)...)
			for _, e := range r.Problems {
				// Damaged bytes also fail the member's hash.
				if !errors.Is(e, c.kind) && !(c.kind == ErrDamaged && errors.Is(e, ErrHash)) {
					t.Errorf("another problem reported: %v", e)
				}
			}
		})
	}
}

// TestCheckZipNumValid checks ZipNum indexes as py-wacz (no final line
// feed in a block) and Browsertrix (one) write them.
func TestCheckZipNumValid(t *testing.T) {
	for _, final := range []bool{true, false} {
		for _, n := range []int{1, 2, 3, 100} {
			t.Run(fmt.Sprintf("final newline %v, %d lines a block", final, n), func(t *testing.T) {
				p, _ := packageOf(t, zipNumMembers(t, n, final, nil, nil))
				r := checkClean(t, p)
				if len(r.Indexes) != 1 || r.Indexes[0].Kind != ZipNumIndex || r.Indexes[0].Lines != 4 {
					t.Errorf("indexes %+v", r.Indexes)
				}
			})
		}
	}
}

// TestCheckCorpus opens and checks the corpus's WACZ packages
// (ArchiveWeb.page's signed ones, py-wacz's ZipNum one): each is sound,
// its index matches its records.
func TestCheckCorpus(t *testing.T) {
	needCorpus(t)
	for _, c := range corpusPackages {
		t.Run(c.path, func(t *testing.T) {
			p := openFile(t, corpusDir+"/"+c.path)
			r := checkClean(t, p)
			if r.Signed != c.signed {
				t.Errorf("signed %v, want %v", r.Signed, c.signed)
			}
			if len(r.Indexes) != 1 || r.Indexes[0].Kind != c.kind {
				t.Errorf("indexes %+v, want one %v", r.Indexes, c.kind)
			}
			if r.Indexed == 0 || r.Indexes[0].Lines != r.Indexed {
				t.Errorf("%d index lines, %d records indexed", r.Indexes[0].Lines, r.Indexed)
			}
			t.Logf("%d records, %d indexed, %d urlkeys spelt by an older indexer", r.Records, r.Indexed, r.URLKeysSpeltOtherwise)
		})
	}
}
