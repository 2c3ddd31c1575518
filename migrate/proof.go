package migrate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/convmap"
	"warcdedup/record"
)

// proof is what a conversion proved: the two files by size and SHA-256,
// and where each ARC record is in the WARC. Its file is its section of the
// conversion map.
type proof struct {
	File    convmap.File
	Records []convmap.Record
	// Matched and Listed are verify.Conversion's counts: records found
	// block for block, responses listed in order.
	Matched, Listed int64
}

func (p *proof) appendTo(dst []byte) []byte {
	dst = fmt.Appendf(dst, "# proved: %d ARC records found block for block in the WARC, %d listed responses in order\n", p.Matched, p.Listed)
	dst = convmap.AppendFile(dst, &p.File)
	for i := range p.Records {
		dst = convmap.AppendRecord(dst, &p.Records[i])
	}
	return dst
}

// writeProof writes the file's proof durably: synced, renamed into place,
// its directory synced, and so each directory between it and the proofs'
// directory (made for an ARC in a subdirectory of the collection).
func (f *file) writeProof(p *proof) error {
	name := f.proofPath
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := f.writeProofFile(name, p); err != nil {
		return err
	}
	if top := filepath.Join(f.c.WorkDir, ProofDir); dir != top {
		return f.c.syncUp(filepath.Dir(dir), top)
	}
	return nil
}

func (f *file) writeProofFile(name string, p *proof) error {
	out, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	w := newBuffered(out)
	if _, err := w.Write(p.appendTo(nil)); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Commit()
}

// readProof reads a proof file; an error wrapping fs.ErrNotExist when
// there is none.
func readProof(name string) (*proof, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := &proof{}
	br := bufio.NewReader(f)
	if head, err := br.Peek(64); err == nil || err == io.EOF {
		if rest, ok := bytes.CutPrefix(head, []byte("# proved: ")); ok {
			n, _, _ := strings.Cut(string(rest), " ")
			p.Matched, _ = strconv.ParseInt(n, 10, 64)
		}
	}
	r := convmap.NewReader(br, name)
	seen := false
	for {
		file, rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if rec == nil {
			if seen {
				return nil, fmt.Errorf("%s: more than one file", name)
			}
			p.File, seen = *file, true
			continue
		}
		p.Records = append(p.Records, *rec)
	}
	if !seen {
		return nil, fmt.Errorf("%s: no \"# file\" line", name)
	}
	return p, nil
}

// mapRecords fills p's records and filedesc fields: each ARC record read
// one per gzip member, as indexes address them, beside the WARC record it
// became (the WARC's first record, its warcinfo, aside). An ARC that
// cannot be read that way (gzipped whole) gets no records: no index can
// address them.
func mapRecords(p *proof, arc io.ReaderAt, arcSize int64, warc io.ReaderAt, warcSize int64) error {
	ar, err := record.NewReader(io.NewSectionReader(arc, 0, arcSize), p.File.ARC)
	if err != nil {
		return err
	}
	wr, err := record.NewReader(io.NewSectionReader(warc, 0, warcSize), p.File.WARC)
	if err != nil {
		return err
	}
	info, err := wr.Next()
	if err != nil || info.Type != "warcinfo" {
		return fmt.Errorf("%s: no warcinfo record first (%v)", p.File.WARC, err)
	}
	var recs []convmap.Record
	for {
		a, err := ar.Next()
		if err == io.EOF {
			break
		}
		var damage *record.Error
		if errors.As(err, &damage) {
			// Records share gzip members: the proof read them from the
			// inflated stream; an index cannot address them.
			p.Records = nil
			return nil
		}
		if err != nil {
			return err
		}
		if a.Type == "filedesc" && len(recs) == 0 {
			p.File.FiledescURI, p.File.FiledescDate = a.URI, a.Date
		}
		oldOff := a.Offset
		if err := ar.Finish(); err != nil {
			if errors.As(err, &damage) {
				p.Records = nil
				return nil
			}
			return err
		}
		oldLen := a.Length
		w, err := wr.Next()
		if err != nil {
			return fmt.Errorf("%s: the WARC record of the ARC record at %d: %w", p.File.WARC, oldOff, err)
		}
		r := convmap.Record{OldOffset: oldOff, OldLength: oldLen, NewOffset: w.Offset, Type: w.Type}
		switch w.Type {
		case "response":
			head, err := wr.ReadHTTPHead()
			if err != nil {
				return err
			}
			if head.Status > 0 {
				r.Status = strconv.Itoa(head.Status)
			}
			r.MIME = httpContentType(head.Raw)
			r.Digest = w.Header.Get("WARC-Payload-Digest")
		case "resource":
			r.MIME = w.Header.Get("Content-Type")
			r.Digest = w.Header.Get("WARC-Payload-Digest")
		default:
			r.MIME = w.Header.Get("Content-Type")
		}
		if err := wr.Finish(); err != nil {
			return err
		}
		r.NewLength = w.Length
		recs = append(recs, r)
	}
	if _, err := wr.Next(); err != io.EOF {
		return fmt.Errorf("%s: more records than its ARC has (%v)", p.File.WARC, err)
	}
	p.Records = recs
	return nil
}

// httpContentType is the mime a WARC indexer gives a response: its HTTP
// Content-Type up to the first ";", trimmed; "" without one.
func httpContentType(head []byte) string {
	for _, line := range bytes.Split(head, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(name)), "content-type") {
			v, _, _ := strings.Cut(string(value), ";")
			return strings.TrimSpace(v)
		}
	}
	return ""
}

type buffered struct {
	*bufio.Writer
}

func newBuffered(w io.Writer) buffered { return buffered{bufio.NewWriterSize(w, 256<<10)} }
