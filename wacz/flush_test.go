package wacz

import (
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// syncCountingFile is a package's new version whose syncs are counted,
// failing with err when set.
type syncCountingFile struct {
	*os.File
	syncs int
	err   error
}

func (f *syncCountingFile) Sync() error {
	f.syncs++
	if f.err != nil {
		return f.err
	}
	return f.File.Sync()
}

// TestRebuildFlushBeforeWait proves that a rebuild asked to flush its
// members syncs the new version once they are written, before Requires
// (the wait for the packages it requires), and fails when that sync
// fails rather than leaving the failure to a later sync of the same
// open file, which need not report it again.
func TestRebuildFlushBeforeWait(t *testing.T) {
	data := testWARC()
	offsets := responseOffsets(t, data)
	rw := revisitsOf(t, data, JoinName("x.wacz", sumsMember), offsets[1], offsets[2])
	good := sha256.Sum256(rw.data)
	sum := FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), good[:]}
	failed := errors.New("input/output error")
	for _, tc := range []struct {
		name      string
		flush     bool
		syncErr   error
		wantSyncs int // syncs made when Requires is called
		wantErr   string
	}{
		{"flushed before the wait", true, nil, 1, ""},
		{"not asked: no sync before the wait", false, nil, 0, ""},
		{"a failed flush fails the rebuild", true, failed, -1, "flushing its members to disk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, old, rp := replacedPackage(t, dir, data, rw)
			f, err := os.Create(filepath.Join(dir, "new.wacz"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			out := &syncCountingFile{File: f, err: tc.syncErr}
			atWait := -1
			b := &Rebuild{Source: old, Replace: map[string]Replacement{sumsMember: {Path: rp.Path, Sum: &sum}}, FreshIndex: true,
				NoPackageSHA256: true, Now: rebuildTime, TempDir: dir, FlushBeforeWait: tc.flush, ReadBack: &ReadBack{},
				Requires: func() ([]Requirement, error) {
					atWait = out.syncs
					return nil, nil
				}}
			res, err := b.Write(out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, failed) {
					t.Fatalf("Write: %v, want an error saying %q wrapping the sync's", err, tc.wantErr)
				}
				if atWait != -1 {
					t.Fatal("Requires was called after the failed flush")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if atWait != tc.wantSyncs {
				t.Fatalf("%d syncs when Requires was called, want %d", atWait, tc.wantSyncs)
			}
			np, rep := readBack(t, f, res)
			if err := rep.Err(); err != nil {
				t.Fatalf("the package written reads back wrong: %v", err)
			}
			if np.Member(sumsMember) == nil {
				t.Fatalf("%s missing from the package written", sumsMember)
			}
		})
	}
}
