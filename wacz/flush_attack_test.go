package wacz

import (
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// unsyncable is a package's new version that cannot be synced (nor read):
// only Write and WriteAt.
type unsyncable struct {
	io.Writer
	io.WriterAt
}

// failingAfterWait is a new version whose syncs fail once Requires was
// called: the sync of the whole file before its rename, after the members
// were flushed.
type failingAfterWait struct {
	*os.File
	waited *bool
}

func (f *failingAfterWait) Sync() error {
	if *f.waited {
		return errors.New("input/output error after the wait")
	}
	return f.File.Sync()
}

// TestRebuildFlushBeforeWaitAttack attacks FlushBeforeWait where out
// cannot be synced (no flush, no error: the Write goes on), and where the
// flush before the wait succeeds but a later sync of the same file would
// fail: the Write itself makes no later sync (the caller's rename does, and
// must see it fail), so the package written reads back whole either way.
func TestRebuildFlushBeforeWaitAttack(t *testing.T) {
	data := testWARC()
	offsets := responseOffsets(t, data)
	rw := revisitsOf(t, data, JoinName("x.wacz", sumsMember), offsets[1], offsets[2])
	good := sha256.Sum256(rw.data)
	sum := FileSum{int64(len(rw.data)), crc32.ChecksumIEEE(rw.data), good[:]}
	for _, tc := range []struct {
		name string
		out  func(f *os.File, waited *bool) outFile
	}{
		{"out cannot be synced", func(f *os.File, _ *bool) outFile { return unsyncable{f, f} }},
		{"syncs fail after the wait", func(f *os.File, waited *bool) outFile { return &failingAfterWait{f, waited} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, old, rp := replacedPackage(t, dir, data, rw)
			f, err := os.Create(filepath.Join(dir, "new.wacz"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			waited := false
			b := &Rebuild{Source: old, Replace: map[string]Replacement{sumsMember: {Path: rp.Path, Sum: &sum}}, FreshIndex: true,
				NoPackageSHA256: true, Now: rebuildTime, TempDir: dir, FlushBeforeWait: true, ReadBack: &ReadBack{},
				Requires: func() ([]Requirement, error) {
					waited = true
					return nil, nil
				}}
			res, err := b.Write(tc.out(f, &waited))
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if !waited {
				t.Fatal("Requires was not called")
			}
			_, rep := readBack(t, f, res)
			if err := rep.Err(); err != nil {
				t.Fatalf("the package written reads back wrong: %v", err)
			}
			if s, ok := tc.out(f, &waited).(interface{ Sync() error }); ok && s.Sync() == nil {
				t.Fatal("the sync after the wait succeeded: the test proves nothing")
			}
		})
	}
}
