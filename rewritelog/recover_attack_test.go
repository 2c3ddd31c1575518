package rewritelog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
)

// TestRecoverKeepsLeftoverAWriterWrote proves that the recovery from a
// journal removes a file's temporary names only when they hold one of its
// two versions, as journaled. A run killed (SIGKILL, a crash) after its
// new version was exchanged with the file (inplace put) and before it
// gave the name back, because a writer had the file open (its lease
// broken), leaves the file, with what the writer appended and goes on
// appending, under the temporary name: the recovery logs the new version,
// which holds the name, and removed every temporary name of the file, the
// writer's records with them. A kill after the name was given back, and
// before Revert named the new version beside the file, leaves the new
// version there, with what a writer that found it under the name wrote.
func TestRecoverKeepsLeftoverAWriterWrote(t *testing.T) {
	for _, tc := range []struct {
		name string
		// revert: the name was given back before the kill (the new
		// version under the temporary name), and the writer had found
		// the new version under the name.
		revert bool
		// written is what the writer wrote, "" for nothing.
		written string
		// partial is a new version cut short by an earlier kill, left too:
		// removed.
		partial  bool
		wantKept bool
	}{
		{name: "killed before giving the name back, the writer appended to the file", written: "WARC/1.0 the writer's record\r\n", wantKept: true},
		{name: "killed before giving the name back, nothing written"},
		{name: "killed once the name was given back, the writer appended to the new version", revert: true, written: "WARC/1.0 the writer's record\r\n", wantKept: true},
		{name: "killed once the name was given back, nothing written", revert: true},
		{name: "a new version cut short by an earlier kill", partial: true},
		{name: "a new version cut short, the writer appended to the file", partial: true, written: "WARC/1.0 the writer's record\r\n", wantKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logName := filepath.Join(dir, "rewrite.log")
			path := filepath.Join(dir, "a.warc")
			oldContent, newContent := []byte("WARC/1.0 the old version, with a duplicate\r\n"), []byte("WARC/1.0 the new version\r\n")
			if err := os.WriteFile(path, oldContent, 0o644); err != nil {
				t.Fatal(err)
			}
			// The writer, whose open broke the run's lease on the file.
			w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			l, err := Open(logName)
			if err != nil {
				t.Fatal(err)
			}
			oldSum, newSum := sha256.Sum256(oldContent), sha256.Sum256(newContent)
			in := &Intent{Path: path, Fixity: Fixity{File: "a.warc", OldSize: int64(len(oldContent)), OldSum: hex.EncodeToString(oldSum[:]),
				NewSize: int64(len(newContent)), NewSum: hex.EncodeToString(newSum[:])}}
			in.Entries = []Entry{{File: "a.warc", OldOffset: 0, OldLength: int64(len(oldContent)), NewOffset: 0, NewLength: int64(len(newContent)), Kind: Revisit,
				PayloadDigest: "sha1:AAAA", RefersToURI: "http://example.com/", RefersTo: "2024-01-01T00:00:00Z"}}
			if err := l.Journal(in); err != nil {
				t.Fatal(err)
			}
			f, err := atomicfile.Create(path, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(newContent)
			tmp := f.File.Name()
			if _, err := f.Exchange(); err != nil {
				if errors.Is(err, atomicfile.ErrExchangeUnsupported) {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			want := newContent
			if tc.revert {
				// The writer's open found the new version under the name.
				w.Close()
				if w, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				// The names given back (as Revert's exchange leaves them).
				for _, mv := range [][2]string{{path, path + ".x"}, {tmp, path}, {path + ".x", tmp}} {
					if err := os.Rename(mv[0], mv[1]); err != nil {
						t.Fatal(err)
					}
				}
				want = oldContent
			}
			if tc.written != "" {
				if _, err := w.WriteString(tc.written); err != nil {
					t.Fatal(err)
				}
			}
			if tc.partial {
				if err := os.WriteFile(filepath.Join(dir, atomicfile.TempPrefix+"a.warc-1234567"), newContent[:10], 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// The kill: nothing committed, the journal left.
			l.journal.close()
			l.file.Close()
			l, err = Open(logName)
			if tc.wantKept {
				// The run stops, naming what it kept; the next goes on.
				if err == nil || !strings.Contains(err.Error(), atomicfile.KeptSuffix) {
					t.Fatalf("recovering: %v, want an error naming what was kept", err)
				}
				l, err = Open(logName)
			}
			if err != nil {
				t.Fatalf("recovering: %v", err)
			}
			l.Close()
			// What a run does next to the file (inplace.Version open).
			atomicfile.RemoveLeftovers(path)
			entries, _ := os.ReadDir(dir)
			found := false
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				if tc.written != "" && bytes.Contains(b, []byte(tc.written)) && !strings.HasPrefix(e.Name(), atomicfile.TempPrefix) {
					found = true
				}
			}
			if tc.wantKept && !found {
				t.Errorf("the writer's record, appended to the file under its temporary name, is lost by the recovery")
			}
			kept, _ := filepath.Glob(path + atomicfile.KeptSuffix + "*")
			if !tc.wantKept && len(kept) > 0 || tc.wantKept && len(kept) != 1 {
				t.Errorf("kept %v, want %v", kept, tc.wantKept)
			}
			if leftovers := atomicfile.Leftovers(path); len(leftovers) > 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, want) {
				t.Errorf("the name holds %q, want %q", b, want)
			}
		})
	}
}
