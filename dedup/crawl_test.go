package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
	"warcdedup/manifest"
	"warcdedup/stage"
)

// pauseWriter is a display's writer that stops the job writing to it at
// the first line holding at: reached is closed then, and the write (with
// the job) waits until release is closed.
type pauseWriter struct {
	at               string
	once             sync.Once
	reached, release chan struct{}
}

func newPause(at string) *pauseWriter {
	return &pauseWriter{at: at, reached: make(chan struct{}), release: make(chan struct{})}
}

func (p *pauseWriter) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(p.at)) {
		p.once.Do(func() {
			close(p.reached)
			<-p.release
		})
	}
	return len(b), nil
}

// pausedRun is a job running in the background, stopped at a stage.
type pausedRun struct {
	pause *pauseWriter
	done  chan struct{}
	res   *stage.Result
	err   error
}

// startPaused starts the job and returns once it reached the line at
// (the job is then stopped there), or fails the test if it ended before.
func startPaused(t *testing.T, opt Options, at string) *pausedRun {
	t.Helper()
	p := &pausedRun{pause: newPause(at), done: make(chan struct{})}
	opt.Display = progress.NewPlain(p.pause, "warcdedup")
	go func() {
		defer close(p.done)
		p.res, p.err = Run(context.Background(), opt)
	}()
	select {
	case <-p.pause.reached:
	case <-p.done:
		t.Fatalf("the job ended before %q: %v", at, p.err)
	}
	return p
}

// finish lets the job go on and waits for its end.
func (p *pausedRun) finish() (*stage.Result, error) {
	close(p.pause.release)
	<-p.done
	return p.res, p.err
}

// indexedCrawls writes the monthly crawls under top/crawls and commits
// the crawls named to an index top/index, in that order.
func indexedCrawls(t *testing.T, top string, commit ...string) (crawls, index string) {
	t.Helper()
	crawls, index = filepath.Join(top, "crawls"), filepath.Join(top, "index")
	monthly(t, crawls)
	for _, name := range commit {
		r, err := Run(context.Background(), Options{Collections: []string{filepath.Join(crawls, name)}, Index: index, Jobs: 2})
		if err != nil || r.Report.Exit != 0 {
			t.Fatalf("%s: %v %v", name, err, r.Report.ExitReason)
		}
	}
	return crawls, index
}

// currentGeneration is the directory of the index's committed generation,
// as CURRENT names it.
func currentGeneration(t *testing.T, index string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(index, "CURRENT"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(index, strings.TrimSpace(string(data)))
}

// editIndexRegistry changes the committed generation's registry as JSON.
func editIndexRegistry(t *testing.T, index string, edit func(m map[string]any)) {
	t.Helper()
	name := filepath.Join(currentGeneration(t, index), "registry.json")
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
	os.Remove(name) // a hard link of other generations, maybe
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// largestPartition is the committed generation's partition with most
// lines.
func largestPartition(t *testing.T, index string) string {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(currentGeneration(t, index), "originals", "*.manifest"))
	best, most := "", -1
	for _, p := range parts {
		if n := len(readLines(t, p)); n > most {
			best, most = p, n
		}
	}
	return best
}

// TestRunIndexChecksFirst proves that a run with an index finds what would
// stop its commit, or what would make it lose the index's crawls, when it
// starts, before it rewrites anything: the crawl's files stay as they were
// and the index keeps its generation (issue 20, item 6: the files were
// rewritten, then the commit refused, every rerun exited 2 and undo could
// not revert them; item 8: with CURRENT missing or rolled back the commit
// dropped earlier crawls, a partition out of order gave exit 0 with fewer
// revisits, null in the registry panicked).
func TestRunIndexChecksFirst(t *testing.T) {
	base := t.TempDir()
	crawls, index := indexedCrawls(t, base, "crawl-0", "crawl-2")
	for _, tt := range []struct {
		name  string
		crawl string // the --crawl name, "" for the directory's
		// damage changes the index (its copy), and returns what to do
		// once the refused run is checked, if anything.
		damage func(t *testing.T, index, crawl string) func()
	}{
		{name: "a 255-byte crawl name", crawl: strings.Repeat("c", 255)},
		{name: "another run of the same crawl name", damage: func(t *testing.T, index, crawl string) func() {
			other := filepath.Join(t.TempDir(), "crawl-1")
			copyTree(t, filepath.Join(crawls, "crawl-1"), other)
			p := startPaused(t, Options{Collections: []string{other}, Index: index, Crawl: "crawl-1", WorkDir: t.TempDir(), Jobs: 2}, "verify: started")
			return func() {
				if res, err := p.finish(); err != nil || res.Report.Exit != 0 {
					t.Errorf("the other run, let go on: %v", err)
				}
			}
		}},
		{name: "crawls/crawl-0.json missing", damage: func(t *testing.T, index, crawl string) func() {
			os.Remove(filepath.Join(currentGeneration(t, index), "crawls", "crawl-0.json"))
			return nil
		}},
		{name: "crawls/crawl-0.json garbled", damage: func(t *testing.T, index, crawl string) func() {
			name := filepath.Join(currentGeneration(t, index), "crawls", "crawl-0.json")
			data, _ := os.ReadFile(name)
			os.Remove(name)
			os.WriteFile(name, data[:len(data)/2], 0o644)
			return nil
		}},
		{name: "lock is a directory", damage: func(t *testing.T, index, crawl string) func() {
			os.Remove(filepath.Join(index, "lock"))
			os.Mkdir(filepath.Join(index, "lock"), 0o755)
			return nil
		}},
		{name: "../x in the registry", damage: func(t *testing.T, index, crawl string) func() {
			editIndexRegistry(t, index, func(m map[string]any) {
				m["crawls"] = append(m["crawls"].([]any), map[string]any{"name": "../x", "location": "/nowhere"})
			})
			return nil
		}},
		{name: "CURRENT missing", damage: func(t *testing.T, index, crawl string) func() {
			os.Remove(filepath.Join(index, "CURRENT"))
			return nil
		}},
		{name: "CURRENT rolled back", damage: func(t *testing.T, index, crawl string) func() {
			os.WriteFile(filepath.Join(index, "CURRENT"), []byte("gen-000001\n"), 0o644)
			return nil
		}},
		{name: "null in the registry's crawls", damage: func(t *testing.T, index, crawl string) func() {
			editIndexRegistry(t, index, func(m map[string]any) { m["crawls"] = append([]any{nil}, m["crawls"].([]any)...) })
			return nil
		}},
		{name: "a partition missing", damage: func(t *testing.T, index, crawl string) func() {
			os.Remove(largestPartition(t, index))
			return nil
		}},
		{name: "a partition out of order", damage: func(t *testing.T, index, crawl string) func() {
			p := largestPartition(t, index)
			lines := readLines(t, p)
			// The first two lines of other digests change places.
			for i := 1; i < len(lines); i++ {
				a, _ := manifest.Parse([]byte(lines[0]))
				b, _ := manifest.Parse([]byte(lines[i]))
				if a.Digest != b.Digest {
					lines[0], lines[i] = lines[i], lines[0]
					break
				}
			}
			os.Remove(p)
			os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			ix, crawl := filepath.Join(top, "index"), filepath.Join(top, "crawl-1")
			copyTree(t, index, ix)
			copyTree(t, filepath.Join(crawls, "crawl-1"), crawl)
			os.RemoveAll(filepath.Join(ix, "work")) // the committed crawls' jobs
			var after func()
			if tt.damage != nil {
				after = tt.damage(t, ix, crawl)
			}
			current, _ := os.ReadFile(filepath.Join(ix, "CURRENT"))
			before := hashTree(t, crawl)
			var res *stage.Result
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
					}
				}()
				res, err = Run(context.Background(), Options{Collections: []string{crawl}, Index: ix, Crawl: tt.crawl, Jobs: 2})
				return err
			}()
			if err == nil {
				t.Errorf("the run was not refused: exit %d %v", res.Report.Exit, res.Report.ExitReason)
			} else if strings.HasPrefix(err.Error(), "panic") {
				t.Errorf("the run: %v", err)
			} else {
				t.Logf("refused: %v", err)
			}
			sameTree(t, "the crawl after the refused run", hashTree(t, crawl), before)
			if now, _ := os.ReadFile(filepath.Join(ix, "CURRENT")); !bytes.Equal(now, current) {
				t.Errorf("CURRENT moved from %q to %q", current, now)
			}
			if after != nil {
				after()
			}
		})
	}
}

// TestRemoveWhileRunJoined proves that a crawl a run in progress joined
// cannot be removed (issue 20, item 2: a run of d1 between its join and
// its commit, and index remove d0: both exited 0, d0's files "may be
// deleted", d1 committed needing d0): the removal is refused, with or
// without --force, and the run commits, needing the crawl, which stays.
func TestRemoveWhileRunJoined(t *testing.T) {
	crawls, index := indexedCrawls(t, t.TempDir(), "crawl-0")
	p := startPaused(t, Options{Collections: []string{filepath.Join(crawls, "crawl-1")}, Index: index, Jobs: 2}, "verify: started")
	for _, force := range []bool{false, true} {
		res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Force: force})
		if err == nil || res != nil && res.Removed {
			t.Errorf("remove crawl-0 (force %v) while a run joined it: %v %+v", force, err, res)
		} else {
			t.Logf("refused: %v", err)
		}
	}
	res, err := p.finish()
	if err != nil || res.Report.Exit != 0 {
		t.Fatalf("the run, let go on: %v", err)
	}
	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Registry.Crawl("crawl-0") == nil || ix.Registry.Crawl("crawl-1") == nil || len(ix.Registry.Crawl("crawl-1").Requires) == 0 {
		t.Errorf("crawls %+v", ix.Registry.Crawls)
	}
	var problems []string
	if _, err := ix.Verify(false, func(p string) { problems = append(problems, p) }); err != nil || len(problems) > 0 {
		t.Errorf("verify: %v %v", err, problems)
	}
	// Once it is committed, the removal is refused as any crawl others
	// need, and --restore works.
	if res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Restore: true, Jobs: 2}); err != nil || !res.Removed {
		t.Errorf("remove --restore after the run: %v %+v", err, res)
	}
}

// TestCrawlNamesAsBytes proves that a crawl's file names that are not
// UTF-8 are committed as they are (issue 20, item 8: byte 0xFF became
// U+FFFD, after which verify --deep failed for ever and a rerun of the
// unchanged crawl was refused).
func TestCrawlNamesAsBytes(t *testing.T) {
	top := t.TempDir()
	crawls, index := filepath.Join(top, "crawls"), filepath.Join(top, "index")
	monthly(t, crawls)
	for i, b := range []string{"\xff", "\xfe\xfd"} {
		dir := filepath.Join(crawls, fmt.Sprintf("crawl-%d", i))
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(dir, b+e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Run(context.Background(), Options{Collections: []string{dir}, Index: index, Jobs: 2})
		if err != nil || r.Report.Exit != 0 {
			t.Fatalf("crawl-%d: %v", i, err)
		}
	}
	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	if _, err := ix.Verify(true, func(p string) { problems = append(problems, p) }); err != nil || len(problems) > 0 {
		t.Errorf("verify --deep: %v\n%s", err, strings.Join(problems, "\n"))
	}
	files, _ := ix.Files("crawl-1")
	if len(files) != 1 || !strings.HasPrefix(files[0].Name, "\xfe\xfd") {
		t.Errorf("crawl-1's files %#v", files)
	}
	if k := ix.Registry.Crawl("crawl-1"); k == nil || len(k.Requires) != 1 || !slices.ContainsFunc(k.Requires[0].Files, func(f crawlindex.FileInfo) bool { return strings.HasPrefix(f.Name, "\xff") }) {
		t.Errorf("crawl-1 requires %+v", k)
	}
	start := time.Now()
	r, err := Run(context.Background(), Options{Collections: []string{filepath.Join(crawls, "crawl-1")}, Index: index, Jobs: 2})
	if err != nil || !r.NothingToDo {
		t.Errorf("a rerun of the unchanged crawl: %v (after %v)", err, time.Since(start))
	}
}
