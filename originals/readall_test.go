package originals

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadAll proves that an original's payload is read whole whatever the
// size its record states: the size only sets the first allocation.
func TestReadAll(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789"), 3000)
	broken := errors.New("disk error")
	tests := []struct {
		name    string
		r       io.Reader
		size    int64
		want    []byte
		wantErr error
	}{
		{"the size stated", bytes.NewReader(payload), int64(len(payload)), payload, nil},
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(payload)), int64(len(payload)), payload, nil},
		{"more than stated", bytes.NewReader(payload), 100, payload, nil},
		{"less than stated", bytes.NewReader(payload[:10]), int64(len(payload)), payload[:10], nil},
		{"empty", bytes.NewReader(nil), 0, []byte{}, nil},
		{"the last bytes with the end", iotest.DataErrReader(bytes.NewReader(payload)), int64(len(payload)), payload, nil},
		{"a size past what is kept in memory", bytes.NewReader(payload), 1 << 62, payload, nil},
		{"a negative size", bytes.NewReader(payload), -1, payload, nil},
		{"an error after some bytes", io.MultiReader(bytes.NewReader(payload[:50]), iotest.ErrReader(broken)), int64(len(payload)), payload[:50], broken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(tt.r, tt.size)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("read %d bytes, want %d", len(got), len(tt.want))
			}
		})
	}
}
