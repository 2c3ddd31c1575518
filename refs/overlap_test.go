package refs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"warcdedup/internal/rewritetest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
)

// TestOverlapReadsOriginalsOfFileBeingReplaced holds the first file's
// replacement (its Replaced, once its new version is in place and
// before the run logs it) until a later file's walk has written a
// revisit, with one walk at a time (Jobs 1): the later files'
// duplicates, whose originals are in the first file, are examined
// while that file is renamed and its entries only journaled. It proves
// that every revisit still resolves to its original (verify finds no
// violation), that the log has each file's entries as one block in
// file order, and that a second run finds nothing left to do.
func TestOverlapReadsOriginalsOfFileBeingReplaced(t *testing.T) {
	c := generate(t, gen.Config{Files: 4, Records: 120, DupRate: 0.5, Seed: 91, MeanPayload: 2 << 10,
		Formats: []gen.Format{gen.WARC10, gen.WARC11Gz}})
	first := c.dups[0].File
	originalsThere := 0
	for _, l := range c.dups {
		if l.File != first {
			for _, o := range c.all {
				if o.Copy == 1 && o.Digest == l.Digest && o.File == first {
					originalsThere++
					break
				}
			}
		}
	}
	if originalsThere == 0 {
		t.Fatalf("no duplicate of another file has its original in %s: the test proves nothing", first)
	}
	dir := t.TempDir()
	rewritetest.CopyDir(t, c.dir, dir)
	var prog Progress
	var once sync.Once
	overlapped := make(chan bool, 1)
	rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 1, Progress: &prog,
		Replaced: func(rp rewritelog.Replacement) {
			if manifest.EscapeFile(rp.Name) != first {
				return
			}
			once.Do(func() {
				own := int64(len(rp.Entries))
				for deadline := time.Now().Add(20 * time.Second); prog.Revisits.Load() <= own && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				overlapped <- prog.Revisits.Load() > own
			})
		}}
	o := mustRun(t, rw, c.lines)
	select {
	case ok := <-overlapped:
		if !ok {
			t.Fatalf("no later file's revisit was written while %s was being put in place: the test proves nothing", first)
		}
	default:
		t.Fatalf("%s was not replaced: the test proves nothing", first)
	}
	st := verifyRewrite(t, withoutRevisits(t, rewritetest.WarcsumDir(t, c.dir)), rewritetest.WarcsumDir(t, dir))
	if st.Revisits != o.stats.Revisits {
		t.Errorf("verify counts %d revisits that resolve, the run wrote %d", st.Revisits, o.stats.Revisits)
	}
	var order []string
	for _, f := range o.files {
		order = append(order, f.File)
	}
	if !slices.IsSorted(order) || len(slices.Compact(slices.Clone(order))) != len(order) {
		t.Errorf("the log's files %v: not one block each in file order", order)
	}
	if tf := rewritetest.TempFiles(t, dir); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
	again := mustRunLogged(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 1}, c.lines, c.lines, o.tl)
	if again.stats.Revisits != 0 || again.stats.Rewritten != 0 {
		t.Errorf("a second run: %+v, want nothing rewritten", again.stats)
	}
}

// TestOverlapEarlierFileFailsAfterLaterRenamed makes the replacement of
// a.warc fail (the file changes under the run: another writer) only
// once b.warc, walked after it with one walk at a time (Jobs 1), was
// checked and renamed: a's replacement waits on its lock, which the
// test holds until b's Replaced. It proves that a is refused and left
// as the writer left it, with no temporary file, that b's replacement
// is logged, as one block, and a's not at all (the log's entries must
// be those of the files replaced, whatever order their replacements
// finished in), and that a run again on b finds nothing to do.
func TestOverlapEarlierFileFailsAfterLaterRenamed(t *testing.T) {
	dir := t.TempDir()
	bData, bLines := dupResponses("b.warc")
	warctest.WriteFile(t, dir, "b.warc", bData)
	// a.warc's one response is a duplicate of b.warc's first: a reads
	// no original of its own (no lock of its file taken by its walk).
	body := strings.Repeat("the same payload, fetched twice. ", 60)
	aRec := warctest.Response("http://example.com/a", "2024-01-03T00:00:00Z", body)
	warctest.WriteFile(t, dir, "a.warc", []byte(aRec))
	aDup := bLines[1]
	aDup.File, aDup.Offset, aDup.Length, aDup.URI, aDup.Date, aDup.Copy = "a.warc", 0, int64(len(aRec)), "http://example.com/a", "2024-01-03T00:00:00Z", 3
	aDup.RefURI, aDup.RefDate = bLines[0].URI, bLines[0].Date
	lines := append([]manifest.Line{aDup}, bLines...)
	rewritetest.SortByFile(lines)
	orig := rewritetest.Originals(t, lines, dir)
	held := orig.Lock("a.warc")
	held.Lock()
	var once sync.Once
	unlock := func() { once.Do(held.Unlock) }
	defer unlock()
	renamedFirst := false
	rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 1, Originals: orig,
		Replaced: func(rp rewritelog.Replacement) {
			if rp.Name != "b.warc" {
				return
			}
			renamedFirst = true
			f, err := os.OpenFile(filepath.Join(dir, "a.warc"), os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				_, err = f.WriteString("written by another\n")
				f.Close()
			}
			if err != nil {
				t.Error(err)
			}
			unlock()
		}}
	o := run(t, rw, lines)
	if o.err != nil {
		t.Fatalf("Run: %v", o.err)
	}
	if !renamedFirst {
		t.Fatal("b.warc was not replaced: the test proves nothing")
	}
	if len(o.refused) != 1 || o.refusedFor("a.warc") == nil {
		t.Fatalf("refusals %v, want a.warc's", o.refused)
	}
	if got := string(rewritetest.Snapshot(t, dir)["a.warc"]); got != aRec+"written by another\n" {
		t.Errorf("a.warc is not as the other writer left it (%d bytes)", len(got))
	}
	if len(o.files) != 1 || o.files[0].File != "b.warc" || len(o.log) != 1 || o.log[0].File != "b.warc" {
		t.Errorf("the log's files %+v, entries %+v: want b.warc's one block alone", o.files, o.log)
	}
	if tf := rewritetest.TempFiles(t, dir); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
	again := mustRunLogged(t, Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 1}, bLines, bLines, o.tl)
	if again.stats.Revisits != 0 || again.stats.AlreadyRevisit != 1 {
		t.Errorf("b.warc run again: %+v, want its revisit found done", again.stats)
	}
}

// TestOverlapCancelledThenRunAgain cancels the run, with one walk at a
// time (Jobs 1) and its log a file (with its journal), once the first
// file is in place and not yet logged and a later file's walk has
// written a revisit: the later file is being walked or checked while
// the first is put in place. It proves that the cancelled run leaves
// every file its old or its new version and no temporary file, and
// that a run again with the same log ends as one run would: the same
// bytes, each file logged once, no journal left.
func TestOverlapCancelledThenRunAgain(t *testing.T) {
	c := generate(t, gen.Config{Files: 4, Records: 120, DupRate: 0.5, Seed: 92, MeanPayload: 2 << 10,
		Formats: []gen.Format{gen.WARC10, gen.WARC11Gz}})
	ref := t.TempDir()
	rewritetest.CopyDir(t, c.dir, ref)
	mustRun(t, Rewriter{Roots: []string{ref}, InPlace: true, Jobs: 1}, c.lines)
	before, want := rewritetest.Snapshot(t, c.dir), rewritetest.Snapshot(t, ref)
	var rewritten []string
	for name := range want {
		if !bytes.Equal(want[name], before[name]) {
			rewritten = append(rewritten, name)
		}
	}
	if len(rewritten) < 2 {
		t.Fatalf("%d files rewritten: the test proves nothing", len(rewritten))
	}
	first := c.dups[0].File
	// The cancel races the later files' walks: when they all end before
	// it, the run has nothing left to stop and rightly ends done (nil).
	// Such an attempt proves nothing; the next one starts on a fresh copy.
	var dir, logPath string
	var runOnce func(ctx context.Context, replaced func(rewritelog.Replacement), prog *Progress) error
	var err error
	for attempt := 1; attempt == 1 || err == nil && attempt <= 20; attempt++ {
		dir = t.TempDir()
		rewritetest.CopyDir(t, c.dir, dir)
		logPath = filepath.Join(t.TempDir(), "rewrite.log")
		runOnce = overlapRunner(t, c, dir, logPath)
		var overlapped bool
		overlapped, err = cancelWhileFirstPutInPlace(runOnce, first)
		if !overlapped {
			t.Fatalf("no later file's revisit was written while %s was being put in place: the test proves nothing", first)
		}
		if err == nil {
			rewritetest.SameFiles(t, "a run done before its cancel", rewritetest.Snapshot(t, dir), want)
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled run: %v, want it cancelled", err)
	}
	got := rewritetest.Snapshot(t, dir)
	for name, b := range got {
		if !bytes.Equal(b, before[name]) && !bytes.Equal(b, want[name]) {
			t.Errorf("after the cancel, %s is neither its old nor its new version", name)
		}
	}
	if !bytes.Equal(got[first], want[first]) {
		t.Errorf("%s, in place before the cancel, is not its new version", first)
	}
	if tf := rewritetest.TempFiles(t, dir); len(tf) > 0 {
		t.Errorf("temporary files left by the cancelled run: %v", tf)
	}
	if err := runOnce(context.Background(), nil, nil); err != nil {
		t.Fatalf("the run again: %v", err)
	}
	rewritetest.SameFiles(t, "after the run again", rewritetest.Snapshot(t, dir), want)
	checkLogOnce(t, logPath, rewritten)
}

// overlapRunner returns a run of c's duplicates in place in dir, one walk
// at a time, logging to the file at logPath.
func overlapRunner(t *testing.T, c *coll, dir, logPath string) func(context.Context, func(rewritelog.Replacement), *Progress) error {
	return func(ctx context.Context, replaced func(rewritelog.Replacement), prog *Progress) error {
		t.Helper()
		log, err := rewritelog.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		rw := Rewriter{Roots: []string{dir}, InPlace: true, Jobs: 1, Progress: prog, Replaced: replaced,
			Originals: rewritetest.Originals(t, c.lines, dir),
			Refused:   func(err error) { t.Errorf("refused: %v", err) }}
		_, err = rw.Run(ctx, manifest.NewReader(bytes.NewReader(rewritetest.ManifestText(c.lines)), "test.manifest"), log)
		if cerr := log.Close(); cerr != nil && err == nil {
			err = cerr
		}
		return err
	}
}

// cancelWhileFirstPutInPlace runs once and cancels it from the first
// file's Replaced (in place, not yet logged), once a later file's walk
// has written a revisit. overlapped says whether one had.
func cancelWhileFirstPutInPlace(run func(context.Context, func(rewritelog.Replacement), *Progress) error, first string) (overlapped bool, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var prog Progress
	err = run(ctx, func(rp rewritelog.Replacement) {
		if manifest.EscapeFile(rp.Name) != first {
			return
		}
		own := int64(len(rp.Entries))
		for deadline := time.Now().Add(20 * time.Second); prog.Revisits.Load() <= own && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		overlapped = prog.Revisits.Load() > own
		cancel()
	}, &prog)
	return overlapped, err
}
