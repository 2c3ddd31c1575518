package wacz

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"warcdedup/cdx"
	"warcdedup/record"
	"warcdedup/reindex"
	"warcdedup/rewritelog"
)

// IndexUpdate brings the lines of a package's index up to date with the
// rewrite of its WARC members (reindex.Updater is one).
type IndexUpdate interface {
	// Update edits l, a line of the index named input, to describe its
	// record as it is now, and reports whether l changed. An error means
	// the index cannot be brought up to date: the rebuild stops.
	Update(l *cdx.Line, input string) (bool, error)
}

// LogUpdate updates a package's index with the entries of a rewrite log
// for its WARC members (see PackageMoves), as warccdx updates a loose
// index. A rebuild gives it the new members to read restored records
// from, and checks at the end that every entry found its line.
type LogUpdate struct {
	reindex.Updater
}

// NewLogUpdate returns a LogUpdate of the moves.
func NewLogUpdate(moves *rewritelog.Moves) *LogUpdate {
	return &LogUpdate{Updater: reindex.Updater{Moves: moves}}
}

// finish reports the log entries no index line was found for.
func (u *LogUpdate) finish(pkg string) error {
	var missed []string
	u.Moves.Unmatched(func(f *rewritelog.File, mv rewritelog.Move) {
		if len(missed) < 5 {
			missed = append(missed, fmt.Sprintf("%s offset %d (log line %d, %s)", f.Name, mv.OldOffset, mv.Line, mv.Kind))
		} else if len(missed) == 5 {
			missed = append(missed, "...")
		}
	})
	if len(missed) > 0 {
		return errorf(pkg, "", -1, ErrIndex, "the index has no line for records the rewrite changed: %s", strings.Join(missed, ", "))
	}
	return nil
}

// PackageMoves reads the entries of a rewrite log that name WARC members
// of the package pkg (as the log names it: "dir/x.wacz", entries
// "dir/x.wacz#archive/data.warc.gz"), keeping those keep accepts (nil:
// all), and returns them as Moves whose files are named as the package's
// index names them (the member's path after "archive/"). Runs are kept
// as the log has them, so that the entries of several runs follow one
// another.
func PackageMoves(log *rewritelog.Reader, pkg string, keep func(*rewritelog.Entry) bool) (*rewritelog.Moves, error) {
	var buf bytes.Buffer
	run := -1
	for {
		e, err := log.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		p, member, ok := SplitName(e.File)
		if !ok || p != pkg || (keep != nil && !keep(e)) {
			continue
		}
		if !strings.HasPrefix(member, "archive/") {
			return nil, fmt.Errorf("%s: log line %d names member %s, which is no WARC member", pkg, e.Line, member)
		}
		if e.Run != run {
			run = e.Run
			buf.Write(rewritelog.AppendRun(nil, log.Runs[run]))
			buf.WriteByte('\n')
		}
		c := *e
		c.File = IndexName(member)
		buf.Write(c.AppendTo(nil))
		buf.WriteByte('\n')
	}
	return rewritelog.Load(rewritelog.NewReader(&buf, pkg+" (its entries of the rewrite log)"), time.Time{})
}

// memberRecords reads restored records from the new WARC members, for a
// LogUpdate that meets a revisit line of a record the log restored.
type memberRecords struct {
	files map[string]*os.File // by index name
}

// Fields returns the mime and payload digest of the response at offset
// of the member the index names file.
func (s *memberRecords) Fields(file string, offset int64) (string, string, error) {
	f := s.files[file]
	if f == nil {
		return "", "", fmt.Errorf("%s: not a rewritten member", file)
	}
	fi, err := f.Stat()
	if err != nil {
		return "", "", err
	}
	rr, err := record.NewReader(io.NewSectionReader(f, offset, fi.Size()-offset), file)
	if err != nil {
		return "", "", err
	}
	rec, err := rr.Next()
	if err != nil {
		return "", "", err
	}
	if rec.Type != "response" {
		return "", "", fmt.Errorf("%s: offset %d: a %s record, not the restored response", file, offset, rec.Type)
	}
	head, err := rr.ReadHTTPHead()
	if err != nil {
		return "", "", err
	}
	mime := ""
	for _, line := range bytes.Split(head.Raw, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(name)), "content-type") {
			v, _, _ := strings.Cut(string(value), ";")
			mime = strings.TrimSpace(v)
			break
		}
	}
	return mime, rec.Header.Get("WARC-Payload-Digest"), nil
}

var errNoUpdate = errors.New("WARC members are replaced, but no index update is given (IndexUpdate or FreshIndex)")
