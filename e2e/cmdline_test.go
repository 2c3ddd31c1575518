package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/scripts/gen"
)

// Command lines as users type them: flags before or after a command's
// words, misspelt flags and commands, and -q on every command.

// smallCollection writes a small generated collection of WARC files (and,
// with arcs, of ARC files) at dir/name.
func smallCollection(t *testing.T, dir, name string, formats ...gen.Format) string {
	t.Helper()
	if len(formats) == 0 {
		formats = []gen.Format{gen.WARC10Gz, gen.WARC10}
	}
	coll := filepath.Join(dir, name)
	if _, err := gen.Write(coll, gen.Config{Files: 4, Records: 160, DupRate: 0.4, Seed: 21, MeanPayload: 3000,
		NonCandidates: true, Formats: formats}); err != nil {
		t.Fatal(err)
	}
	return coll
}

// TestFlagsAnywhere proves that a command's flags are taken before its
// words as after them ("warcdedup index --index DIR stats" once failed with
// "flag provided but not defined: -index"), that a misspelt flag or
// command is answered with the one meant, and that usage errors of
// subcommands go to stderr alone with exit status 2.
func TestFlagsAnywhere(t *testing.T) {
	dir := t.TempDir()
	smallCollection(t, dir, "c1")
	if _, stderr, code := sh(t, dir, "warcdedup run -q -j 2 --index idx c1"); code != 0 {
		t.Fatalf("run --index: exit %d\n%s", code, stderr)
	}
	want, stderr, code := sh(t, dir, "warcdedup index stats --json --index idx")
	if code != 0 || !strings.Contains(want, `"crawls"`) {
		t.Fatalf("index stats --index idx: exit %d, %q\n%s", code, want, stderr)
	}
	for _, cmd := range []string{
		"warcdedup index --index idx stats --json",
		"warcdedup index --json --index=idx stats",
		"warcdedup --index idx index stats --json",
		"warcdedup index stats -q --index idx --json",
	} {
		got, stderr, code := sh(t, dir, cmd)
		if code != 0 || got != want {
			t.Errorf("%s: exit %d, stdout %q (want that of index stats --index idx), stderr %q", cmd, code, got, stderr)
		}
	}
	deps, _, _ := sh(t, dir, "warcdedup index deps --json --reverse --index idx c1")
	if got, stderr, code := sh(t, dir, "warcdedup index --reverse deps c1 --index idx --json"); code != 0 || got != deps || !strings.Contains(got, "required_by") {
		t.Errorf("index --reverse deps c1 --index idx: exit %d, %q, want %q; %s", code, got, deps, stderr)
	}
	// The flags of run before the command, between and after its operands.
	smallCollection(t, dir, "c2")
	if _, stderr, code := sh(t, dir, "warcdedup -q run c2 --dry-run -j 2"); code != 0 || stderr != "" {
		t.Errorf("warcdedup -q run c2 --dry-run -j 2: exit %d, stderr %q", code, stderr)
	}

	usage := []struct{ cmd, stderr string }{
		{"warcdedup run --dryrun c2", "flag provided but not defined: -dryrun; did you mean --dry-run? (see warcdedup run --help)"},
		{"warcdedup run c2 --dry_run", "did you mean --dry-run?"},
		{"warcdedup assess --smaple 5 c2", "did you mean --sample?"},
		{"warcdedup index verify --indx idx", "did you mean --index?"},
		{"warcsum --recursiv c2", "did you mean --recursive?"},
		{"warcdedup rnu c2", `"rnu" is not a command of warcdedup: run, assess, undo, index, cluster, check, commit, show; did you mean run?`},
		{"warcdedup index sttas --index idx", `"sttas" is not a command of warcdedup index: verify, stats, deps, remove, import, export, compact; did you mean stats?`},
		{"warcdedup index --index idx", "--index is an option of warcdedup index verify|stats|deps|remove|import|export|compact: name the command"},
		{"warcdedup index", "name a command: verify, stats, deps, remove, import, export, compact (see warcdedup index --help)"},
		{"warcdedup index stats --bogus --index idx", "flag provided but not defined: -bogus (see warcdedup index stats --help)"},
		{"warcdedup run --zzzzzz c2", "flag provided but not defined: -zzzzzz (see warcdedup run --help)"},
	}
	for _, u := range usage {
		stdout, stderr, code := sh(t, dir, u.cmd)
		if code != 2 || stdout != "" || !strings.Contains(stderr, u.stderr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2, nothing on stdout and %q", u.cmd, code, stdout, stderr, u.stderr)
		}
		if strings.Contains(u.stderr, "zzzz") && strings.Contains(stderr, "did you mean") {
			t.Errorf("%s: a suggestion for a word like no flag: %q", u.cmd, stderr)
		}
	}
}

// TestWarcrefsDryRun proves that warcrefs --dry-run checks and reports
// without --in-place (it once demanded it), writing nothing.
func TestWarcrefsDryRun(t *testing.T) {
	dir := t.TempDir()
	coll := smallCollection(t, dir, "coll")
	before := treeSums(t, coll)
	script := `warcsum -r coll | LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n | warccollres -p --root coll > numbered
awk '$8 > 1' numbered | LC_ALL=C sort -k1,1 -k2,2n > dups
warcrefs --dry-run --root coll --originals numbered -i dups`
	_, stderr, code := sh(t, dir, script)
	if code != 0 || !strings.Contains(stderr, "would") {
		t.Errorf("warcrefs --dry-run: exit %d, stderr\n%s", code, stderr)
	}
	sameSums(t, treeSums(t, coll), before)
	if _, stderr, _ := sh(t, dir, "warcrefs --root coll --originals numbered -i dups"); !strings.Contains(stderr, "give --in-place or --output-dir DIR (or --dry-run") {
		t.Errorf("warcrefs without a mode: %q", stderr)
	}
}

// TestQuiet runs every command with -q on input it reads without damage:
// each must write nothing on stderr (its results still go to stdout or
// its files), and exit 0.
func TestQuiet(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []string{"coll", "run", "assess", "crawl"} {
		smallCollection(t, dir, c)
	}
	smallCollection(t, dir, "arcs", gen.ARCGz, gen.ARC)
	steps := []struct{ name, cmd string }{
		{"warcsum", "warcsum -q -r coll > before.manifest"},
		{"warccollres", "LC_ALL=C sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n before.manifest > by-digest && warccollres -q --root coll -i by-digest > resolved"},
		{"warcsumproc", "warcsumproc -q -i resolved > numbered"},
		{"warcsumsplit", "warcsumsplit -q --hash-ranges 2 -o part -i before.manifest"},
		{"warcrefs --dry-run", "awk '$8 > 1' numbered | LC_ALL=C sort -k1,1 -k2,2n > dups && warcrefs -q --dry-run --root coll --originals numbered -i dups"},
		// a CDXJ index of the collection as it is, from its manifest
		{"index", `awk '{d=$5; gsub(/[^0-9]/, "", d); printf "x %s {\"url\": \"%s\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"%s\", \"length\": \"%s\", \"offset\": \"%s\", \"filename\": \"%s\"}\n", d, $4, $6, $3, $2, $1}' before.manifest > index.cdxj`},
		{"warcrefs", "warcrefs -q --in-place --root coll --originals numbered --log rewrite.log -i dups"},
		{"warcsumcmp", "warcsum -q -r coll > after.manifest && warcsumcmp -q before.manifest after.manifest"},
		{"warccdx", "warccdx -q --log rewrite.log index.cdxj > after.cdxj"},
		{"warcrefs --undo", "warcsum -q -r coll | LC_ALL=C sort -k4,4 -k5,5 > captures && warcrefs -q --undo --log rewrite.log --captures captures --root coll"},
		{"arc2warc", "arc2warc -q -o converted arcs"},
		{"arc2warc --check", "arc2warc -q --check -o converted arcs"},
		{"warcrecompress", "mkdir whole && gzip -c coll/gen-00001.warc > whole/w.warc.gz && warcrecompress -q -o recompressed whole"},
		{"warcdedup assess", "warcdedup assess -q -j 2 assess"},
		{"warcdedup assess --sample", "warcdedup assess -q -j 2 --sample 50 assess"},
		{"warcdedup assess --cdx", "warcdedup assess -q -j 2 --cdx --work-dir assess-cdx index.cdxj"},
		{"warcdedup run", `warcsum -q -r run | awk '{d=$5; gsub(/[^0-9]/, "", d); printf "x %s {\"url\": \"%s\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"%s\", \"length\": \"%s\", \"offset\": \"%s\", \"filename\": \"%s\"}\n", d, $4, $6, $3, $2, $1}' > run.cdxj && warcdedup run -q -j 2 --cdx run.cdxj run`},
		{"warcdedup check", "warcdedup check -q --sample 5 --cdx run.cdxj run > checked"},
		{"warcdedup show", "warcdedup show -q run/gen-00000.warc.gz > listing && warcdedup show -q run/gen-00000.warc.gz:$(awk '$3 == \"response\" {print $1; exit}' listing) > shown"},
		{"warcdedup commit", "cp -r assess copy && warcdedup commit -q --to copy run"},
		{"warcdedup undo", "warcdedup undo -q -j 2 run"},
		{"warcdedup run --index", "warcdedup run -q -j 2 --index idx crawl"},
		{"warcdedup index verify", "warcdedup index verify -q --deep --index idx"},
		{"warcdedup index stats", "warcdedup index stats -q --json --index idx > stats.json"},
		{"warcdedup index deps", "warcdedup index deps -q --json --index idx crawl > deps.json"},
		{"warcdedup index import", "warcdedup index import -q --index idx --crawl imported --location coll index.cdxj"},
		{"warcdedup index remove", "warcdedup index remove -q --index idx imported"},
		{"warcdedup cluster --plan", "printf 'h1 %s http://127.0.0.1:1/\\n' \"$PWD/coll\" > hosts && warcdedup cluster -q --plan --work-dir cjob hosts > plan"},
	}
	for _, s := range steps {
		stdout, stderr, code := sh(t, dir, s.cmd)
		if code != 0 || stderr != "" {
			t.Errorf("%s: %s: exit %d, stderr %q (stdout %d bytes)", s.name, s.cmd, code, stderr, len(stdout))
		}
	}
	// Results still go where they go.
	for _, name := range []string{"before.manifest", "numbered", "after.cdxj", "listing", "shown", "checked", "stats.json", "deps.json", "plan"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v: the result of a quiet command is missing", name, err)
		}
	}
	var st map[string]any
	if data, _ := os.ReadFile(filepath.Join(dir, "stats.json")); json.Unmarshal(data, &st) != nil {
		t.Errorf("index stats -q printed no JSON: %q", data)
	}
	// Quiet or not, an error is said.
	if _, stderr, code := sh(t, dir, "warcdedup run -q no-such-collection"); code != 2 || !strings.Contains(stderr, "no-such-collection") {
		t.Errorf("run -q on nothing: exit %d, stderr %q", code, stderr)
	}
}
