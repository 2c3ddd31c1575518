package refs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/inplace"
	"warcdedup/internal/rewritetest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/record"
	"warcdedup/scripts/gen"
)

// refuseColl is the collection the refusal tests break one file of: a plain
// WARC/1.0 file, a WARC/1.0 .gz file and a WARC/1.1 .gz file, with request,
// revisit and other non-candidate records between the responses.
var refuseCfg = gen.Config{Files: 3, Records: 90, DupRate: 0.5, Seed: 11, MeanPayload: 3 << 10, NonCandidates: true,
	Formats: []gen.Format{gen.WARC10, gen.WARC10Gz, gen.WARC11Gz}}

// refuseSetup is a collection, its complete rewrite, and the lines the
// rewrite turned into revisits.
type refuseSetup struct {
	c       *coll
	orig    map[string][]byte
	ref     map[string][]byte // every file after a complete in-place run
	refStat Stats
	logged  map[string][]manifest.Line // per file, the lines rewritten
}

func newRefuseSetup(t *testing.T) *refuseSetup {
	t.Helper()
	c := generate(t, refuseCfg)
	s := &refuseSetup{c: c, orig: rewritetest.Snapshot(t, c.dir), logged: map[string][]manifest.Line{}}
	dir := t.TempDir()
	rewritetest.CopyDir(t, c.dir, dir)
	o := mustRun(t, Rewriter{Roots: []string{dir}, InPlace: true}, c.lines)
	s.ref, s.refStat = rewritetest.Snapshot(t, dir), o.stats
	if o.stats.Rewritten != 3 {
		t.Fatalf("the complete run rewrote %d files, want 3: %+v", o.stats.Rewritten, o.stats)
	}
	done := map[string]bool{}
	for _, e := range o.log {
		done[fmt.Sprint(e.File, e.OldOffset)] = true
	}
	for _, l := range c.dups {
		if done[fmt.Sprint(l.File, l.Offset)] {
			s.logged[l.File] = append(s.logged[l.File], l)
		}
	}
	return s
}

// victim returns the index in lines of the second rewritten line of file,
// so that the line before it was rewritten when the check fails.
func (s *refuseSetup) victim(t *testing.T, lines []manifest.Line, file string) int {
	t.Helper()
	if len(s.logged[file]) < 3 {
		t.Fatalf("%s has %d rewritten lines, the test needs 3", file, len(s.logged[file]))
	}
	want := s.logged[file][1]
	for i, l := range lines {
		if l.File == file && l.Offset == want.Offset {
			return i
		}
	}
	t.Fatalf("line %s not found", want.String())
	return -1
}

// recordsOf lists the records of a file as stored: offset, length, type.
func recordsOf(t *testing.T, path string) []*record.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rr, err := record.NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*record.Record
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := rr.Finish(); err != nil {
			t.Fatal(err)
		}
		cp := *rec
		out = append(out, &cp)
	}
}

const (
	plainFile = "gen-00000.warc"
	gzFile    = "gen-00001.warc.gz"
)

// TestRefusals breaks one file of a collection, or its lines of the
// manifest, in each way a stale manifest can be wrong, and checks that the
// file is refused (counted, reported with its name, the offset and the
// reason) and left exactly as it was, and that the other files are
// rewritten all the same.
func TestRefusals(t *testing.T) {
	s := newRefuseSetup(t)
	tests := []struct {
		name string
		file string
		// breakIt changes the copy of the collection in dir or the lines
		// (line i is the victim) and returns the offset the refusal must
		// name (-1: the whole file).
		breakIt func(t *testing.T, dir string, lines []manifest.Line, i int) int64
		want    error
	}{
		{"a payload changed on disk (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			l := lines[i]
			p := filepath.Join(dir, l.File)
			b, _ := os.ReadFile(p)
			b[l.Offset+l.Length-4-10] ^= 1 // in the payload: the record ends with its block and CRLF CRLF
			os.WriteFile(p, b, 0o644)
			return l.Offset
		}, manifest.ErrDigestMismatch},
		{"the manifest names another digest (gz file)", gzFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			// No kept record of that digest names the line's original.
			lines[i].Digest = rewritetest.FormatDigest(lines[i].Algorithm(), []byte("another payload"))
			return lines[i].Offset
		}, originals.ErrNoOriginal},
		{"the URI differs (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			lines[i].URI += "?changed"
			return lines[i].Offset
		}, manifest.ErrFieldsChanged},
		{"the date differs (gz file)", gzFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			lines[i].Date = "1999-12-31T23:59:59Z"
			return lines[i].Offset
		}, manifest.ErrFieldsChanged},
		{"the offset is inside the record (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			lines[i].Offset += 7
			return lines[i].Offset
		}, manifest.ErrNotARecord},
		{"the offset is inside the record (gz file)", gzFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			lines[i].Offset += 7
			return lines[i].Offset
		}, manifest.ErrNotARecord},
		{"the offset is on the line ends before the record (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			lines[i].Offset -= 2
			return lines[i].Offset
		}, manifest.ErrNotARecord},
		{"the length is one byte long (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			lines[i].Length++
			return lines[i].Offset
		}, manifest.ErrNotARecord},
		{"the length is one byte short (gz file)", gzFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			lines[i].Length--
			return lines[i].Offset
		}, manifest.ErrNotARecord},
		{"the file was truncated inside the record (gz file)", gzFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			os.Truncate(filepath.Join(dir, lines[i].File), lines[i].Offset+lines[i].Length/2)
			return lines[i].Offset
		}, manifest.ErrNotARecord},
		{"the file was truncated before the record (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			os.Truncate(filepath.Join(dir, lines[i].File), lines[i].Offset)
			return lines[i].Offset
		}, manifest.ErrNotARecord},
		{"the line points at a request record (gz file)", gzFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			recs := recordsOf(t, filepath.Join(dir, lines[i].File))
			for k := 1; k < len(recs); k++ {
				if recs[k].Offset == lines[i].Offset && recs[k-1].Type == "request" {
					lines[i].Offset, lines[i].Length = recs[k-1].Offset, recs[k-1].Length
					return lines[i].Offset
				}
			}
			t.Fatalf("no request record before the response at %d", lines[i].Offset)
			return 0
		}, manifest.ErrNotResponse},
		{"the line points at a revisit of another record (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			for _, r := range recordsOf(t, filepath.Join(dir, lines[i].File)) {
				if r.Type == "revisit" {
					lines[i].Offset, lines[i].Length, lines[i].URI, lines[i].Date = r.Offset, r.Length, r.URI, r.Date
					rewritetest.SortByFile(lines)
					return r.Offset
				}
			}
			t.Fatal("no revisit record in the file")
			return 0
		}, manifest.ErrNotResponse},
		{"the line points at a truncated response (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			path := filepath.Join(dir, lines[i].File)
			data, _ := os.ReadFile(path)
			for _, r := range recordsOf(t, path) {
				if r.Type == "response" && r.Header.Has("WARC-Truncated") {
					head, err := httpHeadOf(data[r.Offset : r.Offset+r.Length])
					if err != nil {
						t.Fatal(err)
					}
					payload := data[r.Offset+r.HeaderLength+int64(len(head)) : r.Offset+r.HeaderLength+r.BlockLength]
					lines[i].Offset, lines[i].Length, lines[i].URI, lines[i].Date = r.Offset, r.Length, r.URI, r.Date
					lines[i].Digest = rewritetest.FormatDigest(lines[i].Algorithm(), payload)
					// Name the original of that payload (the generator gives a
					// truncated response the payload of a listed one), so that
					// only the record itself is wrong.
					for _, k := range s.c.all {
						if k.Digest == lines[i].Digest && k.Copy == 1 && k.URI != lines[i].URI {
							lines[i].Class, lines[i].RefURI, lines[i].RefDate = k.Class, k.URI, k.Date
							break
						}
					}
					rewritetest.SortByFile(lines)
					return r.Offset
				}
			}
			t.Fatal("no truncated response in the file")
			return 0
		}, manifest.ErrNotResponse},
		{"two lines name one record (gz file)", gzFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			if lines[i+1].File != lines[i].File {
				t.Fatal("the victim is the last line of its file")
			}
			lines[i+1] = lines[i] // line i twice, in the place of the next line
			return lines[i].Offset
		}, ErrOverlap},
		{"the file is gone (plain file)", plainFile, func(t *testing.T, dir string, lines []manifest.Line, i int) int64 {
			os.Remove(filepath.Join(dir, lines[i].File))
			return -1
		}, os.ErrNotExist},
	}
	for _, tt := range tests {
		for _, jobs := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s, %d jobs", tt.name, jobs), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				rewritetest.CopyDir(t, s.c.dir, dir)
				lines := append([]manifest.Line(nil), s.c.dups...)
				i := s.victim(t, lines, tt.file)
				wantOffset := tt.breakIt(t, dir, lines, i)
				broken := rewritetest.Snapshot(t, dir)
				victimInfo, _ := os.Stat(filepath.Join(dir, tt.file))

				o := runWith(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: jobs}, lines, s.c.all)
				if o.err != nil {
					t.Fatalf("Run: %v (a refusal must not stop the run)", o.err)
				}
				// Files whose duplicates name an original in the broken
				// file may be refused too: their original can no longer be
				// read as the manifest says.
				cascade := cascadeRefusals(t, o, tt.file)
				checkRefused(t, o, tt.file, wantOffset, tt.want)
				if o.stats.Refused != 1+int64(len(cascade)) || o.stats.Rewritten != 2-int64(len(cascade)) || o.stats.Files != 3 {
					t.Errorf("stats %+v, want 3 files: %d refused, the others rewritten", o.stats, 1+len(cascade))
				}
				// The refused files as they were, the others rewritten.
				want := map[string][]byte{}
				for name := range s.ref {
					want[name] = s.ref[name]
				}
				for _, name := range cascade {
					want[name] = s.orig[name]
				}
				delete(want, tt.file)
				if b, ok := broken[tt.file]; ok {
					want[tt.file] = b
				}
				rewritetest.SameFiles(t, "after the run", rewritetest.Snapshot(t, dir), want)
				if victimInfo != nil {
					st, err := os.Stat(filepath.Join(dir, tt.file))
					if err != nil || !os.SameFile(st, victimInfo) || !st.ModTime().Equal(victimInfo.ModTime()) {
						t.Errorf("the refused file was replaced or touched (%v)", err)
					}
				}
				for _, e := range o.log {
					if e.File == tt.file {
						t.Errorf("log entry %+v of the refused file", e)
					}
				}
			})
		}
	}
}

// cascadeRefusals returns the files refused, other than file, because the
// original a line of theirs names could not be used; it fails the test on
// any other refusal of another file.
func cascadeRefusals(t *testing.T, o *outcome, file string) []string {
	t.Helper()
	var files []string
	for _, err := range o.refused {
		var re *inplace.RefusedError
		if !errors.As(err, &re) || re.File == file {
			continue
		}
		if !errors.Is(err, originals.ErrOriginal) {
			t.Errorf("refusal of another file for another reason than its original: %v", err)
		}
		files = append(files, re.File)
	}
	return files
}

// checkRefused checks that file was refused at offset with the reason
// want, and that every other refusal is about an original in it.
//
// A line before offset whose original stood in a part of the file that the
// breakage destroyed is refused first: such a refusal, wrapping
// originals.ErrOriginal, is taken for the one wanted.
func checkRefused(t *testing.T, o *outcome, file string, offset int64, want error) {
	t.Helper()
	var err error
	for _, e := range o.refused {
		var re *inplace.RefusedError
		if errors.As(e, &re) && re.File == file {
			if err != nil {
				t.Fatalf("%s refused twice: %v", file, o.refused)
			}
			err = e
		}
	}
	if err == nil {
		t.Fatalf("%s not refused: %v", file, o.refused)
	}
	var re *inplace.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("refusal %v (%T) is not a *inplace.RefusedError", err, err)
	}
	if re.File == file && re.Offset >= 0 && re.Offset < offset && errors.Is(err, originals.ErrOriginal) {
		return
	}
	if re.File != file || re.Offset != offset {
		t.Errorf("refusal names %s offset %d, want %s offset %d: %v", re.File, re.Offset, file, offset, err)
	}
	if !errors.Is(err, want) {
		t.Errorf("refusal %q does not wrap %q", err, want)
	}
	msg := err.Error()
	if !strings.Contains(msg, file) || offset >= 0 && !strings.Contains(msg, fmt.Sprintf("offset %d", offset)) {
		t.Errorf("message %q does not name %s and offset %d", msg, file, offset)
	}
}
