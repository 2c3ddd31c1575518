package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// WriteJSON writes r as stats.json: indented, fields in the model's order,
// text as it is (no \u003c for "<"), breakdowns that are empty as [] so
// that a reader can always iterate them, and a final newline. The same
// report always gives the same bytes.
func WriteJSON(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("report: no report to write")
	}
	out := *r
	for _, s := range []*[]Bucket{&out.ByMIME, &out.ByHost, &out.ByMonth, &out.BySize} {
		if *s == nil {
			*s = []Bucket{}
		}
	}
	if out.Collections == nil {
		out.Collections = []string{}
	}
	if out.LargestClasses == nil {
		out.LargestClasses = []Class{}
	}
	if out.NotDeduplicable == nil {
		out.NotDeduplicable = []Reason{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&out); err != nil {
		return fmt.Errorf("report: writing JSON: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: writing JSON: %w", err)
	}
	return nil
}

// ReadJSON reads a report WriteJSON wrote. Fields it does not know are
// ignored (a newer warcdedup may add some); anything after the report but
// white space is an error.
func ReadJSON(rd io.Reader) (*Report, error) {
	dec := json.NewDecoder(rd)
	var r Report
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("report: reading JSON: %w", jsonOffset(dec, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("report: reading JSON: offset %d: data after the report", dec.InputOffset())
	}
	return &r, nil
}

// jsonOffset names where in the input a decoding error is.
func jsonOffset(dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("offset %d: %w", syn.Offset, err)
	case errors.As(err, &typ):
		return fmt.Errorf("offset %d: %w", typ.Offset, err)
	case errors.Is(err, io.EOF):
		return errors.New("empty input")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("offset %d: truncated", dec.InputOffset())
	}
	return err
}
