package warcindex

import (
	"fmt"

	"warcdedup/record"
)

// Records indexes the records of a WARC file as another reader of the
// file meets them (warcsum's, which reads every record once for its
// payload digest): the lines are those Index writes for the same bytes.
// For each record, Begin is called before the other reader reads its
// block, End once the record is finished; Close after the last one.
// The first error stops the index: every later call returns it.
type Records struct {
	ix  indexer
	cur *facts
	err error
}

// NewRecords returns a Records of the file named filename, calling emit
// with each entry in file order.
func NewRecords(filename string, emit func(*Entry) error) *Records {
	return &Records{ix: indexer{filename: filename, emit: emit}}
}

// Begin reads what the index needs of rec at the start of its block:
// the header's fields and the HTTP head (a request's body too, which
// nothing else reads). head is the record's HTTP head if the caller read
// it already (record.Reader.ReadHTTPHead, once a record; only a response
// is read so), else nil. A reader of the payload reads it afterwards:
// Begin reads a response's block only when it is no HTTP response.
func (r *Records) Begin(rr *record.Reader, rec *record.Record, head *record.HTTPHead) error {
	if r.err != nil {
		return r.err
	}
	if rec.Format != record.WARC {
		r.err = fmt.Errorf("%s: offset %d: not a WARC record", r.ix.filename, rec.Offset)
		return r.err
	}
	if head != nil && rec.Type != "response" {
		r.err = fmt.Errorf("%s: offset %d: an HTTP head read of a %s record", r.ix.filename, rec.Offset, rec.Type)
		return r.err
	}
	r.cur, r.err = beginFacts(rr, rec, head)
	return r.err
}

// End takes the record begun, now finished (record.Reader.Finish), and
// emits what it completes.
func (r *Records) End(rr *record.Reader, rec *record.Record) error {
	if r.err != nil {
		return r.err
	}
	if r.cur == nil || r.cur.offset != rec.Offset {
		r.err = fmt.Errorf("%s: offset %d: a record ended that was not begun", r.ix.filename, rec.Offset)
		return r.err
	}
	f := r.cur
	r.cur = nil
	f.end(rr, rec)
	r.err = r.ix.add(f)
	return r.err
}

// Close emits the last entry held back for a request that might follow.
func (r *Records) Close() error {
	if r.err != nil {
		return r.err
	}
	if r.cur != nil {
		r.err = fmt.Errorf("%s: offset %d: a record begun was not ended", r.ix.filename, r.cur.offset)
		return r.err
	}
	r.err = r.ix.flush()
	return r.err
}
