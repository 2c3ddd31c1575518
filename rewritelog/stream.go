package rewritelog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"warcdedup/internal/syssort"
	"warcdedup/manifest"
)

// What reads a log without holding it: Moves holds every entry (about 68
// bytes each), which at 10^9 records is tens of gigabytes. Its readers
// that need less take less:
//
//   - Versions: each file's last version (its last "# file" line), the
//     "# file" lines sorted on file by the system sort; memory constant.
//   - LoadFileOf: the Moves of a few files, the log read once; memory
//     their entries.
//   - SortByFile and Grouped.Open: the Moves of every file, one file at a
//     time, in the byte order of the escaped names (a merge join with
//     anything sorted on file); memory one file's entries.
//   - OpenCatalog and a Follower: offsets followed through the whole log
//     as a merge join; memory the files and runs it names.
//   - Tail: offsets followed through a log another process is appending
//     to, a few at a time; memory where each replacement's block is (a
//     few tens of bytes each), a record's follow reading a few kilobytes.

// Versions calls fn with the "# file" line of the last replacement of
// each file the log file name records (dry runs left out: their line
// says no version), what Moves.Version gives, in the byte order of the
// escaped names. The log is read whole and checked as LoadFile reads it
// (an error names its line; a block whose entries are missing is none);
// its "# file" lines are sorted on file and number with s, so that
// memory does not grow with the log: not with its entries, files or
// runs.
func Versions(ctx context.Context, name string, s syssort.Sorter, fn func(Fixity) error) error {
	f, err := openWhole(name)
	if err != nil {
		return err
	}
	defer f.Close()
	tagged, _ := s.Create("rewrite-log-versions")
	defer tagged.Remove()
	r := NewReader(bufio.NewReaderSize(f, 256<<10), name)
	r.Incomplete = func(*IncompleteError) error { return nil }
	var buf []byte
	r.Fixity = func(fx Fixity) error {
		if fx.NewSum == "-" {
			return nil
		}
		// FILE NUMBER LINE: a file's lines in the order the log has
		// them, the last one last.
		buf = append(append(buf[:0], manifest.EscapeFile(fx.File)...), ' ')
		buf = append(syssort.Num(buf, r.line), ' ')
		return tagged.Line(fx.AppendTo(buf))
	}
	for {
		if _, err := r.next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
	}
	lines, err := s.Sorted(ctx, tagged)
	if err != nil {
		return fmt.Errorf("sorting the \"# file\" lines of %s: %w", name, err)
	}
	defer lines.Close()
	// last is the last line read of the group being read.
	var last, file []byte
	flush := func() error {
		if last == nil {
			return nil
		}
		var p [3][]byte
		syssort.Fields(last, p[:])
		fx, _, err := ParseFixity(p[2])
		if err != nil {
			return fmt.Errorf("%s sorted on file: %w", name, err)
		}
		return fn(fx)
	}
	for lines.Next() {
		l := lines.Bytes()
		f, _, _ := bytes.Cut(l, []byte(" "))
		if last != nil && !bytes.Equal(f, file) {
			if err := flush(); err != nil {
				return err
			}
		}
		last = append(last[:0], l...)
		file = append(file[:0], f...)
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("%s sorted on file: %w", name, err)
	}
	if err := flush(); err != nil {
		return err
	}
	return lines.Close()
}

// LoadFileOf is LoadFileFrom of the entries of the files named (relative,
// unescaped) and no other: the log from byte offset from on (0: all of
// it) is read and checked as LoadFile reads it, and memory holds the
// entries of those files, not the log's. Its lines are numbered as in the
// whole log (LoadFileFrom numbers them from from on). Version, Lookup,
// Follow, Live, Undone, Incomplete and OriginalMembers answer for those
// files as they do in a Moves of the whole log.
func LoadFileOf(name string, from int64, files []string) (*Moves, error) {
	f, err := openWhole(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	before, err := countLines(io.NewSectionReader(f, 0, from))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	keep := make(map[string]bool, len(files))
	for _, n := range files {
		keep[n] = true
	}
	r := NewReader(bufio.NewReaderSize(io.NewSectionReader(f, from, 1<<62), 256<<10), name)
	r.line = int64(before)
	m, err := loadOf(r, time.Time{}, 0, keep)
	if m != nil {
		m.reread = reopen(name, from)
	}
	return m, err
}
