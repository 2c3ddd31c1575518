package warcsum

import "warcdedup/record"

// RecordIndex indexes a file's records from the Summer's read of them
// (package warcindex's Records): the records it reads whole anyway, so
// that an index of a file costs no second read and inflate of it.
type RecordIndex interface {
	// Begin is called with each record before the Summer reads its
	// block, head being the HTTP head it read of a response (which
	// cannot be read twice), else nil. The payload of a response whose
	// head Begin gets is the Summer's: Begin must not read it.
	Begin(rr *record.Reader, rec *record.Record, head *record.HTTPHead) error
	// End is called once the record is finished.
	End(rr *record.Reader, rec *record.Record) error
}

// FileIndex is a RecordIndex of one file (Runner.Index).
type FileIndex interface {
	RecordIndex
	// Close is called when the file was read: whole if every record was
	// read, none damaged, and Begin and End of each returned nil. An
	// index not whole is to be dropped.
	Close(whole bool)
}

// beginIndex passes rec to the index, which stops at its first error.
func (s *Summer) beginIndex(rr *record.Reader, rec *record.Record, head *record.HTTPHead) {
	if !s.indexFailed && s.index.Begin(rr, rec, head) != nil {
		s.indexFailed = true
	}
}

// endIndex passes the finished record to the index.
func (s *Summer) endIndex(rr *record.Reader, rec *record.Record) {
	if !s.indexFailed && s.index.End(rr, rec) != nil {
		s.indexFailed = true
	}
}
