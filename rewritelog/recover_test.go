package rewritelog

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRecoverInFileOrder proves that the files a crash left journaled are
// logged in the order a run's files must be, whatever order the workers
// journaled them in (two workers: the second file can be renamed first).
func TestRecoverInFileOrder(t *testing.T) {
	tests := []struct {
		name    string
		journal []string // files, in the order they were journaled
	}{
		{"journaled in order", []string{"a.warc", "b.warc", "c d.warc"}},
		{"the second worker first", []string{"b.warc", "a.warc"}},
		{"reversed, an escaped name among them", []string{"c d.warc", "b.warc", "a.warc"}},
		// "a b" < "a!" unescaped, but "a%20b" > "a!" as the log spells them
		{"the order of the escaped names, not of the names", []string{"a!.warc", "a b.warc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			logName := filepath.Join(dir, "rewrite.log")
			l, err := Open(logName)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tt.journal {
				// The new version, renamed into place before the crash.
				content := []byte("new version of " + name)
				path := filepath.Join(dir, name)
				if err := os.WriteFile(path, content, 0o644); err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(content)
				in := &Intent{Path: path, Fixity: Fixity{File: name, OldSize: int64(len(content)) + 80, OldSum: hex.EncodeToString(make([]byte, 32)),
					NewSize: int64(len(content)), NewSum: hex.EncodeToString(sum[:])}}
				in.Entries = []Entry{{File: name, OldOffset: 10, OldLength: 90, NewOffset: 10, NewLength: 10, Kind: Revisit,
					PayloadDigest: "sha1:AAAA", RefersToURI: "http://example.com/", RefersTo: "2024-01-01T00:00:00Z"}}
				if err := l.Journal(in); err != nil {
					t.Fatal(err)
				}
			}
			// The crash: nothing committed, the journal left.
			l.journal.close()
			l.file.Close()
			if l, err = Open(logName); err != nil {
				t.Fatalf("recovering: %v", err)
			}
			l.Close()
			f, err := os.Open(logName)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := NewReader(f, logName)
			n := 0
			for {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("the recovered log does not read: %v", err)
				}
				n++
			}
			if n != len(tt.journal) {
				t.Errorf("%d entries recovered, want %d", n, len(tt.journal))
			}
		})
	}
}
