package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"warcdedup/digest"
)

// invocation is a command as users type it: a program, or warcdedup and
// one of its commands.
type invocation struct {
	program, command string
}

func (in invocation) String() string { return strings.TrimSpace(in.program + " " + in.command) }

// page is the man page of the invocation: warcsum, warcdedup-run.
func (in invocation) page() string { return strings.ReplaceAll(in.String(), " ", "-") }

// invocations lists every built program, and each command of those that
// have commands (from the COMMANDS section of their help).
func invocations(t *testing.T) []invocation {
	t.Helper()
	entries, err := os.ReadDir(binDir)
	if err != nil {
		t.Fatal(err)
	}
	var all []invocation
	for _, e := range entries {
		all = append(all, invocation{program: e.Name()})
		help, err := exec.Command(filepath.Join(binDir, e.Name()), "--help").Output()
		if err != nil {
			t.Fatalf("%s --help: %v", e.Name(), err)
		}
		_, commands, ok := strings.Cut(string(help), "\nCOMMANDS:\n")
		if !ok {
			continue
		}
		for _, l := range strings.Split(commands, "\n") {
			f := strings.Fields(l)
			if len(f) == 0 || !strings.HasPrefix(l, "   ") {
				break
			}
			all = append(all, invocation{program: e.Name(), command: strings.TrimSuffix(f[0], ",")})
		}
	}
	if len(all) < 10 {
		t.Fatalf("found only %v in %s", all, binDir)
	}
	return all
}

// TestHelp proves that every command's --help exits 0 and shows its usage
// lines with the operands or input it takes, what each exit status means
// and examples, and that --version exits 0.
func TestHelp(t *testing.T) {
	for _, in := range invocations(t) {
		t.Run(in.String(), func(t *testing.T) {
			args := strings.Fields(in.command)
			cmd := exec.Command(filepath.Join(binDir, in.program), append(args, "--help")...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("--help: %v, stderr %q", err, stderr.String())
			}
			help := string(out)
			_, usage, _ := strings.Cut(help, "USAGE:\n")
			usage, _, _ = strings.Cut(usage, "\n\n")
			if in.command == "" && strings.Contains(help, "\nCOMMANDS:\n") {
				// warcdedup: a usage line per command, checked with each.
				if !strings.Contains(usage, "   "+in.program+" ") {
					t.Errorf("usage %q", usage)
				}
			} else {
				for _, l := range strings.Split(usage, "\n") {
					want := "   " + in.String() + " [OPTIONS] "
					if !strings.HasPrefix(l, want) || len(strings.TrimSpace(strings.TrimPrefix(l, want))) == 0 {
						t.Errorf("usage line %q: want %q and the operands", l, want+"...")
					}
				}
			}
			for _, want := range []string{"\nEXIT STATUS:\n   0  ", "\n   2  ", "\nEXAMPLES:\n"} {
				if !strings.Contains(help, want) {
					t.Errorf("no %q in the help:\n%s", want, help)
				}
			}
			if strings.Contains(help, "(default: false)") {
				t.Errorf("a switch shows a default")
			}
		})
	}
	for _, in := range invocations(t) {
		if in.command != "" {
			continue
		}
		if out, err := exec.Command(filepath.Join(binDir, in.program), "--version").Output(); err != nil || !strings.HasPrefix(string(out), in.program+" version ") {
			t.Errorf("%s --version: %v, %q", in.program, err, out)
		}
	}
}

// TestUsageErrors proves that a wrong flag, a missing or unknown command
// is a usage error, exit status 2, said on stderr only.
func TestUsageErrors(t *testing.T) {
	cases := []struct{ name, cmd, stderr string }{
		{"unknown flag", "warcsum --no-such-flag", "warcsum: flag provided but not defined: -no-such-flag (see warcsum --help)"},
		{"unknown flag of a command", "warcdedup run --no-such-flag coll", "warcdedup: flag provided but not defined: -no-such-flag (see warcdedup run --help)"},
		{"no command", "warcdedup", "warcdedup: name a command: run, "},
		{"unknown command", "warcdedup rnu coll", `warcdedup: "rnu" is not a command of warcdedup`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := sh(t, t.TempDir(), c.cmd)
			if code != 2 || stdout != "" || !strings.Contains(stderr, c.stderr) {
				t.Errorf("exit %d, want 2; stdout %q; stderr %q, want %q", code, stdout, stderr, c.stderr)
			}
		})
	}
}

// manPages writes every command's man pages into a new directory, with the
// environment env (nil: this process's) and the program run through
// wrap (e.g. taskset), and returns the directory.
func manPages(t *testing.T, env []string, wrap ...string) string {
	t.Helper()
	dir := t.TempDir()
	seen := map[string]bool{}
	for _, in := range invocations(t) {
		if seen[in.program] {
			continue
		}
		seen[in.program] = true
		argv := append(slices.Clone(wrap), filepath.Join(binDir, in.program), "--man-dir", dir)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		cmd.Dir = t.TempDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s --man-dir: %v\n%s", in.program, err, out)
		}
	}
	return dir
}

// TestManPages proves that every command and every command of warcdedup
// has a man page with the sections a user looks for, in order, exit
// statuses 0 and 2 explained, a placeholder for every flag's value,
// pages of this toolchain it names present, and that groff formats it
// without a warning.
func TestManPages(t *testing.T) {
	dir := manPages(t, nil)
	ins := invocations(t)
	var want []string
	for _, in := range ins {
		want = append(want, in.page()+".1")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	sections := []string{".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH OPTIONS", `.SH "EXIT STATUS"`, ".SH EXAMPLES", `.SH "SEE ALSO"`}
	seeAlso := regexp.MustCompile(`\\fB([a-z0-9\\-]+)\\fR\(1\)`)
	groff, groffErr := exec.LookPath("groff")
	for _, in := range ins {
		t.Run(in.page(), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, in.page()+".1"))
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			at := 0
			for _, s := range sections {
				i := strings.Index(src[at:], "\n"+s+"\n")
				if i < 0 {
					t.Errorf("no %s section (after the one before)", s)
					continue
				}
				at += i + 1
			}
			_, exits, _ := strings.Cut(src, "\n.SH \"EXIT STATUS\"\n")
			exits, _, _ = strings.Cut(exits, "\n.SH ")
			for _, status := range []string{"0", "2"} {
				if !strings.Contains(exits, ".TP\n.B "+status+"\n") {
					t.Errorf("EXIT STATUS does not say what %s means", status)
				}
			}
			// An example fits an 80-column terminal (indented by 11), so
			// that it can be read and copied whole.
			_, examples, _ := strings.Cut(src, "\n.SH EXAMPLES\n")
			examples, _, _ = strings.Cut(examples, "\n.SH ")
			inExample := false
			for _, l := range strings.Split(examples, "\n") {
				switch {
				case l == ".EX":
					inExample = true
				case l == ".EE":
					inExample = false
				case inExample && len(unescape.Replace(l)) > 69:
					t.Errorf("example line of %d columns, more than 69: %s", len(unescape.Replace(l)), unescape.Replace(l))
				}
			}
			if strings.Contains(src, `\fIVALUE\fR`) {
				t.Errorf("a flag that takes a value names no placeholder in its usage (`NAME`)")
			}
			_, see, _ := strings.Cut(src, "\n.SH \"SEE ALSO\"\n")
			for _, m := range seeAlso.FindAllStringSubmatch(see, -1) {
				name := strings.ReplaceAll(m[1], `\-`, "-")
				if strings.HasPrefix(name, "warc") || strings.HasPrefix(name, "arc2warc") {
					if _, err := os.Stat(filepath.Join(dir, name+".1")); err != nil {
						t.Errorf("SEE ALSO names %s(1), which is not a page of the toolchain", name)
					}
				}
			}
			if groffErr != nil {
				if os.Getenv("WARCDEDUP_REQUIRE_GROFF") != "" {
					t.Fatalf("groff: %v", groffErr)
				}
				t.Skip("groff is not installed (Debian's groff-base): the page was not formatted")
			}
			cmd := exec.Command(groff, "-man", "-Tutf8", "-wall", filepath.Join(dir, in.page()+".1"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || stderr.Len() > 0 {
				t.Errorf("groff: %v\n%s", err, stderr.String())
			}
			// grotty prints bold as overstrikes: "E\bE".
			if text := overstrike.ReplaceAllString(string(out), ""); !strings.Contains(text, "\nEXIT STATUS\n") {
				t.Errorf("groff's output has no EXIT STATUS:\n%s", out)
			}
		})
	}
}

var overstrike = regexp.MustCompile(".\b")

// unescape undoes cmdutil's roff escapes.
var unescape = strings.NewReplacer(`\-`, "-", `\(aq`, "'", `\(ga`, "`", `\(ha`, "^", `\(ti`, "~", `\e`, `\`, `\&`, "")

// TestManPagesMachineIndependent proves that the man pages and the help
// show no default taken from the machine that ran them: written again
// with one CPU (taskset), another home, temporary directory, user and
// working directory, they are the same byte for byte.
func TestManPagesMachineIndependent(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Log("one CPU: the CPU count cannot vary, the environment still does")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Fatalf("taskset (util-linux): %v", err)
	}
	other := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + other, "TMPDIR=" + other, "USER=nobody", "LOGNAME=nobody", "LC_ALL=C"}
	here := manPages(t, nil)
	there := manPages(t, env, taskset, "-c", "0")
	entries, err := os.ReadDir(here)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(here, e.Name()))
		b, err := os.ReadFile(filepath.Join(there, e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs with one CPU and another environment: %v\n%s", e.Name(), err, firstLineDifference(a, b))
		}
	}
	for _, in := range invocations(t) {
		args := append(strings.Fields(in.command), "--help")
		a, _ := exec.Command(filepath.Join(binDir, in.program), args...).Output()
		cmd := exec.Command(taskset, append([]string{"-c", "0", filepath.Join(binDir, in.program)}, args...)...)
		cmd.Env, cmd.Dir = env, other
		b, _ := cmd.Output()
		if !bytes.Equal(a, b) {
			t.Errorf("%s --help differs with one CPU and another environment:\n%s", in, firstLineDifference(a, b))
		}
	}
}

func firstLineDifference(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "  " + la[i] + "\n  " + lb[i]
		}
	}
	return "(one is a prefix of the other)"
}

// TestMakeInstall proves that make install puts every command and every
// man page under DESTDIR, PREFIX and mandir. It installs the commands
// this package built (make -o build: nothing is built again).
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make: %v", err)
	}
	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	cmd := exec.Command("make", "-s", "-C", "..", "-o", "build", "install",
		"BIN="+binDir, "MAN="+filepath.Join(tmp, "man"), "DESTDIR="+root, "PREFIX=/usr", "mandir=/usr/share/man")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, in := range invocations(t) {
		if in.command == "" {
			fi, err := os.Stat(filepath.Join(root, "usr/bin", in.program))
			if err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("command %s: %v", in.program, err)
			}
		}
		if _, err := os.Stat(filepath.Join(root, "usr/share/man/man1", in.page()+".1")); err != nil {
			t.Errorf("man page: %v", err)
		}
	}
	if man, err := exec.LookPath("man"); err == nil {
		out, err := exec.Command(man, "-l", filepath.Join(root, "usr/share/man/man1/warcdedup-run.1")).Output()
		if err != nil || !strings.Contains(string(out), "warcdedup run [OPTIONS] COLLECTION...") {
			t.Errorf("man -l warcdedup-run.1: %v\n%s", err, out)
		}
	}
}

// TestBundledShortFlags proves that a bundle of short flags whose last
// takes a value keeps its value, wherever the bundle stands: "-qo FILE"
// after the inputs once made FILE an input and the WARC before it the
// output, renamed over with a manifest.
func TestBundledShortFlags(t *testing.T) {
	coll, _ := generate(t, digest.SHA1)
	entries, err := os.ReadDir(coll)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no generated file: %v", err)
	}
	warc := entries[0].Name()
	cases := []struct{ name, cmd string }{
		{"after the input", "warcsum " + warc + " -qo manifest.txt"},
		{"before the input", "warcsum -qo manifest.txt " + warc},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, err := os.ReadFile(filepath.Join(coll, warc))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(coll, "manifest.txt"), []byte("an older manifest\n"), 0o644)
			_, stderr, code := sh(t, coll, c.cmd)
			after, _ := os.ReadFile(filepath.Join(coll, warc))
			if !bytes.Equal(after, before) {
				t.Fatalf("%s: %s changed (exit %d, %s)", c.cmd, warc, code, stderr)
			}
			m, _ := os.ReadFile(filepath.Join(coll, "manifest.txt"))
			if code != 0 || !strings.HasPrefix(string(m), warc+" ") {
				t.Errorf("%s: exit %d, manifest %.80q; stderr %s", c.cmd, code, m, stderr)
			}
		})
	}
}
