package rewritelog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkLoad reads a log of 100 files of 400 entries each into memory
// (Load, as undo and the crawl index do); bytes are the log's.
func BenchmarkLoad(b *testing.B) {
	const files, records = 100, 400
	name := filepath.Join(b.TempDir(), "rewrite.log")
	l, err := Open(name)
	if err != nil {
		b.Fatal(err)
	}
	for i := range files {
		if err := l.Append(editsIntent(i, records)); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	text, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		m, err := Load(NewReader(bytes.NewReader(text), name), time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		if len(m.edits) != files*records {
			b.Fatalf("%d entries loaded, want %d", len(m.edits), files*records)
		}
	}
}
