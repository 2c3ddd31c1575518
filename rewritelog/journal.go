package rewritelog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
)

// journal is the file beside the log (LOG.pending) in which a run notes,
// synced, each file's entries before the file is renamed over its old
// version: what the next opener of the log adds to it for the files that
// were in fact replaced before a crash, a full disk or a failed write.
//
//	# journal BASE
//	# pending NAME OLD-SIZE OLD-SUM NEW-SIZE NEW-SUM PATH
//	entry
//	...
//	# end
//
// BASE is the log's size when the journal was begun: every block of the
// run that wrote it stands after that offset of the log. That is how a
// block already logged is told from an earlier replacement that gave the
// same bytes (run, undo, and the same run again write byte-identical
// versions: their "# file" lines are equal). The fields from NAME to
// NEW-SUM are a "# file" line's (sums as there: a journal of an earlier
// version holds SHA-256 sums without a label). NAME is escaped as manifest
// field 1, PATH (the real path, for the check that the file was replaced)
// the same way.
type journal struct {
	f    *os.File
	name string
	size int64 // bytes written whole
}

// createJournal begins a journal for a log of base bytes. Its directory
// entry is synced with it, so that a journal whose file was renamed
// survives a crash of the machine too.
func createJournal(name string, base int64) (*journal, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("beginning the log's journal: %w", err)
	}
	j := &journal{f: f, name: name}
	head := fmt.Appendf(nil, "# journal %d\n", base)
	if _, err := f.Write(head); err != nil {
		f.Close()
		os.Remove(name)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	j.size = int64(len(head))
	if err := atomicfile.SyncDir(filepath.Dir(name)); err != nil {
		f.Close()
		os.Remove(name)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return j, nil
}

// add notes a file's replacement and its entries, synced. A failed write
// is cut off again, so that the journal holds only whole intents; broken
// says that could not be done either (nothing more may be added).
func (j *journal) add(in *Intent) (broken bool, err error) {
	b := []byte("# pending ")
	b = append(b, bytes.TrimPrefix(in.Fixity.AppendTo(nil), []byte("# file "))...)
	b = append(append(append(b, ' '), manifest.EscapeFile(in.Path)...), '\n')
	for i := range in.Entries {
		b = append(in.Entries[i].AppendTo(b), '\n')
	}
	b = append(b, "# end\n"...)
	_, err = j.f.Write(b)
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		if terr := j.f.Truncate(j.size); terr != nil {
			return true, fmt.Errorf("%s: %w", j.name, err)
		}
		if _, serr := j.f.Seek(j.size, io.SeekStart); serr != nil {
			return true, fmt.Errorf("%s: %w", j.name, err)
		}
		return false, fmt.Errorf("%s: %w", j.name, err)
	}
	j.size += int64(len(b))
	return false, nil
}

func (j *journal) close() error { return j.f.Close() }

// pendingIntent is one file's replacement read back from a journal.
type pendingIntent struct {
	fix    Fixity
	path   string   // the file's real path
	header []byte   // its "# file" line, with its line end, as the log has it
	at, n  int64    // its entries: n bytes at offset at of the journal
	sum    [32]byte // their SHA-256
}

// readJournal reads the journal name: the log's size when it was begun (-1
// for a journal of a version that did not note it) and its whole intents;
// an intent cut short (no "# end") is left out, as its file was never
// renamed. A journal that does not exist has no intents, and ok is false.
func readJournal(name string) (base int64, intents []*pendingIntent, ok bool, err error) {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	base = -1
	var pos int64
	var cur *pendingIntent
	h := sha256.New()
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			break // a last line cut short: its intent is not whole
		}
		if err != nil {
			return 0, nil, false, fmt.Errorf("%s: %w", name, err)
		}
		at := pos
		pos += int64(len(line))
		text := strings.TrimSuffix(line, "\n")
		switch {
		case n == 1 && strings.HasPrefix(text, "# journal "):
			if base, err = strconv.ParseInt(strings.TrimPrefix(text, "# journal "), 10, 64); err != nil || base < 0 {
				return 0, nil, false, fmt.Errorf("%s: line 1: bad base %q", name, text)
			}
		case strings.HasPrefix(text, "# pending "):
			in, err := parsePending(strings.TrimPrefix(text, "# pending "), base >= 0)
			if err != nil {
				return 0, nil, false, fmt.Errorf("%s: line %d: %w", name, n, err)
			}
			in.at = pos
			cur = in
			h.Reset()
		case text == "# end":
			if cur != nil {
				cur.n = at - cur.at
				copy(cur.sum[:], h.Sum(nil))
				intents = append(intents, cur)
			}
			cur = nil
		case strings.HasPrefix(text, "#"):
			// "# done" lines of older journals: the last block rule
			// (see Log.open) covers them.
		case cur != nil:
			h.Write([]byte(line))
		}
	}
	return base, intents, true, nil
}

// parsePending reads a "# pending" line's fields; escaped says whether its
// path is escaped (journals with a base) or raw (older ones).
func parsePending(rest string, escaped bool) (*pendingIntent, error) {
	p := strings.SplitN(rest, " ", 6)
	if len(p) != 6 {
		return nil, fmt.Errorf("bad intent %q", rest)
	}
	fix, _, err := ParseFixity([]byte("# file " + strings.Join(p[:5], " ")))
	if err != nil {
		return nil, err
	}
	path := p[5]
	if escaped {
		if path, err = manifest.UnescapeFile(p[5]); err != nil {
			return nil, fmt.Errorf("path %q: %w", p[5], err)
		}
	}
	in := &pendingIntent{fix: fix, path: path}
	in.header = append(fix.AppendTo(nil), '\n')
	return in, nil
}

// entries copies the intent's entries from the journal file to w.
func (in *pendingIntent) entries(journal *os.File, w io.Writer) error {
	n, err := io.Copy(w, io.NewSectionReader(journal, in.at, in.n))
	if err == nil && n != in.n {
		err = io.ErrUnexpectedEOF
	}
	return err
}
