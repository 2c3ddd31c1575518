// Package e2e runs the built commands the way users do: joined by the
// system sort in a shell pipeline.
package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"warcdedup/digest"
	"warcdedup/internal/corpustest"
	"warcdedup/manifest"
	"warcdedup/scripts/gen"
)

const collisionsDir = "../../shared/collisions"

var binDir string

// TestMain builds every command once into a temporary directory.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "warcdedup-bin-")
	if err != nil {
		panic(err)
	}
	build := exec.Command("go", "build", "-o", dir+"/", "../cmd/...")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building the commands: " + err.Error())
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sh runs a bash pipeline with the commands on PATH and pipefail set, and
// returns stdout, stderr and the exit status.
func sh(t *testing.T, dir, script string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -o pipefail\n"+script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"), "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// generate writes a collection with every kind of record and duplicate the
// generator knows, and returns its directory and expected result.
func generate(t *testing.T, algo digest.Algorithm) (string, *gen.Result) {
	t.Helper()
	cfg := gen.Config{
		Files: 6, Records: 300, DupRate: 0.4, Seed: 11, Algorithm: algo,
		MeanPayload: 3000, Chunked: 0.1, NonCandidates: true, Quirks: true,
	}
	if _, err := os.Stat(collisionsDir); err == nil {
		cfg.Collisions, cfg.CollisionDir = true, collisionsDir
	} else if corpustest.Required() {
		t.Fatalf("the collision pairs are required (WARCDEDUP_REQUIRE_CORPUS=1): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "coll")
	res, err := gen.Write(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dir, res
}

func canonical(t *testing.T, text string) string {
	t.Helper()
	var lines []manifest.Line
	for _, s := range strings.Split(strings.TrimSpace(text), "\n") {
		if s == "" {
			continue
		}
		l, err := manifest.Parse([]byte(s))
		if err != nil {
			t.Fatalf("output line %q: %v", s, err)
		}
		lines = append(lines, l)
	}
	slices.SortFunc(lines, func(a, b manifest.Line) int { return manifest.ByDigest.Compare(&a, &b) })
	var b []byte
	for i := range lines {
		b = lines[i].Append(b)
	}
	return string(b)
}

func expected(t *testing.T, res *gen.Result) string {
	var b bytes.Buffer
	if err := res.WriteExpected(&b); err != nil {
		t.Fatal(err)
	}
	return canonical(t, b.String())
}

// byDigest is the order stages 2 and 3 read.
const byDigest = "sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n"

// TestPipeline proves that the chain of commands gives exactly the
// deduplication the generator says is correct, by each route the README
// shows: the four stages, the -p shortcut, and the sort scaled out with
// hash ranges.
func TestPipeline(t *testing.T) {
	for _, algo := range []digest.Algorithm{digest.SHA1, digest.MD5} {
		t.Run(algo.String(), func(t *testing.T) {
			dir, res := generate(t, algo)
			want := expected(t, res)
			if res.Duplicates == 0 || (res.Pairs != nil && res.Collisions == 0) {
				t.Fatalf("generated collection has no duplicates or collisions: %s", res.Summary())
			}
			h := "-H " + algo.String()
			routes := map[string]string{
				"four stages":   "warcsum -q " + h + " -r coll | " + byDigest + " | warccollres -q --root coll | " + byDigest + " | warcsumproc -q",
				"proc shortcut": "warcsum -q " + h + " -r coll | " + byDigest + " | warccollres -q -p --root coll -j 3",
				"hash ranges": "warcsum -q " + h + " -r coll > all && warcsumsplit -q --hash-ranges 3 -i all -o part && " +
					// Every part starts with the digest-less revisit lines;
					// joining the parts keeps one of each.
					"for p in part-*; do " + byDigest + " $p | warccollres -q -p --root coll; done | sort -u",
			}
			for name, script := range routes {
				t.Run(name, func(t *testing.T) {
					work := filepath.Dir(dir)
					out, stderr, code := sh(t, work, script)
					if code != 0 {
						t.Fatalf("exit %d: %s", code, stderr)
					}
					if got := canonical(t, out); got != want {
						t.Errorf("result differs from the generator's expectation (%s)\n%s", res.Summary(), diff(got, want))
					}
				})
			}
		})
	}
}

func diff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, c string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			c = w[i]
		}
		if a != c {
			b.WriteString("got:  " + a + "\nwant: " + c + "\n")
			if b.Len() > 3000 {
				break
			}
		}
	}
	return b.String()
}

// TestBadInput proves that bad input stops a stage with a clear message,
// exit status 2 and no output file under the name asked for.
func TestBadInput(t *testing.T) {
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "unsorted"), []byte(
		"a.warc 20 10 http://b/ 2020-01-01T00:00:00Z sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\n"+
			"a.warc 0 10 http://a/ 2020-01-01T00:00:00Z sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"), 0o644)
	os.WriteFile(filepath.Join(work, "malformed"), []byte("a.warc 0 10 http://a/\n"), 0o644)
	tests := []struct {
		name, script, want string
		output             string
	}{
		{"warccollres unsorted", "warccollres --root . -i unsorted -o out", "unsorted:2: line out of order: not sorted by digest, ext, date, file, offset; sort the input with LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n", "out"},
		{"warccollres malformed", "warccollres --root . -i malformed -o out", "malformed:1: 4 fields", "out"},
		{"warcsumproc wrong field count", "warcsumproc -i unsorted -o out", "unsorted:1: 6 fields, want 7", "out"},
		{"warcsumsplit unsorted", "warcsumsplit -s 1K -i unsorted -o part", "unsorted:2: line out of order", "part-000"},
		{"warcsum missing file", "warcsum -o out nope.warc", "nope.warc", "out"},
		{"warccollres without a source", "warccollres -i unsorted", "--root DIR, --locations FILE or --url-template", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := sh(t, work, tt.script)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
			if tt.output != "" {
				if _, err := os.Stat(filepath.Join(work, tt.output)); err == nil {
					t.Errorf("%s was left behind", tt.output)
				}
			}
			entries, _ := os.ReadDir(work)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".tmp-") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

// TestReadNothing proves that a run that read nothing is no success: a
// directory without -r, a directory without WARC or ARC files, a --root
// that does not exist, and an empty manifest each give a non-zero exit
// status and say why.
func TestReadNothing(t *testing.T) {
	dir, _ := generate(t, digest.SHA1)
	work := filepath.Dir(dir)
	if err := os.Mkdir(filepath.Join(work, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	// nested holds a file of the collection one directory down.
	if err := os.MkdirAll(filepath.Join(work, "nested", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", "cp \"$(ls -d "+dir+"/* | head -1)\" "+filepath.Join(work, "nested", "sub")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	tests := []struct {
		name, script string
		code         int
		want         string
	}{
		{"warcsum on a directory without -r", "warcsum nested", 2, "warcsum: no WARC or ARC file found in nested (subdirectories are read with -r)"},
		{"warcsum on a directory without WARC files", "warcsum -r empty", 2, "warcsum: no WARC or ARC file found in empty"},
		{"warccollres with a missing root", "warcsum -q -r coll | " + byDigest + " | warccollres --root missing", 2, "warccollres: --root missing"},
		{"warccollres on an empty manifest", "warccollres --root coll < /dev/null", 1, "warccollres: the manifest is empty: nothing was resolved"},
		{"warcsumproc on an empty manifest", "warcsumproc < /dev/null", 1, "warcsumproc: the manifest is empty: nothing was numbered"},
		{"warcrefs on an empty manifest", "warcrefs --in-place --root coll --originals /dev/null < /dev/null", 1, "warcrefs: the manifest is empty: nothing was checked"},
		{"warcsumcmp on empty manifests", "warcsumcmp /dev/null /dev/null", 1, "warcsumcmp: the before-manifest is empty: nothing was compared"},
		{"warcdedup run on a directory without WARC files", "warcdedup run -q --work-dir w empty", 2, "warcdedup: no WARC or ARC file found in "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := sh(t, work, tt.script+" > /dev/null")
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
		})
	}
}

// TestStaleExitStatus proves that a stale manifest line makes warccollres
// exit 1 with the line left out and named on stderr.
func TestStaleExitStatus(t *testing.T) {
	dir, _ := generate(t, digest.SHA1)
	work := filepath.Dir(dir)
	out, stderr, code := sh(t, work, "warcsum -q -r coll | "+byDigest+" > by-digest && "+
		// Change one duplicate's file after hashing: truncate it by a byte.
		"f=$(awk 'NF==6 && $6==prev {print $1; exit} NF==6 {prev=$6}' by-digest) && truncate -s -1 coll/$f && "+
		"warccollres -q -p --root coll -i by-digest -o resolved; echo \"status $?\"; echo \"file $f\"")
	if code != 0 || !strings.Contains(out, "status 1") {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
	file := strings.TrimSpace(out[strings.Index(out, "file ")+5:])
	if !strings.Contains(stderr, file) || !strings.Contains(stderr, "stale manifest line") {
		t.Errorf("stderr does not name the stale line of %s: %q", file, stderr)
	}
	// The record's bytes never reach the terminal: the message is text.
	if !utf8.ValidString(stderr) || strings.ContainsFunc(stderr, func(r rune) bool { return r < ' ' && r != '\n' && r != '\t' }) {
		t.Errorf("stderr holds raw bytes: %q", stderr)
	}
	resolved, _ := os.ReadFile(filepath.Join(work, "resolved"))
	byDigest, _ := os.ReadFile(filepath.Join(work, "by-digest"))
	if n, m := bytes.Count(resolved, []byte("\n")), bytes.Count(byDigest, []byte("\n")); n >= m {
		t.Errorf("%d lines resolved of %d: the stale line was not left out", n, m)
	}
}

// TestSample proves that the sample collection of the demo deduplicates as
// its expected manifest says.
func TestSample(t *testing.T) {
	want, err := os.ReadFile("../testdata/sample-expected.manifest")
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := sh(t, "..", "warcsum -q -r testdata/sample | "+byDigest+" | warccollres -q -p --root testdata/sample")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := canonical(t, out); got != canonical(t, string(want)) {
		t.Errorf("sample differs from testdata/sample-expected.manifest\n%s", diff(got, canonical(t, string(want))))
	}
}
