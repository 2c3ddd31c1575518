//go:build linux

package undo

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/dedup"
	"warcdedup/internal/jobtest"
	"warcdedup/wacz"
)

// TestUndoWACZPackageNotPutFinishedNextTime makes the rebuild of one
// package fail where the new version is put in place of it (the package
// immutable: the exchange is refused, as a full disk refuses writing the
// new version), after the undo restored and logged its members, and
// proves that the undo says so (exit status not 0) and that the next undo
// finishes the package from its members' logged versions, left staged
// beside it: every package is then the file it was. The undo removed the
// staged versions; the log named them, the package held the deduplicated
// members, and the next undo found nothing to restore and exited 0 with
// every revisit of the package still there.
func TestUndoWACZPackageNotPutFinishedNextTime(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	before := jobtest.HashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	pkg := filepath.Join(dir, "crawl-1-0.wacz")
	if jobtest.HashTree(t, dir)["crawl-1-0.wacz"] == before["crawl-1-0.wacz"] {
		t.Fatal("crawl-1-0.wacz was not rewritten: the test proves nothing")
	}
	if out, err := exec.Command("chattr", "+i", pkg).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s immutable (not root, or the file system does not allow it): %v %s", pkg, err, out)
	}
	mutable := func() {
		if out, err := exec.Command("chattr", "-i", pkg).CombinedOutput(); err != nil {
			t.Errorf("chattr -i %s: %v %s", pkg, err, out)
		}
	}
	t.Cleanup(mutable)
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err == nil && u.Exit == 0 {
		t.Fatalf("undo exited 0 with %s immutable", pkg)
	}
	mutable()
	again, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || again.Exit != 0 {
		t.Fatalf("undo again: %v, %+v", err, again)
	}
	if u.BytesDiffer+again.BytesDiffer > 0 {
		t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer+again.BytesDiffer)
	}
	jobtest.SameTree(t, "after the undo refused and the next", jobtest.HashTree(t, dir), before)
}

// TestUndoWACZRequirerNotPutAroundItsMembers makes the rebuild of a
// package around its restored members fail (the metadata kept of it
// before the run damaged, so that neither its datapackage.json nor its
// fallback can be written: refused), while the package requires another
// the undo wrote anew, so that the undo then writes it anew to bring its
// requires entry up to date, copying its deduplicated members. It proves
// that the staged versions the log names stay (that rebuild is no rebuild
// around them) and that the next undo, the metadata mended, finishes the
// package: every package is then the file it was.
func TestUndoWACZRequirerNotPutAroundItsMembers(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	before := jobtest.HashTree(t, dir)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	requirer, _ := jobtest.RequiredByHash(t, dir)
	saved := filepath.Join(wd, "wacz-metadata", url.PathEscape(requirer)+".json")
	good, err := os.ReadFile(saved)
	if err != nil {
		t.Fatalf("the metadata kept of %s: %v", requirer, err)
	}
	if err := os.WriteFile(saved, []byte(`{"package":"`+requirer+`","datapackage":"bm90IEpTT04=","digest":null}`), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err == nil && u.Exit == 0 {
		t.Fatalf("undo exited 0 with the metadata of %s damaged", requirer)
	}
	if err := os.WriteFile(saved, good, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || again.Exit != 0 {
		t.Fatalf("undo again: %v, %+v", err, again)
	}
	if u.BytesDiffer+again.BytesDiffer > 0 {
		t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer+again.BytesDiffer)
	}
	jobtest.SameTree(t, "after the undo refused and the next", jobtest.HashTree(t, dir), before)
}

// TestUndoWACZChangedWhileStagedKept makes an undo leave a package's
// restored members staged beside it (its new version could not be put in
// place: immutable), then changes the package as someone may meanwhile
// (a record appended to a WARC member, datapackage.json brought up to
// date), and proves that the next undo refuses to finish the package
// from the staged versions, keeping the record: it wrote the package
// anew around them, the member's new record gone, and exited 0.
func TestUndoWACZChangedWhileStagedKept(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	wd := filepath.Join(t.TempDir(), "work")
	if r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v", err)
	}
	pkg := filepath.Join(dir, "crawl-1-0.wacz")
	if out, err := exec.Command("chattr", "+i", pkg).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s immutable (not root, or the file system does not allow it): %v %s", pkg, err, out)
	}
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if out, cerr := exec.Command("chattr", "-i", pkg).CombinedOutput(); cerr != nil {
		t.Fatalf("chattr -i %s: %v %s", pkg, cerr, out)
	}
	if err == nil && u.Exit == 0 {
		t.Fatalf("undo exited 0 with %s immutable", pkg)
	}
	record := []byte("WARC/1.0\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:12345678-1234-1234-1234-123456789abc>\r\nWARC-Date: 2024-01-01T00:00:00Z\r\nContent-Length: 21\r\n\r\nsomeone else's record\r\n\r\n")
	member := appendToMember(t, pkg, record)
	again, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err == nil && again.Exit == 0 {
		t.Errorf("undo exited 0 with %s changed while its restored members were staged", pkg)
	}
	if got := memberBytes(t, pkg, member); !bytes.HasSuffix(got, record) {
		t.Errorf("the record appended to %s of %s is gone (%v)", member, pkg, err)
	}
}

// appendToMember appends data to the first uncompressed WARC member of
// the package at path, as another tool would: the package written anew,
// its index and datapackage.json brought up to date. It returns the
// member's name.
func appendToMember(t *testing.T, path string, data []byte) string {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var member string
	for _, m := range p.WARCs() {
		if strings.HasSuffix(m.Name, ".warc") {
			member = m.Name
			break
		}
	}
	if member == "" {
		t.Fatalf("%s has no uncompressed WARC member", path)
	}
	content := append(memberBytes(t, path, member), data...)
	repl := filepath.Join(t.TempDir(), "member")
	if err := os.WriteFile(repl, content, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path + ".new")
	if err != nil {
		t.Fatal(err)
	}
	b := &wacz.Rebuild{Source: p, Replace: map[string]wacz.Replacement{member: {Path: repl}}, FreshIndex: true, TempDir: t.TempDir()}
	if _, err := b.Write(out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	return member
}

// memberBytes reads the member name of the package at path.
func memberBytes(t *testing.T, path, name string) []byte {
	t.Helper()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := p.Member(name)
	if m == nil {
		t.Fatalf("%s has no member %s", path, name)
	}
	sec, err := p.Section(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(sec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
