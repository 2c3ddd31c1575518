package manifest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"warcdedup/digest"
)

// oldDigestCheck is Parse's digest check before the merge of plaincpu
// (ae28e61): every digest, but a revisit's "-", decoded by digest.Parse.
func oldDigestCheck(field string, revisit bool) error {
	if revisit && field == NoDigest {
		return nil
	}
	_, _, err := digest.Parse(field)
	return err
}

// digestLine is a line with the digest field d, a revisit's if revisit.
func digestLine(d string, revisit bool) []byte {
	if revisit {
		return []byte("a.warc 0 10 http://a/ 20240101000000 " + d + " -1 0 http://b/ 20230101000000")
	}
	return []byte("a.warc 0 10 http://a/ 20240101000000 " + d)
}

// TestParseDigestAsBefore proves that Parse, checking the digest with
// digest.Canonical before decoding it, takes and refuses the digests the
// decode-based check of ae28e61 took and refused: every near miss of the
// canonical forms (case, padding, line breaks inside, a letter outside the
// alphabet, a length one off, another label spelling).
func TestParseDigestAsBefore(t *testing.T) {
	sha1 := "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
	md5 := "md5:d41d8cd98f00b204e9800998ecf8427e"
	sha256 := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	sha512 := "sha512:" + strings.Repeat("0123456789abcdef", 8)
	cases := []struct{ name, digest string }{
		{"sha1 canonical", sha1},
		{"md5 canonical", md5},
		{"sha256 canonical", sha256},
		{"sha512 canonical", sha512},
		{"sha1 lower case", strings.ToLower(sha1)},
		{"sha1 with 0 (not base32)", sha1[:len(sha1)-1] + "0"},
		{"sha1 with 1 (not base32)", sha1[:len(sha1)-1] + "1"},
		{"sha1 with 8", sha1[:len(sha1)-1] + "8"},
		{"sha1 padded", "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSC======"},
		{"sha1 one short", sha1[:len(sha1)-1]},
		{"sha1 one long", sha1 + "A"},
		{"sha1 with a CR inside", sha1[:10] + "\r" + sha1[11:]},
		{"sha1 all A", "sha1:" + strings.Repeat("A", 32)},
		{"sha1 all 7", "sha1:" + strings.Repeat("7", 32)},
		{"md5 upper case", "md5:D41D8CD98F00B204E9800998ECF8427E"},
		{"md5 with g", md5[:len(md5)-1] + "g"},
		{"sha256 one short", sha256[:len(sha256)-1]},
		{"label upper case", "SHA1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},
		{"label sha-1", "sha-1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},
		{"unknown label", "sha3:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},
		{"no label", "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},
		{"empty value", "sha1:"},
		{"two colons", "sha1::I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"},
		{"md5 value under a sha1 label", "sha1:d41d8cd98f00b204e9800998ecf8427e"},
		{"no digest", NoDigest},
		{"non-ASCII long s", "sha1:3I42H3S6NNFQ2MSVX7XZKYAY\u017fCX5QB"},
	}
	for _, tc := range cases {
		for _, revisit := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s revisit=%v", tc.name, revisit), func(t *testing.T) {
				checkDigestAsBefore(t, tc.digest, revisit)
			})
		}
	}
}

func checkDigestAsBefore(t *testing.T, d string, revisit bool) {
	t.Helper()
	line := digestLine(d, revisit)
	if bytes.ContainsAny([]byte(d), " \n") {
		return // another field count, not the digest check
	}
	old := oldDigestCheck(d, revisit)
	_, err := Parse(line)
	if (old == nil) != (err == nil) {
		// Parse may refuse the line for another field (a control byte),
		// which the old Parse refused too.
		if err != nil && indexControl([]byte(d)) >= 0 {
			return
		}
		t.Errorf("Parse(%q): %v; the decode-based check: %v", line, err, old)
	}
	if digest.Canonical([]byte(d)) && old != nil && !(revisit && d == NoDigest) {
		t.Errorf("Canonical(%q) but digest.Parse: %v", d, old)
	}
}

// FuzzParseDigestAsBefore is TestParseDigestAsBefore on any digest text.
func FuzzParseDigestAsBefore(f *testing.F) {
	for _, s := range []string{"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", "md5:d41d8cd98f00b204e9800998ecf8427e",
		"sha256:" + strings.Repeat("ab", 32), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSC======", "-"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, d string, revisit bool) {
		if d == "" {
			return
		}
		checkDigestAsBefore(t, d, revisit)
	})
}

// TestTableFindConcurrentLookups proves that look-ups running at once on
// one Table, each with buffers from the free list, see only their own
// key's lines, whole: many goroutines, keys with one line and with many,
// lines longer than the look-up's buffer (read whole into a copy), a
// look-up nested in another's callback, and one ended early (ErrStop).
// Run it with -race.
func TestTableFindConcurrentLookups(t *testing.T) {
	var lines []string
	want := map[string][]string{}
	var keys []string
	for k := range 200 {
		d := fmt.Sprintf("md5:%032x", k*7919)
		keys = append(keys, d)
		n := 1 + k%5
		for j := range n {
			uri := fmt.Sprintf("http://k%d/%d", k, j)
			if k%17 == 0 {
				uri += "/" + strings.Repeat("x", scanBuffer+k) // longer than the look-up's buffer
			}
			l := fmt.Sprintf("f.warc %d 10 %s 20240101000000 %s", k*10+j+1, uri, d)
			lines = append(lines, l)
			want[d] = append(want[d], l)
		}
	}
	slices.SortStableFunc(lines, func(a, b string) int { return strings.Compare(strings.Fields(a)[5], strings.Fields(b)[5]) })
	name := filepath.Join(t.TempDir(), "table")
	if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := OpenTable(name)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	find := func(key string) ([]string, error) {
		var got []string
		err := tab.Find(key, func(l *Line) error {
			got = append(got, l.String())
			return nil
		})
		return got, err
	}
	cases := []struct {
		name string
		run  func(key string) error
	}{
		{"each key alone", func(key string) error {
			got, err := find(key)
			if err != nil {
				return err
			}
			if strings.Join(got, "\n") != strings.Join(want[key], "\n") {
				return fmt.Errorf("%s: got %d lines %.200q, want %d", key, len(got), got, len(want[key]))
			}
			return nil
		}},
		{"a look-up nested in another's callback", func(key string) error {
			other := keys[(len(key)*31+int(key[len(key)-1]))%len(keys)]
			var outer []string
			err := tab.Find(key, func(l *Line) error {
				outer = append(outer, l.String())
				got, err := find(other)
				if err != nil {
					return err
				}
				if strings.Join(got, "\n") != strings.Join(want[other], "\n") {
					return fmt.Errorf("nested %s: got %d lines", other, len(got))
				}
				return nil
			})
			if err != nil {
				return err
			}
			if strings.Join(outer, "\n") != strings.Join(want[key], "\n") {
				return fmt.Errorf("%s around a nested look-up: got %d lines, want %d", key, len(outer), len(want[key]))
			}
			return nil
		}},
		{"stopped after the first line, then again whole", func(key string) error {
			var first string
			if err := tab.Find(key, func(l *Line) error { first = l.String(); return ErrStop }); err != nil {
				return err
			}
			if first != want[key][0] {
				return fmt.Errorf("%s: first line %.100q, want %.100q", key, first, want[key][0])
			}
			got, err := find(key)
			if err != nil || len(got) != len(want[key]) {
				return fmt.Errorf("%s after a stopped look-up: %d lines, %v", key, len(got), err)
			}
			return nil
		}},
		{"a key absent", func(key string) error {
			absent := key[:len(key)-1] + "g" // sorts after key, before the next
			got, err := find(absent)
			if err != nil || len(got) != 0 {
				return fmt.Errorf("%s: %d lines, %v", absent, len(got), err)
			}
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, len(keys)*3)
			for g := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range keys {
						key := keys[(i*7+g*13)%len(keys)]
						if err := tc.run(key); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestReaderOrderLongAfterShort proves that a Reader checking the order,
// comparing each line with its own copy of the one above, judges lines of
// any length right: a long line after a short one (and the other way), a
// line longer than the Reader's buffer, equal keys, and the first line out
// of order after a long one is refused naming its line.
func TestReaderOrderLongAfterShort(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	l := func(uri, d string) string {
		return "f.warc 1 10 http://a/" + uri + " 20240101000000 md5:" + d + "\n"
	}
	d := func(b byte) string { return strings.Repeat(string(b), 32) }
	cases := []struct {
		name     string
		text     string
		wantLine int // the line refused as out of order, 0 for none
	}{
		{"short then long", l("a", d('1')) + l(long, d('2')), 0},
		{"long then short", l(long, d('1')) + l("a", d('2')), 0},
		{"equal digests, long then short", l(long, d('1')) + l("a", d('1')), 0},
		{"out of order after a long line", l(long, d('2')) + l("a", d('1')), 2},
		{"out of order after a short line", l("a", d('2')) + l(long, d('1')), 2},
		{"long, short, long out of order", l(long, d('1')) + l("a", d('3')) + l(long+"y", d('2')), 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.text), "m")
			r.RequireOrder(ByDigest)
			n := 0
			for {
				got, err := r.Next()
				if err == io.EOF {
					if tc.wantLine != 0 {
						t.Errorf("read to the end, want line %d refused", tc.wantLine)
					}
					return
				}
				n++
				if err != nil {
					if n != tc.wantLine || !strings.Contains(err.Error(), "not sorted") {
						t.Errorf("line %d: %v, want line %d refused as out of order", n, err, tc.wantLine)
					}
					return
				}
				if want := strings.Split(tc.text, "\n")[n-1]; got.String() != want {
					t.Errorf("line %d: %.80q, want %.80q", n, got.String(), want)
				}
			}
		})
	}
}
