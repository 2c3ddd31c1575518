package undo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/workdir"
)

// TestUndoChecksFixityOfEitherLogForm: undo restores from a log of this
// version (BLAKE3 sums, "blake3:HEX") and from one of an earlier version
// (bare SHA-256 sums, made here by writing the SHA-256 of each file's two
// versions into the log's "# file" lines, byte for byte what earlier
// versions wrote): every file comes back bit for bit. A file changed
// after the run, its size kept, is refused by the check of its logged
// sum in either algorithm, and left as it is.
func TestUndoChecksFixityOfEitherLogForm(t *testing.T) {
	src, _ := jobtest.Generated(t, jobtest.AttackCfg)
	before := readTree(t, src)
	for _, form := range []string{"blake3", "sha256"} {
		for _, changed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s log, file changed after the run %v", form, changed), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "coll")
				jobtest.CopyTree(t, src, dir)
				wd := dir + ".work"
				if r := runOn(t, dir, wd); r.Report.Exit != 0 {
					t.Fatalf("run: exit %d %v", r.Report.Exit, r.Report.ExitReason)
				}
				logName := filepath.Join(wd, workdir.LogFile)
				replaced := fixityLines(t, logName, form, before, dir)
				if len(replaced) == 0 {
					t.Fatal("the run replaced no file")
				}
				victim := ""
				var victimBytes []byte
				if changed {
					for _, name := range replaced {
						if strings.HasSuffix(name, ".warc") {
							victim = name
							break
						}
					}
					if victim == "" {
						t.Fatal("no uncompressed file replaced")
					}
					p := filepath.Join(dir, victim)
					data, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					// A byte of the block of its first record, a warcinfo
					// record no original or revisit is: undo copies it,
					// and only the logged sum tells the file changed.
					body := bytes.Index(data, []byte("\r\n\r\n"))
					if body < 0 || !bytes.Contains(data[:body], []byte("WARC-Type: warcinfo")) {
						t.Fatalf("%s does not start with a warcinfo record", victim)
					}
					data[body+6] ^= 1
					if err := os.WriteFile(p, data, 0o644); err != nil {
						t.Fatal(err)
					}
					victimBytes = data
				}
				u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
				if err != nil {
					t.Fatalf("undo: %v", err)
				}
				after := readTree(t, dir)
				if !changed {
					if u.Exit != 0 {
						t.Fatalf("undo: exit %d %v", u.Exit, u.ExitReason)
					}
					for name, b := range before {
						if !bytes.Equal(after[name], b) {
							t.Errorf("%s is not restored bit for bit", name)
						}
					}
					if u.BitExact != int64(len(replaced)) {
						t.Errorf("undo says %d files restored bit for bit, %d were replaced", u.BitExact, len(replaced))
					}
					return
				}
				all := strings.Join(append(append(append([]string{}, u.ExitReason...), u.Refused...), u.Unrestored...), "\n")
				if u.Exit == 0 || !strings.Contains(all, victim) || !strings.Contains(all, "not the version the rewrite log's last replacement of it left") {
					t.Errorf("undo: exit %d; %s, changed after the run, is not refused as not the logged version: %s", u.Exit, victim, all)
				}
				if !bytes.Equal(after[victim], victimBytes) {
					t.Errorf("undo wrote %s, which changed after the run", victim)
				}
			})
		}
	}
}

// fixityLines returns the files the log's "# file" lines name, checking
// that their sums are BLAKE3 ("blake3") or making them the SHA-256 of
// the versions before (before) and now (in dir) as earlier versions wrote
// them ("sha256").
func fixityLines(t *testing.T, logName, form string, before map[string][]byte, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(logName)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	lines := strings.SplitAfter(string(data), "\n")
	for i, line := range lines {
		rest, ok := strings.CutPrefix(line, "# file ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		name, err := manifest.UnescapeFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		if form == "blake3" {
			for _, s := range []string{f[2], f[4]} {
				if !strings.HasPrefix(s, "blake3:") || len(s) != len("blake3:")+64 {
					t.Fatalf("%s: a sum %q, not blake3:HEX", logName, s)
				}
			}
			continue
		}
		now, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		old, cur := sha256.Sum256(before[name]), sha256.Sum256(now)
		f[2], f[4] = hex.EncodeToString(old[:]), hex.EncodeToString(cur[:])
		lines[i] = "# file " + strings.Join(f, " ") + "\n"
	}
	if form == "sha256" {
		out := strings.Join(lines, "")
		if err := os.WriteFile(logName, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := rewritelog.WriteEnd(logName, int64(len(out))); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// readTree returns the contents of each regular file under dir, by name
// relative to it.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
