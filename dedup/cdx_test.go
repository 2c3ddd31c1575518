package dedup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/cdx"
	"warcdedup/internal/progress"
	"warcdedup/reindex"
	"warcdedup/rewritelog"
	"warcdedup/workdir"
)

// TestIndexResume proves what a rerun of the index update does whatever
// stopped the one before: the work directory's record of an index (its
// files' SHA-256 and the byte of the log they hold it up to) makes it apply
// exactly the entries the index lacks, never one twice.
func TestIndexResume(t *testing.T) {
	const log = "# run 2026-01-01T00:00:00Z\n" +
		"a.warc.gz 1000 2000 1000 500 revisit sha1:NEWA http://a/1 2025-01-01T00:00:00Z\n"
	before := "a)/1 2025 http://a/1 text/html 200 OLDA - - 2000 1000 a.warc.gz\n" +
		"a)/2 2025 http://a/2 text/html 200 D - - 100 5000 a.warc.gz\n" +
		"b)/1 2025 http://b/1 text/html 200 D - - 100 200 b.warc.gz\n"
	var want bytes.Buffer
	moves, err := rewritelog.Load(rewritelog.NewReader(strings.NewReader(log), "log"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	j := &reindex.Copy{Updater: reindex.Updater{Moves: moves}, Out: cdx.NewWriter(&want), Strict: true}
	if err := j.Index(strings.NewReader(before), "index"); err != nil {
		t.Fatal(err)
	}
	j.Out.Flush()
	after := want.String()
	if after == before {
		t.Fatal("the log changes nothing")
	}

	type setup func(t *testing.T, u *cdxUpdate, index, state string)
	sum := func(s string) reindex.FileSum {
		h := sha256.Sum256([]byte(s))
		return reindex.FileSum{Size: int64(len(s)), SHA256: hex.EncodeToString(h[:])}
	}
	// writeState records the index as an update records it before its
	// renames: the old version holding the log up to 0, the new up to its end.
	writeState := func(t *testing.T, index, state string) {
		old, new := sum(before), sum(after)
		old.Path, new.Path = index, index
		st := cdxState{Index: index, Current: &cdxVersion{Files: []reindex.FileSum{old}}, Next: &cdxVersion{Files: []reindex.FileSum{new}, LogTo: int64(len(log))}}
		if err := workdir.WriteJSON(state, st); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		setup setup
		want  string
		note  string
	}{
		{"an index the work directory does not know: from where the job began", nil, after, ""},
		{"updated before: up to date", func(t *testing.T, u *cdxUpdate, index, _ string) {
			if err := u.one(index); err != nil {
				t.Fatal(err)
			}
		}, after, "up to date"},
		{"killed after the renames, before the record of it: the new version is known", func(t *testing.T, _ *cdxUpdate, index, state string) {
			os.WriteFile(index, []byte(after), 0o644)
			writeState(t, index, state)
		}, after, "up to date"},
		{"killed before the renames: the old version holds the log up to 0", func(t *testing.T, _ *cdxUpdate, index, state string) {
			writeState(t, index, state)
		}, after, ""},
		{"updated, then put back from a backup: an index it does not know", func(t *testing.T, u *cdxUpdate, index, _ string) {
			if err := u.one(index); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(index, []byte(before), 0o644)
		}, after, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			coll := filepath.Join(dir, "coll")
			os.MkdirAll(coll, 0o755)
			for _, f := range []string{"a.warc.gz", "b.warc.gz"} {
				os.WriteFile(filepath.Join(coll, f), []byte("x"), 0o644)
			}
			wd, err := workdir.Open(filepath.Join(dir, "work"))
			if err != nil {
				t.Fatal(err)
			}
			defer wd.Close()
			os.WriteFile(wd.File(workdir.LogFile), []byte(log), 0o644)
			index := filepath.Join(dir, "index.cdx")
			os.WriteFile(index, []byte(before), 0o644)
			var notes bytes.Buffer
			u := &cdxUpdate{wd: wd, base: 0, roots: []string{coll}, show: progress.NewPlain(&notes, "warcdedup")}
			os.MkdirAll(wd.File(indexesDir), 0o755)
			u.known = reindex.NewFileSet([]string{"a.warc.gz", "b.warc.gz"})
			state := wd.File(filepath.Join(indexesDir, keptName(index)+".json"))
			if c.setup != nil {
				c.setup(t, u, index, state)
			}
			notes.Reset()
			if err := u.run(context.Background(), []string{index}); err != nil || len(u.Refused) > 0 {
				t.Fatalf("%v %v", err, u.Refused)
			}
			got, _ := os.ReadFile(index)
			if string(got) != c.want {
				t.Errorf("index:\n%s\nwant:\n%s", got, c.want)
			}
			if !strings.Contains(notes.String(), c.note) {
				t.Errorf("notes: %s", notes.String())
			}
			kept, _ := os.ReadFile(filepath.Join(wd.File(indexesDir), keptName(index)+".before", "0-index.cdx"))
			if string(kept) != before && c.note == "" {
				t.Errorf("the copy kept is not the index from before the update:\n%s", kept)
			}
			st, err := workdir.ReadJSON[cdxState](state)
			if err != nil || st.Next != nil || st.Current == nil || st.Current.LogTo != int64(len(log)) || !st.Current.is([]reindex.FileSum{{Path: index, Size: int64(len(after)), SHA256: sum(after).SHA256}}) {
				t.Errorf("state %+v %+v %v", st.Current, st.Next, err)
			}
		})
	}
}
