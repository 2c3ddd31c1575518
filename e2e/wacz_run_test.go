package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/replaytest"
	"warcdedup/internal/wacztest"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
)

// waczCollection generates a directory of WACZ packages of three crawls
// a day apart (40% duplicates, WARC and WARC.gz members, ZipNum and plain
// indexes), so that later packages' duplicates have originals in earlier
// ones; records is the number of responses.
func waczCollection(t *testing.T, dir string, records int) *waczgen.Collection {
	t.Helper()
	res, err := gen.Write(dir, gen.Config{Files: 6, Records: records, DupRate: 0.4, Seed: 37, MeanPayload: 3000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC10}, NonCandidates: true, Sequential: true, Prefix: "bt"})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := waczgen.Write(dir, res, waczgen.Config{Packages: 3, Crawls: 3, Index: "mixed", LinesPerBlock: 40})
	if err != nil {
		t.Fatal(err)
	}
	return coll
}

// checkPackages checks every package of dir with wacztest and fails the
// test on any problem.
func checkPackages(t *testing.T, cli, dir, when string) *wacztest.Result {
	t.Helper()
	r, err := wacztest.CheckDir(cli, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Errorf("%s: %v", when, err)
	}
	t.Logf("%s: %s", when, r)
	return r
}

// TestWACZRunChecked runs the real `warcdedup run` on a directory of WACZ
// packages of several crawls, then `warcdedup undo`, and checks every
// package after each with wacztest, a reader that shares no code with
// package wacz: member hashes and sizes equal datapackage.json, the
// digest file right, WARC members stored, the index equal line for line
// to warcio.js cdx-index of the WARC members, every ZipNum block where
// index.idx says, relation.requires naming packages of the directory
// with their current hash and size.
func TestWACZRunChecked(t *testing.T) {
	cli := replaytest.WarcioCLI(t)
	dir := filepath.Join(t.TempDir(), "coll")
	waczCollection(t, dir, 600)
	checkPackages(t, cli, dir, "as generated")
	work := filepath.Join(t.TempDir(), "work")
	if _, stderr, code := sh(t, dir, "warcdedup run --work-dir "+work+" ."); code != 0 {
		t.Fatalf("warcdedup run: exit %d\n%s", code, stderr)
	}
	r := checkPackages(t, cli, dir, "after warcdedup run")
	if r.Requires == 0 {
		t.Error("no package requires another: nothing was proved across packages")
	}
	revisits := 0
	for _, l := range readLines(t, filepath.Join(work, "rewrite.log")) {
		if strings.Contains(l, ".wacz#archive/") {
			revisits++
		}
	}
	if revisits == 0 {
		t.Fatal("the run's rewrite log names no WACZ member")
	}
	t.Logf("%d rewrite log lines name WACZ members", revisits)
	if _, stderr, code := sh(t, dir, "warcdedup undo --work-dir "+work+" ."); code != 0 {
		t.Fatalf("warcdedup undo: exit %d\n%s", code, stderr)
	}
	checkPackages(t, cli, dir, "after warcdedup undo")
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestWACZCheckFinds proves that wacztest's check fails on each kind of
// damage it is for: each case rewrites one generated package (every
// other member kept as it was) and must be found, named.
func TestWACZCheckFinds(t *testing.T) {
	cli := replaytest.WarcioCLI(t)
	src := filepath.Join(t.TempDir(), "src")
	coll := waczCollection(t, src, 150)
	var plain, zipnum string
	for _, p := range coll.Packages {
		if p.ZipNum {
			zipnum = p.Name
		} else {
			plain = p.Name
		}
	}
	// The cases edit a member's bytes (and keep datapackage.json and the
	// digest file right unless the case is about them).
	cases := []struct {
		name, pkg string
		edit      func(t *testing.T, name string, data []byte) ([]byte, uint16)
		fixMeta   bool
		want      string
	}{
		{"stale hash in datapackage.json", plain, func(t *testing.T, name string, data []byte) ([]byte, uint16) {
			if name == "datapackage.json" {
				return bytes.Replace(data, []byte(`"hash": "sha256:`), []byte(`"hash": "sha256:0`), 1), zip.Store
			}
			return data, zip.Store
		}, false, "datapackage.json gives hash"},
		{"digest file stale", plain, func(t *testing.T, name string, data []byte) ([]byte, uint16) {
			if name == "datapackage-digest.json" {
				return bytes.Replace(data, []byte(`sha256:`), []byte(`sha256:0`), 1), zip.Store
			}
			return data, zip.Store
		}, false, "datapackage-digest.json gives"},
		{"WARC member deflated", plain, func(t *testing.T, name string, data []byte) ([]byte, uint16) {
			if strings.HasPrefix(name, "archive/") {
				return data, zip.Deflate
			}
			return data, zip.Store
		}, true, "compressed by the ZIP"},
		{"index line missing", plain, func(t *testing.T, name string, data []byte) ([]byte, uint16) {
			if name == "indexes/index.cdxj" {
				_, rest, _ := bytes.Cut(data, []byte("\n"))
				return rest, zip.Store
			}
			return data, zip.Store
		}, true, "is not warcio.js cdx-index"},
		{"ZipNum block not where index.idx says", zipnum, func(t *testing.T, name string, data []byte) ([]byte, uint16) {
			if name == "indexes/index.idx" {
				return bytes.Replace(data, []byte(`"offset":0,`), []byte(`"offset":1,`), 1), zip.Store
			}
			return data, zip.Store
		}, true, "index.idx line 2"},
		{"requires entry with a stale hash", plain, func(t *testing.T, name string, data []byte) ([]byte, uint16) {
			if name == "datapackage.json" {
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatal(err)
				}
				m["relation"] = map[string]any{"requires": []any{map[string]any{"filename": zipnum, "hash": strings.Repeat("0", 64), "size": 1}}}
				b, _ := json.Marshal(m)
				return b, zip.Store
			}
			return data, zip.Store
		}, true, "relation.requires gives " + zipnum + " the SHA-256"},
		{"requires entry naming no package", plain, func(t *testing.T, name string, data []byte) ([]byte, uint16) {
			if name == "datapackage.json" {
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatal(err)
				}
				m["relation"] = map[string]any{"requires": []any{map[string]any{"filename": "gone.wacz"}}}
				b, _ := json.Marshal(m)
				return b, zip.Store
			}
			return data, zip.Store
		}, true, "names gone.wacz, which is not in"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, p := range coll.Packages {
				if err := copyFileTo(filepath.Join(src, p.Name), filepath.Join(dir, p.Name)); err != nil {
					t.Fatal(err)
				}
			}
			rezip(t, filepath.Join(dir, tc.pkg), tc.edit, tc.fixMeta)
			r, err := wacztest.CheckDir(cli, dir, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			err = r.Err()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.pkg) {
				t.Fatalf("want a problem naming %s with %q, got %v", tc.pkg, tc.want, err)
			}
		})
	}
}

func copyFileTo(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// rezip writes the package anew with each member's bytes and method as
// edit returns them; with fixMeta, datapackage.json's resources and the
// digest file are brought up to date with the edited members.
func rezip(t *testing.T, pkg string, edit func(t *testing.T, name string, data []byte) ([]byte, uint16), fixMeta bool) {
	t.Helper()
	zr, err := zip.OpenReader(pkg)
	if err != nil {
		t.Fatal(err)
	}
	type member struct {
		name   string
		data   []byte
		method uint16
	}
	var ms []member
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		d, m := edit(t, f.Name, b)
		ms = append(ms, member{f.Name, d, m})
	}
	zr.Close()
	if fixMeta {
		sum := func(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }
		var dp, dpi int
		for i, m := range ms {
			if m.name == "datapackage.json" {
				dp = i
			}
			if m.name == "datapackage-digest.json" {
				dpi = i
			}
		}
		var doc map[string]any
		if err := json.Unmarshal(ms[dp].data, &doc); err != nil {
			t.Fatal(err)
		}
		for _, r := range doc["resources"].([]any) {
			res := r.(map[string]any)
			for _, m := range ms {
				if m.name == res["path"] {
					res["hash"], res["bytes"] = sum(m.data), len(m.data)
				}
			}
		}
		ms[dp].data, _ = json.MarshalIndent(doc, "", "  ")
		ms[dpi].data, _ = json.Marshal(map[string]string{"path": "datapackage.json", "hash": sum(ms[dp].data)})
	}
	f, err := os.Create(pkg)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, m := range ms {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: m.method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
