package dedup

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/wacz"
)

// TestRunWACZKilledWhileMembersRewrittenInPlace: a run reads each WACZ
// member where it lies in its package and writes its new version at the
// member's staged name (no copy staged first). Killed while the first
// new versions are being written (none put yet: nothing beside the
// packages but their temporary files), or once one is journaled (put or
// about to be, not yet logged), the rerun finishes (exit 0), and an undo
// then gives back every WARC member of every package bit for bit:
// nothing was lost at either moment.
func TestRunWACZKilledWhileMembersRewrittenInPlace(t *testing.T) {
	written := func(dir string) killPoint {
		return killPoint{"a member's new version being written, none put", func(w *watch) (string, bool) {
			put, _ := filepath.Glob(filepath.Join(dir, ".*.warcdedup-member"))
			partial, _ := filepath.Glob(filepath.Join(dir, ".tmp-.*.warcdedup-member-*"))
			return fmt.Sprintf("with %d new versions being written, none put", len(partial)), len(put) == 0 && len(partial) > 0
		}}
	}
	journaled := func(string) killPoint { return atIntents(1) }
	for _, point := range []func(dir string) killPoint{written, journaled} {
		t.Run(point("").name, func(t *testing.T) {
			for attempt := 1; attempt <= 30; attempt++ {
				j := newWACZJob(t)
				dir, wd, args := j.dir, j.wd, j.args
				p := point(dir)
				where, _ := killAt(t, exec.Command(binPath, args...), wd, p)
				if where == "" {
					continue
				}
				t.Logf("killed %s (attempt %d)", where, attempt)
				out, err := exec.Command(binPath, args...).CombinedOutput()
				if status := exitStatus(t, err, out); status != 0 {
					t.Fatalf("the run after the kill: exit %d:\n%s", status, out)
				}
				j.undone(t, "after the kill, the rerun")
				return
			}
			t.Fatal("the run was never killed there")
		})
	}
}

// waczJob is a generated WACZ collection for a run to be killed, stopped
// or disturbed: its WARC members' sums before, a work directory, and the
// run's arguments.
type waczJob struct {
	dir, wd string
	before  map[string]string
	args    []string
}

func newWACZJob(t *testing.T) *waczJob {
	t.Helper()
	dir, _ := jobtest.GeneratedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	return &waczJob{dir: dir, wd: wd, before: waczMemberSums(t, dir), args: []string{"run", "-q", "-j", "2", "--work-dir", wd, dir}}
}

// undone runs undo on the job and proves every member back bit for bit;
// when says what came before it.
func (j *waczJob) undone(t *testing.T, when string) {
	t.Helper()
	out, err := exec.Command(binPath, "undo", "-q", "--work-dir", j.wd, j.dir).CombinedOutput()
	if status := exitStatus(t, err, out); status != 0 {
		t.Fatalf("the undo %s: exit %d:\n%s", when, status, out)
	}
	sameMemberSums(t, when+" and the undo", j.before, waczMemberSums(t, j.dir))
}

// sameMemberSums fails the test unless the WARC members after (when)
// are those before, bit for bit (waczMemberSums), none more or fewer.
func sameMemberSums(t *testing.T, when string, before, after map[string]string) {
	t.Helper()
	for k, sum := range before {
		if after[k] != sum {
			t.Errorf("%s: %s, SHA-256 %s, before %s", k, when, after[k], sum)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%s: %d WARC members, %d before", when, len(after), len(before))
	}
}

// waczMemberSums are the SHA-256 of the stored bytes of every WARC member of
// the packages in dir, by package and member name.
func waczMemberSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	eachWARCMember(t, dir, func(key string, p *wacz.Package, m *wacz.Member) {
		sec, err := p.Section(m)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, sec); err != nil {
			t.Fatal(err)
		}
		sums[key] = hex.EncodeToString(h.Sum(nil))
	})
	return sums
}

// waczMemberSizes are the stored sizes of every WARC member of the
// packages in dir, keyed as waczMemberSums keys them.
func waczMemberSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	sizes := map[string]int64{}
	eachWARCMember(t, dir, func(key string, _ *wacz.Package, m *wacz.Member) { sizes[key] = m.CompressedSize })
	return sizes
}

// eachWARCMember calls fn with every WARC member of the packages in dir
// (there must be one), keyed "PACKAGE#MEMBER".
func eachWARCMember(t *testing.T, dir string, fn func(key string, p *wacz.Package, m *wacz.Member)) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if len(paths) == 0 {
		t.Fatalf("no package in %s", dir)
	}
	for _, path := range paths {
		p, err := wacz.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.WARCs() {
			fn(strings.Join([]string{filepath.Base(path), m.Name}, "#"), p, m)
		}
		p.Close()
	}
}
