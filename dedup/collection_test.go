package dedup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// twoCaptures is a WARC file holding the same payload twice: one
// duplicate, whose revisit is smaller than the record.
func twoCaptures(uri string) []byte {
	body := strings.Repeat("logo ", 2000)
	return []byte(warctest.Response(uri, "2024-01-01T00:00:00Z", body) + warctest.Response(uri, "2024-01-02T00:00:00Z", body))
}

// run runs the job on dir with the work directory wd and fails the test
// if it stopped.
func runOn(t *testing.T, dir, wd string) *stage.Result {
	t.Helper()
	r, err := Run(context.Background(), Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r
}

// TestBackslashInName proves that a file whose name holds a backslash (an
// ordinary byte of a POSIX file name) is deduplicated like any other,
// not refused as a name that leaves its root.
func TestBackslashInName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	warctest.WriteFile(t, dir, `crawl\2024.warc`, twoCaptures("http://example.com/logo.png"))
	r := runOn(t, dir, filepath.Join(t.TempDir(), "work"))
	if tot := r.Report.Totals; r.Report.Exit != 0 || tot.RevisitsWritten != 1 || tot.FilesRefused != 0 {
		t.Fatalf("exit %d %v; %d revisits written, %d files refused", r.Report.Exit, r.Report.ExitReason, tot.RevisitsWritten, tot.FilesRefused)
	}
	if _, err := os.Stat(filepath.Join(dir, `crawl\2024.warc`)); err != nil {
		t.Fatal(err)
	}
}

// TestOpenFileSkipped proves that a file a crawler is still writing
// (Heritrix's x.warc.gz.open) is never read as part of the collection:
// it is left as it is, counted, and named in the run log.
func TestOpenFileSkipped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coll")
	warctest.WriteFile(t, dir, "a.warc", twoCaptures("http://example.com/logo.png"))
	open := warctest.WriteFile(t, dir, "b.warc.gz.open", warctest.Gzip(string(twoCaptures("http://example.com/b.png"))))
	before, _ := os.ReadFile(open)
	wd := filepath.Join(t.TempDir(), "work")
	r := runOn(t, dir, wd)
	if tot := r.Report.Totals; r.Report.Exit != 0 || tot.Files != 1 || tot.RevisitsWritten != 1 || tot.FilesInProgress != 1 {
		t.Errorf("exit %d %v; %d files, %d in progress, %d revisits written", r.Report.Exit, r.Report.ExitReason, tot.Files, tot.FilesInProgress, tot.RevisitsWritten)
	}
	if after, _ := os.ReadFile(open); string(after) != string(before) {
		t.Errorf("%s changed", open)
	}
	log, _ := os.ReadFile(filepath.Join(wd, workdir.RunLog))
	if !strings.Contains(string(log), open+": skipped: still being written") {
		t.Errorf("run.log does not name %s:\n%s", open, log)
	}
}

// nobody is the user the permission tests run warcdedup as when the test
// runs as root, whom no file mode stops.
const nobody = 65534

// unprivileged makes cmd run as a user whom file modes apply to: as it is
// when the test is not root, else as nobody, to whom the paths in own are
// given (the directories above everything it runs are opened to all).
func unprivileged(t *testing.T, cmd *exec.Cmd, own ...string) {
	t.Helper()
	if os.Getuid() != 0 {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	for _, p := range own {
		if err := filepath.Walk(p, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, nobody, nobody)
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The test's temporary directories are the test user's alone: let
	// nobody through them to what it runs and owns.
	for _, p := range append(own, binPath) {
		for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err == nil && fi.Mode().Perm()&0o001 == 0 {
				os.Chmod(d, fi.Mode().Perm()|0o011)
			}
		}
	}
}

// runCommand runs warcdedup with args, as unprivileged says, and returns
// its exit status and output.
func runCommand(t *testing.T, own []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	unprivileged(t, cmd, own...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("warcdedup %s: %v", strings.Join(args, " "), err)
	}
	return 0, string(out)
}

// TestUnreadableFileNamedOnce proves that a file that cannot be read is
// named once among the reasons for the exit status (the hash again stage
// reported it a second time).
func TestUnreadableFileNamedOnce(t *testing.T) {
	tmp := t.TempDir()
	dir, wd := filepath.Join(tmp, "coll"), filepath.Join(tmp, "work")
	warctest.WriteFile(t, dir, "a.warc", twoCaptures("http://example.com/logo.png"))
	locked := warctest.WriteFile(t, dir, "b.warc", twoCaptures("http://example.com/b.png"))
	os.Mkdir(wd, 0o755)
	cmd := []string{dir, wd}
	if err := os.Chmod(locked, 0); err != nil { // and nobody's, as root
		t.Fatal(err)
	}
	status, out := runCommand(t, cmd, "run", "-q", "-j", "2", "--work-dir", wd, dir)
	_, reasons, _ := strings.Cut(out, "exit status 1:")
	if status != 1 || strings.Count(reasons, locked) != 1 || strings.Count(out, locked) != 2 {
		t.Errorf("exit status %d, want 1, naming %s once as it is found and once among the reasons:\n%s", status, locked, out)
	}
}

// TestReadOnlyCollection proves that a collection that cannot be written
// is found before anything is hashed: exit status 2, naming the
// directory and what writes nothing (assess); nothing hashed.
func TestReadOnlyCollection(t *testing.T) {
	tmp := t.TempDir()
	dir, wd := filepath.Join(tmp, "coll"), filepath.Join(tmp, "work")
	warctest.WriteFile(t, dir, "a.warc", twoCaptures("http://example.com/logo.png"))
	os.Mkdir(wd, 0o755)
	// Not writable by the user warcdedup runs as (as root: nobody, to
	// whom the directory does not belong).
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	status, out := runCommand(t, []string{wd}, "run", "-q", "--work-dir", wd, dir)
	if status != 2 || !strings.Contains(out, dir) || !strings.Contains(out, "assess") {
		t.Errorf("exit status %d, want 2, naming %s and assess:\n%s", status, dir, out)
	}
	if _, err := os.Stat(filepath.Join(wd, workdir.BeforeFile)); err == nil {
		t.Errorf("the collection was hashed before it was found read-only")
	}
}

// TestReadOnlyParent proves that a work directory that cannot be made
// beside the collection says how to put it elsewhere (--work-dir).
func TestReadOnlyParent(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "archive")
	dir := filepath.Join(parent, "coll")
	warctest.WriteFile(t, dir, "a.warc", twoCaptures("http://example.com/logo.png"))
	if err := os.Chmod(parent, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(parent, 0o755) })
	status, out := runCommand(t, []string{dir}, "run", "-q", dir)
	if status != 2 || !strings.Contains(out, "--work-dir") {
		t.Errorf("exit status %d, want 2, saying --work-dir:\n%s", status, out)
	}
}

// TestCollectionDotDotAfterLink runs the job on "to-sub/..", where to-sub
// links to coll/sub, from a working directory that also holds a file of
// the same name as the collection's. It proves that the job takes the
// collection the kernel names (coll, as ls lists it), rewrites its
// duplicate there, and leaves the working directory's look-alike as it
// was: a name cleaned by spelling alone made the job rewrite the working
// directory instead.
func TestCollectionDotDotAfterLink(t *testing.T) {
	root := t.TempDir()
	coll, cwd := filepath.Join(root, "coll"), filepath.Join(root, "cwd")
	warctest.WriteFile(t, coll, "a.warc", twoCaptures("http://example.com/logo.png"))
	lookAlike := twoCaptures("http://example.org/other.png")
	warctest.WriteFile(t, cwd, "a.warc", lookAlike)
	if err := os.MkdirAll(filepath.Join(coll, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(coll, "sub"), filepath.Join(cwd, "to-sub")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	before, err := os.ReadFile(filepath.Join(coll, "a.warc"))
	if err != nil {
		t.Fatal(err)
	}
	r := runOn(t, "to-sub/..", filepath.Join(root, "work"))
	if tot := r.Report.Totals; r.Report.Exit != 0 || tot.RevisitsWritten != 1 {
		t.Fatalf("exit %d %v; %d revisits written, want 1", r.Report.Exit, r.Report.ExitReason, tot.RevisitsWritten)
	}
	if got, want := r.Report.Collections, []string{coll}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("the report names the collections %v, want %v", got, want)
	}
	if after, err := os.ReadFile(filepath.Join(coll, "a.warc")); err != nil || len(after) >= len(before) {
		t.Errorf("coll/a.warc: %d bytes after, %d before (%v): want its duplicate a revisit", len(after), len(before), err)
	}
	if got, err := os.ReadFile(filepath.Join(cwd, "a.warc")); err != nil || string(got) != string(lookAlike) {
		t.Errorf("the working directory's a.warc was changed (%v)", err)
	}
}
