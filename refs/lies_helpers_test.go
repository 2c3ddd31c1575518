package refs

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"warcdedup/inplace"
	"warcdedup/internal/rewritetest"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/source"
	"warcdedup/verify"
	"warcdedup/warcsum"
)

// Helpers of the hostile-manifest tests (lies_test.go, hostile_test.go).

// recKey names a record by file and offset.
func recKey(file string, off int64) string { return file + " " + strconv.FormatInt(off, 10) }

// regularFiles reads every regular file under dir (symbolic links are not
// followed), temporary files included, by path relative to dir.
func regularFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	if dir == "" {
		return m
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fileID is what says a file was not touched: the same inode and
// modification time.
type fileID struct {
	info os.FileInfo
}

func statFiles(t testing.TB, dir string, names map[string][]byte) map[string]fileID {
	t.Helper()
	m := map[string]fileID{}
	for name := range names {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		m[name] = fileID{fi}
	}
	return m
}

// untouched reports why the file at path is not the one id describes, or "".
func (id fileID) untouched(path string) string {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return err.Error()
	case !os.SameFile(fi, id.info):
		return "replaced by another inode"
	case !fi.ModTime().Equal(id.info.ModTime()):
		return fmt.Sprintf("modified at %v (was %v)", fi.ModTime(), id.info.ModTime())
	case fi.Size() != id.info.Size():
		return fmt.Sprintf("%d bytes, was %d", fi.Size(), id.info.Size())
	}
	return ""
}

// warcsumDirs hashes every archive under the directories as `warcsum -r
// DIR...` (empty names are skipped), revisit lines included.
func warcsumDirs(t testing.TB, dirs ...string) []byte {
	t.Helper()
	var paths []string
	for _, d := range dirs {
		if d != "" {
			paths = append(paths, d)
		}
	}
	inputs, err := warcsum.Collect(paths, true)
	if err != nil {
		t.Fatal(err)
	}
	r := warcsum.Runner{Jobs: 2}
	var errs []string
	r.OnFileError = func(in warcsum.Input, err error) { errs = append(errs, fmt.Sprintf("warcsum %s: %v", in.Name, err)) }
	var out bytes.Buffer
	if _, err := r.Run(inputs, &out); err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
	return out.Bytes()
}

// violations runs warcsumcmp's check (verify.Rewrite) and returns what it
// reports.
func violations(t testing.TB, before, after []byte) []string {
	t.Helper()
	var out []string
	_, err := verify.Rewrite(manifest.NewReader(bytes.NewReader(before), "before"),
		manifest.NewReader(bytes.NewReader(after), "after"), func(v string) { out = append(out, v) })
	if err != nil {
		t.Fatalf("verify.Rewrite: %v", err)
	}
	return out
}

// parsedRecord is one record of a file, read without the code under test's
// rewriting paths: its bytes as stored, its header, and for an HTTP
// response or revisit its HTTP head and the SHA-256 of what follows it.
type parsedRecord struct {
	rec     record.Record
	raw     []byte
	head    []byte // nil: no complete HTTP response head
	payload [32]byte
	plen    int64
}

// parseRecords reads every record of data.
func parseRecords(data []byte, name string) ([]parsedRecord, error) {
	rr, err := record.NewReader(bytes.NewReader(data), name)
	if err != nil {
		return nil, err
	}
	var out []parsedRecord
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		p := parsedRecord{rec: *rec}
		p.rec.Header = slices.Clone(rec.Header)
		if rec.Type == "response" || rec.Type == "revisit" {
			head, err := rr.ReadHTTPHead()
			if err == nil && head.Status != 0 && head.Complete {
				p.head = bytes.Clone(head.Raw)
				h := sha256.New()
				n, err := io.Copy(h, rr)
				if err != nil {
					return nil, err
				}
				p.plen = n
				p.payload = [32]byte(h.Sum(nil))
			}
		}
		if err := rr.Finish(); err != nil {
			return nil, err
		}
		p.rec.Length = rec.Length
		p.raw = data[rec.Offset : rec.Offset+rec.Length]
		out = append(out, p)
	}
}

// captureKey is a response's URI and date as its record spells them: what
// a revisit's WARC-Refers-To-Target-URI and -Date name.
type captureKey struct{ uri, date string }

// nothingLost checks a collection after a run against before (file name ->
// bytes; elsewhere holds files the run did not rewrite but whose responses
// revisits may name): every file is byte-identical, or its complete
// rewrite: the same records in the same order, some responses replaced by
// revisits with the same record ID, URI, date and version, whose block is
// the response's HTTP head byte for byte, and which refer to a response of
// the collection after whose payload equals the old response's byte for
// byte (by SHA-256). It returns the files rewritten, the revisits written
// and every problem found.
func nothingLost(before, after, elsewhere map[string][]byte) (rewritten []string, revisits int, problems []string) {
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	// The responses after, by what a revisit names.
	responses := map[captureKey][][32]byte{}
	parsed := map[string][]parsedRecord{}
	for _, files := range []map[string][]byte{after, elsewhere} {
		for name, data := range files {
			recs, err := parseRecords(data, name)
			if err != nil {
				bad("%s after the run: %v", name, err)
				continue
			}
			parsed[name] = recs
			for _, p := range recs {
				if p.rec.Type == "response" && p.head != nil {
					k := captureKey{p.rec.TargetURI(), p.rec.Date}
					responses[k] = append(responses[k], p.payload)
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		old := before[name]
		data, ok := after[name]
		if !ok {
			bad("%s is gone", name)
			continue
		}
		if bytes.Equal(old, data) {
			continue
		}
		rewritten = append(rewritten, name)
		oldRecs, err := parseRecords(old, name)
		if err != nil {
			bad("%s before the run: %v", name, err)
			continue
		}
		newRecs := parsed[name]
		if len(oldRecs) != len(newRecs) {
			bad("%s: %d records, were %d", name, len(newRecs), len(oldRecs))
			continue
		}
		for i := range oldRecs {
			o, n := &oldRecs[i], &newRecs[i]
			if bytes.Equal(o.raw, n.raw) {
				continue
			}
			at := fmt.Sprintf("%s record %d (old offset %d, new %d)", name, i, o.rec.Offset, n.rec.Offset)
			if o.rec.Type != "response" || n.rec.Type != "revisit" {
				bad("%s: a %s became a %s", at, o.rec.Type, n.rec.Type)
				continue
			}
			revisits++
			for _, h := range []string{"WARC-Record-ID", "WARC-Target-URI", "WARC-Date"} {
				if a, b := n.rec.Header.Get(h), o.rec.Header.Get(h); a != b {
					bad("%s: %s %q, the response had %q", at, h, a, b)
				}
			}
			if n.rec.Version != o.rec.Version {
				bad("%s: version %q, the response had %q", at, n.rec.Version, o.rec.Version)
			}
			if o.head == nil || !bytes.Equal(n.head, o.head) || n.plen != 0 {
				bad("%s: the revisit's block is not the response's HTTP head", at)
			}
			k := captureKey{record.StripAngles(n.rec.Header.Get("WARC-Refers-To-Target-URI")), n.rec.Header.Get("WARC-Refers-To-Date")}
			if !slices.Contains(responses[k], o.payload) {
				bad("%s: its revisit refers to %s %s, which names no response after with its payload (%d such responses)", at, k.uri, k.date, len(responses[k]))
			}
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			bad("%s appeared", name)
		}
	}
	return rewritten, revisits, problems
}

// tableOf makes the manifest.Table of a numbered manifest (any order).
func tableOf(t testing.TB, lines []manifest.Line, name string) *manifest.Table {
	t.Helper()
	sorted := slices.Clone(lines)
	slices.SortStableFunc(sorted, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) })
	text := rewritetest.ManifestText(sorted)
	tab, err := manifest.NewTable(bytes.NewReader(text), int64(len(text)), name)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// byFileOrder returns lines sorted as warcrefs reads them.
func byFileOrder(lines []manifest.Line) []manifest.Line {
	out := slices.Clone(lines)
	rewritetest.SortByFile(out)
	return out
}

// duplicatesOnly returns the copy > 1 lines: what the warcrefs before the
// rebuild read.
func duplicatesOnly(lines []manifest.Line) []manifest.Line {
	var out []manifest.Line
	for _, l := range lines {
		if l.IsDuplicate() {
			out = append(out, l)
		}
	}
	return out
}

// payloadOf returns the payload (the block after the HTTP head) of the
// record a line names in the file under dir.
func payloadOf(t testing.TB, dir string, l *manifest.Line) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, l.File))
	if err != nil {
		t.Fatal(err)
	}
	p, err := payloadFromRecord(data[l.Offset:l.Offset+l.Length], l.File)
	if err != nil {
		t.Fatalf("%s: %v", l, err)
	}
	return p
}

// payloadFromRecord returns the payload of the one response data holds.
func payloadFromRecord(data []byte, name string) ([]byte, error) {
	rr, err := record.NewReader(bytes.NewReader(data), name)
	if err != nil {
		return nil, err
	}
	if _, err := rr.Next(); err != nil {
		return nil, err
	}
	if head, err := rr.ReadHTTPHead(); err != nil || !head.Complete {
		return nil, fmt.Errorf("no HTTP head (%v)", err)
	}
	return io.ReadAll(rr)
}

// closedPortURL returns an http:// URL template on a local port nothing
// listens on.
func closedPortURL(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	// Bound but never listening: connections to it are refused, and no
	// other test can be given the port while the socket is open. The
	// socket is closed when the test ends.
	dup, err := syscall.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(dup) })
	return fmt.Sprintf("http://127.0.0.1:%d/warcs/{file}", sa.(*syscall.SockaddrInet4).Port)
}

// fastHTTP is an HTTP client that gives up quickly on a host that is down.
func fastHTTP() *source.HTTP {
	h := source.NewHTTP(2)
	h.Retries = 1
	h.Backoff = 10e6 // 10 ms
	return h
}

// refusedFiles returns the refusals of a run by file (field 1); it fails
// the test on a refusal that is no *inplace.RefusedError or a file refused twice.
func refusedFiles(t testing.TB, o *outcome) map[string]*inplace.RefusedError {
	t.Helper()
	m := map[string]*inplace.RefusedError{}
	for _, err := range o.refused {
		var re *inplace.RefusedError
		if !errors.As(err, &re) {
			t.Errorf("refusal %v (%T) is not a *inplace.RefusedError", err, err)
			continue
		}
		if m[re.File] != nil {
			t.Errorf("%s refused twice: %v and %v", re.File, m[re.File], err)
		}
		m[re.File] = re
	}
	return m
}

// sortedKeys returns a set's members in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// firstLine returns the line of lines in file with the lowest offset.
func firstLine(lines []manifest.Line, file string) *manifest.Line {
	var first *manifest.Line
	for i := range lines {
		if lines[i].File == file && (first == nil || lines[i].Offset < first.Offset) {
			first = &lines[i]
		}
	}
	return first
}

// aliasName spells a file name differently for field 1: its first '.'
// escaped as %2E, which UnescapeFile reads back as the same name.
func aliasName(name string) string {
	return strings.Replace(name, ".", "%2E", 1)
}
