package crawlindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoCrawls makes an index of jan (digests A1, B2, A3) and feb (B4, C5),
// committed one after the other: generation 2, with generation 1 kept.
func twoCrawls(t *testing.T) (dir, work string) {
	t.Helper()
	dir, work = filepath.Join(t.TempDir(), "index"), t.TempDir()
	jan := originals(t, work, "jan", digestOf('A', 1), digestOf('B', 2), digestOf('A', 3))
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan", Location: "/data/jan"}, Files: []FileInfo{{Name: "f.warc.gz", Size: 300}}, Originals: jan}); err != nil {
		t.Fatal(err)
	}
	feb := originals(t, work, "feb", digestOf('B', 4), digestOf('C', 5))
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "feb", Location: "/data/feb"}, Files: []FileInfo{{Name: "f.warc.gz", Size: 200}}, Originals: feb,
		Update: func(r *Registry) error {
			r.Crawl("feb").Requires = []Need{{Crawl: "jan", Revisits: 1, Files: []FileInfo{{Name: "f.warc.gz", Size: 300}}}}
			return nil
		}}); err != nil {
		t.Fatal(err)
	}
	return dir, work
}

// editRegistry changes the current generation's registry.json as JSON,
// and its line in CONTENTS to match: the registry's own checks must find
// what is wrong.
func editRegistry(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	name := filepath.Join(dir, "gen-000002", registryFile)
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	os.Remove(name)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "gen-000002", contentsFile)
	old, err := readContents(filepath.Dir(list))
	if err != nil || old == nil {
		return
	}
	old[registryFile] = content{size: int64(len(data)), sum: sha256Hex(data)}
	var b strings.Builder
	for rel, c := range old {
		fmt.Fprintf(&b, "%s %d %s\n", c.sum, c.size, rel)
	}
	if err := os.WriteFile(list, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// damages are the kinds of index damage every command must refuse
// (issue 20, items 6 and 8), each done to an index made by twoCrawls.
var damages = []struct {
	name   string
	damage func(t *testing.T, dir string)
}{
	{"CURRENT missing, generations present", func(t *testing.T, dir string) {
		os.Remove(filepath.Join(dir, currentFile))
	}},
	{"CURRENT rolled back to the generation before", func(t *testing.T, dir string) {
		os.WriteFile(filepath.Join(dir, currentFile), []byte("gen-000001\n"), 0o644)
	}},
	{"a run missing", func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, "gen-000002", originalsDir, runName("sha1-B", 2))); err != nil {
			t.Fatal(err)
		}
	}},
	{"null in the registry's crawls", func(t *testing.T, dir string) {
		editRegistry(t, dir, func(m map[string]any) { m["crawls"] = append([]any{nil}, m["crawls"].([]any)...) })
	}},
	{"a registry crawl that is not an object", func(t *testing.T, dir string) {
		editRegistry(t, dir, func(m map[string]any) { m["crawls"] = append([]any{42}, m["crawls"].([]any)...) })
	}},
	{"../x in the registry", func(t *testing.T, dir string) {
		editRegistry(t, dir, func(m map[string]any) {
			m["crawls"] = append(m["crawls"].([]any), map[string]any{"name": "../x", "location": "/data/x"})
		})
	}},
	{"a crawl twice in the registry", func(t *testing.T, dir string) {
		editRegistry(t, dir, func(m map[string]any) { m["crawls"] = append(m["crawls"].([]any), m["crawls"].([]any)[0]) })
	}},
	{"a registry that says another generation", func(t *testing.T, dir string) {
		editRegistry(t, dir, func(m map[string]any) { m["generation"] = 1 })
	}},
	{"crawls/jan.json missing", func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, "gen-000002", crawlsDir, "jan.json")); err != nil {
			t.Fatal(err)
		}
	}},
	{"crawls/jan.json garbled", func(t *testing.T, dir string) {
		name := filepath.Join(dir, "gen-000002", crawlsDir, "jan.json")
		os.Remove(name) // a hard link shared with generation 1
		os.WriteFile(name, []byte(`{"crawl": "jan", "files": [{"na`), 0o644)
	}},
	// The attack's finding 4: generation 1 verifies, only older.
	{"the latest generation lost, CURRENT set back to the one before", func(t *testing.T, dir string) {
		if err := os.RemoveAll(filepath.Join(dir, "gen-000002")); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, currentFile), []byte("gen-000001\n"), 0o644)
	}},
	{"every generation and CURRENT lost", func(t *testing.T, dir string) {
		for _, g := range []string{"gen-000001", "gen-000002", currentFile} {
			if err := os.RemoveAll(filepath.Join(dir, g)); err != nil {
				t.Fatal(err)
			}
		}
	}},
	{"a record of a commit garbled", func(t *testing.T, dir string) {
		os.WriteFile(filepath.Join(dir, commitsDir, "feb.json"), []byte(`{"crawl": "feb", "op": "comm`), 0o644)
	}},
}

// noPanic runs f and turns a panic into an error.
func noPanic(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// TestDamagedIndexRefused proves that an index that does not verify is
// refused by Open (every index command opens the index) and by Commit,
// with an error that is not "no index here yet" and without a panic, and
// that a refused commit makes no generation (issue 20, item 8: with CURRENT
// missing a commit made a generation holding only the new crawl; a
// rolled-back CURRENT dropped a later crawl; null in the registry's crawls
// panicked every command).
func TestDamagedIndexRefused(t *testing.T) {
	for _, tt := range damages {
		t.Run(tt.name, func(t *testing.T) {
			dir, work := twoCrawls(t)
			tt.damage(t, dir)
			current, _ := os.ReadFile(filepath.Join(dir, currentFile))
			err := noPanic(func() error {
				_, err := Open(dir)
				return err
			})
			if err == nil || errors.Is(err, ErrNoIndex) || strings.HasPrefix(err.Error(), "panic") {
				t.Errorf("Open: %v, want a refusal", err)
			} else {
				t.Logf("Open: %v", err)
			}
			mar := originals(t, work, "mar", digestOf('D', 6))
			err = noPanic(func() error {
				_, err := Commit(dir, Change{Add: &Crawl{Name: "mar", Location: "/data/mar"}, Originals: mar})
				return err
			})
			if err == nil || strings.HasPrefix(err.Error(), "panic") {
				t.Errorf("Commit: %v, want a refusal", err)
			}
			if now, _ := os.ReadFile(filepath.Join(dir, currentFile)); !bytes.Equal(now, current) {
				t.Errorf("a refused commit moved CURRENT from %q to %q", current, now)
			}
			if _, err := os.Stat(filepath.Join(dir, "gen-000003")); err == nil {
				t.Errorf("a refused commit made gen-000003")
			}
		})
	}
}

// TestCommitLeftoverIsNoDamage proves that what a commit killed after
// renaming its generation into place, before CURRENT, leaves is no damage:
// before the first commit of an index it is still "no index yet", and the
// next commit works.
func TestCommitLeftoverIsNoDamage(t *testing.T) {
	dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
	jan := originals(t, work, "jan", digestOf('A', 1))
	if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan"}, Originals: jan}); err != nil {
		t.Fatal(err)
	}
	// As if the commit was killed between its generation's rename and
	// CURRENT's: the generation is there, CURRENT, the generation's mark
	// and the record of the commit (written after them) are not.
	if err := os.Remove(filepath.Join(dir, currentFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, commitsDir, "jan.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "gen-000001", committedFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrNoIndex) {
		t.Errorf("Open after a first commit killed before CURRENT: %v, want no index yet", err)
	}
	ix, err := Commit(dir, Change{Add: &Crawl{Name: "jan"}, Originals: jan})
	if err != nil {
		t.Fatalf("the commit after: %v", err)
	}
	if ix.Registry.Generation != 2 || len(ix.Registry.Crawls) != 1 {
		t.Errorf("generation %d, crawls %+v", ix.Registry.Generation, ix.Registry.Crawls)
	}
}

// TestJoinRefusesUnorderedPartition proves that the join refuses a
// partition out of digest order, or holding another partition's digest,
// instead of missing originals (issue 20, item 8: the run then exited 0
// with fewer revisits).
func TestJoinRefusesUnorderedPartition(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lines func(lines []string) []string
	}{
		{"out of order", func(l []string) []string { return []string{l[1], l[0]} }},
		{"a digest of another partition", func(l []string) []string {
			return []string{l[0], strings.Replace(l[1], digestOf('A', 3), digestOf('C', 3), 1)}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, work := twoCrawls(t)
			part := filepath.Join(dir, "gen-000002", originalsDir, runName("sha1-A", 1))
			data, err := os.ReadFile(part)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("partition A holds %q", lines)
			}
			// A new file of the same size: not the hard link generation 1
			// shares.
			os.Remove(part)
			if err := os.WriteFile(part, []byte(strings.Join(tt.lines(lines), "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var ix *Index
			if err := noPanic(func() error { ix, err = Open(dir); return err }); err != nil {
				// Refused as it opens: as good.
				return
			}
			mar := originals(t, work, "mar", digestOf('A', 1), digestOf('A', 3), digestOf('C', 5))
			f, err := os.Open(mar)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var out bytes.Buffer
			st, err := ix.Join(context.Background(), f, mar, &out)
			if err == nil {
				t.Errorf("join of a damaged partition: no error, %+v:\n%s", st, out.String())
			}
		})
	}
}

// TestCommitRechecksRequires proves that a commit refuses a crawl whose
// revisits need a crawl no longer committed when the lock is taken (issue
// 20, item 2: a crawl removed while a run joined it).
func TestCommitRechecksRequires(t *testing.T) {
	dir, work := twoCrawls(t)
	if _, err := Commit(dir, Change{Remove: "feb"}); err != nil {
		t.Fatal(err)
	}
	mar := originals(t, work, "mar", digestOf('D', 6))
	for _, need := range []string{"feb", "never"} {
		_, err := Commit(dir, Change{Add: &Crawl{Name: "mar", Location: "/data/mar",
			Requires: []Need{{Crawl: need, Revisits: 3, Files: []FileInfo{{Name: "f.warc.gz", Size: 200}}}}}, Originals: mar})
		if err == nil || !strings.Contains(err.Error(), need) {
			t.Errorf("a crawl needing %s, not committed: %v", need, err)
		}
	}
	// Needing a committed crawl's file as it is not (another size): the
	// file changed since the run read it.
	_, err := Commit(dir, Change{Add: &Crawl{Name: "mar", Location: "/data/mar",
		Requires: []Need{{Crawl: "jan", Revisits: 3, Files: []FileInfo{{Name: "f.warc.gz", Size: 301}}}}}, Originals: mar})
	if err == nil {
		t.Errorf("a crawl needing a file of jan as it is not: committed")
	}
}

// TestNamesAsBytes proves that file names and locations that are not
// UTF-8 are kept as the bytes they are (issue 20, item 8: byte 0xFF was
// recorded as U+FFFD), and that names that are read as they always were.
func TestNamesAsBytes(t *testing.T) {
	for _, name := range []string{"plain.warc.gz", "d/é ü.warc", "a\xff.warc", "\xfe\xff", "quote\".warc", "a\\b.warc", "bad\xc3(utf8.warc"} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			dir, work := filepath.Join(t.TempDir(), "index"), t.TempDir()
			jan := originals(t, work, "jan", digestOf('A', 1))
			loc := "/data/" + name
			if _, err := Commit(dir, Change{Add: &Crawl{Name: "jan", Location: loc, Log: loc + "/rewrite.log"},
				Files: []FileInfo{{Name: name, Size: 7}}, Originals: jan}); err != nil {
				t.Fatal(err)
			}
			ix, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			files, err := ix.Files("jan")
			if err != nil || len(files) != 1 || files[0].Name != name {
				t.Errorf("files %+v (%v), want the name %q", files, err, name)
			}
			if k := ix.Registry.Crawl("jan"); k.Location != loc || k.Log != loc+"/rewrite.log" {
				t.Errorf("location %q, log %q, want %q", k.Location, k.Log, loc)
			}
		})
	}
	// As every index written before names were kept as bytes has them.
	cf, err := unmarshalCrawlFiles([]byte(`{"crawl": "jan", "files": [{"name": "d/é ü.warc", "size": 3, "sha256": "ab", "stamp": "s"}]}`))
	if err != nil || len(cf.Files) != 1 || cf.Files[0] != (FileInfo{Name: "d/é ü.warc", Size: 3, SHA256: "ab", Stamp: "s"}) {
		t.Errorf("a crawl's files as written before: %+v %v", cf, err)
	}
	var r Registry
	err = unmarshalRegistry([]byte(`{"version": 1, "generation": 2, "crawls": [{"name": "jan", "location": "/data/jan", "log": "/w/rewrite.log", "files": 2,
		"requires": [{"crawl": "dec", "revisits": 4, "files": [{"name": "a.warc", "size": 9}]}]}]}`), &r)
	if k := r.Crawl("jan"); err != nil || k == nil || k.Location != "/data/jan" || k.Log != "/w/rewrite.log" || k.Files != 2 ||
		len(k.Requires) != 1 || k.Requires[0].Revisits != 4 || k.Requires[0].Files[0].Name != "a.warc" {
		t.Errorf("a registry as written before: %+v %v", k, err)
	}
	// What prints a crawl (index stats) writes the bytes too.
	data, err := json.Marshal(&Crawl{Name: "jan", Location: "/data/\xff"})
	if err != nil || !strings.Contains(string(data), `"location":{"base64":"L2RhdGEv/w=="}`) {
		t.Errorf("a crawl printed: %s %v", data, err)
	}
}

// writtenBefore makes an index as a warcdedup before CONTENTS and the
// generations' marks wrote it.
func writtenBefore(t *testing.T, dir string) {
	t.Helper()
	gens, _ := filepath.Glob(filepath.Join(dir, "gen-*"))
	for _, g := range gens {
		for _, f := range []string{contentsFile, committedFile} {
			if err := os.Remove(filepath.Join(g, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestIndexWrittenBefore proves that an index written before generations
// had CONTENTS and marks is read as it is, verifies, takes the next
// commit (which lists and marks its generation), and that with its CURRENT
// missing it is refused as damaged, not taken for an empty index.
func TestIndexWrittenBefore(t *testing.T) {
	dir, work := twoCrawls(t)
	writtenBefore(t, dir)
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	if _, err := ix.VerifyIndex(func(p string) { problems = append(problems, p) }); err != nil || len(problems) > 0 {
		t.Errorf("verify: %v %v", err, problems)
	}
	mar := originals(t, work, "mar", digestOf('D', 6))
	if ix, err = Commit(dir, Change{Add: &Crawl{Name: "mar", Location: "/data/mar"}, Originals: mar}); err != nil {
		t.Fatal(err)
	}
	if ix.contents == nil || !marked(ix.gen) || !marked(filepath.Join(dir, "gen-000002")) {
		t.Errorf("the commit after: CONTENTS %v, marks of generations 3 and 2: %v %v", ix.contents != nil, marked(ix.gen), marked(filepath.Join(dir, "gen-000002")))
	}
	if _, err := ix.VerifyIndex(func(p string) { problems = append(problems, p) }); err != nil || len(problems) > 0 {
		t.Errorf("verify after the commit: %v %v", err, problems)
	}

	dir, _ = twoCrawls(t)
	writtenBefore(t, dir)
	os.Remove(filepath.Join(dir, currentFile))
	var damage *DamageError
	if _, err := Open(dir); !errors.As(err, &damage) {
		t.Errorf("an index written before, CURRENT missing: %v", err)
	}
}

// TestRegistrations proves what a run's registration holds: a second run
// of the crawl is refused; a crawl a run joined cannot be removed while
// the run is in progress (even by force), nor after it was killed once it
// rewrote files (unless by force), but can be once it was killed before
// it rewrote any; a run joining what a removal rewrites is refused; a
// crawl that changed between a join and its hold has the join done again.
func TestRegistrations(t *testing.T) {
	type state struct {
		dir, work, log string
		run            *Registration
	}
	// setup: jan and feb committed, a run of mar that joined jan.
	setup := func(t *testing.T) *state {
		dir, work := twoCrawls(t)
		s := &state{dir: dir, work: work, log: filepath.Join(work, "rewrite.log")}
		ix, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if s.run, err = RegisterRun(dir, "mar"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.run.Release() })
		if err := s.run.Hold(ix, []string{"jan"}, work, []string{s.log}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	remove := func(s *state, force bool) error {
		_, err := Commit(s.dir, Change{Remove: "jan", Force: force})
		return err
	}
	for _, tt := range []struct {
		name string
		do   func(t *testing.T, s *state) error
		want string // in the error; "" for none
	}{
		{"a second run of the crawl", func(t *testing.T, s *state) error {
			_, err := RegisterRun(s.dir, "mar")
			return err
		}, "another run of crawl mar is in progress"},
		{"removal while the run is in progress", func(t *testing.T, s *state) error { return remove(s, false) }, "in progress"},
		{"forced removal while the run is in progress", func(t *testing.T, s *state) error { return remove(s, true) }, "in progress"},
		{"removal of a crawl the run did not join", func(t *testing.T, s *state) error {
			_, err := Commit(s.dir, Change{Remove: "feb"})
			return err
		}, ""},
		{"removal after the run was killed before it rewrote", func(t *testing.T, s *state) error {
			s.run.Release()
			// By force: feb's revisits need jan.
			if err := remove(s, true); err != nil {
				return err
			}
			// Its next run must join again.
			r, err := RegisterRun(s.dir, "mar")
			if err != nil {
				return err
			}
			defer r.Release()
			if err := r.Resume(); !errors.Is(err, ErrNotJoined) {
				return fmt.Errorf("resume: %v, want not joined", err)
			}
			return nil
		}, ""},
		{"removal after the run was killed once it rewrote", func(t *testing.T, s *state) error {
			s.run.Release()
			os.WriteFile(s.log, []byte("# file a\n"), 0o644)
			return remove(s, false)
		}, "interrupted run of crawl mar"},
		{"forced removal after the run was killed once it rewrote", func(t *testing.T, s *state) error {
			s.run.Release()
			os.WriteFile(s.log, []byte("# file a\n"), 0o644)
			if err := remove(s, true); err != nil {
				return err
			}
			r, err := RegisterRun(s.dir, "mar")
			if err != nil {
				return err
			}
			defer r.Release()
			var moved *MovedError
			if err := r.Resume(); !errors.As(err, &moved) || !moved.Removed || !moved.Rewrote {
				return fmt.Errorf("resume: %v, want jan removed after the run rewrote", err)
			}
			return nil
		}, ""},
		{"resume of a killed run", func(t *testing.T, s *state) error {
			s.run.Release()
			r, err := RegisterRun(s.dir, "mar")
			if err != nil {
				return err
			}
			defer r.Release()
			if err := r.Resume(); err != nil {
				return err
			}
			return remove(s, false)
		}, "in progress"},
		{"a run's hold of what a removal rewrites", func(t *testing.T, s *state) error {
			rm, err := RegisterRemove(s.dir, "feb", []string{"apr"})
			if err != nil {
				return err
			}
			defer rm.Release()
			ix, _ := Open(s.dir)
			r, err := RegisterRun(s.dir, "may")
			if err != nil {
				return err
			}
			defer r.Release()
			return r.Hold(ix, []string{"feb"}, s.work, nil)
		}, "index remove of crawl feb is in progress"},
		{"a run's hold of what an interrupted removal rewrote", func(t *testing.T, s *state) error {
			rm, err := RegisterRemove(s.dir, "feb", nil)
			if err != nil {
				return err
			}
			rm.Release()
			ix, _ := Open(s.dir)
			r, err := RegisterRun(s.dir, "may")
			if err != nil {
				return err
			}
			defer r.Release()
			return r.Hold(ix, []string{"feb"}, s.work, nil)
		}, "was interrupted"},
		{"a removal while one of another crawl was interrupted", func(t *testing.T, s *state) error {
			rm, err := RegisterRemove(s.dir, "feb", nil)
			if err != nil {
				return err
			}
			rm.Release()
			_, err = RegisterRemove(s.dir, "mar", nil)
			return err
		}, "was interrupted"},
		{"a hold of a crawl that changed since the join read it", func(t *testing.T, s *state) error {
			ix, _ := Open(s.dir)
			if _, err := Commit(s.dir, Change{Remove: "feb"}); err != nil {
				return err
			}
			r, err := RegisterRun(s.dir, "may")
			if err != nil {
				return err
			}
			defer r.Release()
			var moved *MovedError
			if err := r.Hold(ix, []string{"feb"}, s.work, nil); !errors.As(err, &moved) || !moved.Removed {
				return fmt.Errorf("hold: %v, want feb removed", err)
			}
			return nil
		}, ""},
		{"a run where the index's lock is a directory", func(t *testing.T, s *state) error {
			os.Remove(filepath.Join(s.dir, lockFile))
			os.Mkdir(filepath.Join(s.dir, lockFile), 0o755)
			_, err := RegisterRun(s.dir, "may")
			return err
		}, "is a directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(t, setup(t))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("%v, want an error saying %q", err, tt.want)
			case err != nil:
				t.Logf("refused: %v", err)
			}
		})
	}
}

// TestCompactionRefusesDamagedRun proves that a compaction reading a run
// that is not what its commit wrote stops, naming it, and leaves the index
// as it was: a byte changed (its SHA-256 differs from CONTENTS'), two
// lines swapped (out of order), a line of another partition's digest, a
// line of five fields.
func TestCompactionRefusesDamagedRun(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		damage     func(lines []string) []string
	}{
		{"a byte changed", "SHA-256", func(l []string) []string {
			l[0] = strings.Replace(l[0], "example.com", "exbmple.com", 1)
			return l
		}},
		{"lines swapped", "out of order", func(l []string) []string { l[0], l[1] = l[1], l[0]; return l }},
		{"another partition's digest", "does not belong", func(l []string) []string {
			l[1] = strings.Replace(l[1], "sha1:A", "sha1:C", 1)
			return l
		}},
		{"five fields", "6 fields", func(l []string) []string {
			l[1] = strings.Replace(l[1], " 2024-01-01T00:00:00Z", "_2024-01-01T00:00:00Z", 1) // the same size
			return l
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Partition A: jan's run (A1, A3) and mar's (A7): merged.
			dir, work := twoCrawls(t)
			if _, err := CommitWith(dir, Change{Add: &Crawl{Name: "mar", Location: "/data/mar"}, Originals: originals(t, work, "mar", digestOf('A', 7))},
				CommitOptions{NoCompact: true}); err != nil {
				t.Fatal(err)
			}
			part := filepath.Join(dir, "gen-000003", originalsDir, runName("sha1-A", 1))
			data, err := os.ReadFile(part)
			if err != nil {
				t.Fatal(err)
			}
			lines := tt.damage(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"))
			os.Remove(part) // a hard link generation 1 shares
			if err := os.WriteFile(part, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err = Compact(dir, CompactOptions{Full: true})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "sha1-A") {
				t.Errorf("compaction of a damaged run: %v, want an error saying %q", err, tt.want)
			}
			if cur, _ := os.ReadFile(filepath.Join(dir, currentFile)); string(cur) != "gen-000003\n" {
				t.Errorf("CURRENT %q after a refused compaction", cur)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".tmp") || e.Name() == "gen-000004" {
					t.Errorf("left after a refused compaction: %s", e.Name())
				}
			}
		})
	}
}

// TestJoinRefusesDamagedMatch proves that a line the join writes is
// checked whole: a length that is no number stops it.
func TestJoinRefusesDamagedMatch(t *testing.T) {
	dir, work := twoCrawls(t)
	part := filepath.Join(dir, "gen-000002", originalsDir, runName("sha1-C", 2))
	data, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(part)
	f := strings.Fields(string(data))
	f[2] = "1x0" // the length
	if err := os.WriteFile(part, []byte(strings.Join(f, " ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	mar := originals(t, work, "mar", digestOf('C', 5))
	in, err := os.Open(mar)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	if _, err := ix.Join(context.Background(), in, mar, &out); err == nil || !strings.Contains(err.Error(), "length") {
		t.Errorf("join of a damaged line: %v\n%s", err, out.String())
	}
}
