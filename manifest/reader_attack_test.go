package manifest

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReaderNamesIncompleteMark proves that a manifest ending with the
// mark of a command that stopped (IncompleteMark) is refused saying so, as
// written and after sort (which ends the mark's line and may put it first):
// the mark is no line, and "13 fields, want 6, 7 or 10" did not say that
// the stage before had failed.
func TestReaderNamesIncompleteMark(t *testing.T) {
	const line = "a.warc 0 100 http://x/ 2024-01-01T00:00:00Z sha1:VIQCHCVLTSXPYXCRRSX35GPZEFC2OW7Z\n"
	tests := []struct {
		name, text string
		want       error
		wantLine   int
	}{
		{"as written", line + IncompleteMark, ErrTruncated, 2},
		{"after sort", IncompleteMark + "\n" + line, ErrIncomplete, 1},
		{"at the end, with a line feed", line + IncompleteMark + "\n", ErrIncomplete, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.text), "m")
			var err error
			for err == nil {
				_, err = r.Next()
			}
			var me *Error
			if err == io.EOF || !errors.Is(err, tt.want) || !errors.As(err, &me) || me.Line != tt.wantLine {
				t.Errorf("error %v, want %v at line %d", err, tt.want, tt.wantLine)
			}
		})
	}
}
