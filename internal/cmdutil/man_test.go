package cmdutil

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestEscape proves that text reaches the page as typed: hyphens as
// hyphen-minus (copied options work), quotes and accents as ASCII, a
// backslash as itself, and a leading dot as text, not a request.
func TestEscape(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"options", "--root DIR", `\-\-root DIR`},
		{"quotes", "'http://h/{file}' `x`", `\(aqhttp://h/{file}\(aq \(gax\(ga`},
		{"backslash", `a\b`, `a\eb`},
		{"accents", "a^b~c", `a\(hab\(tic`},
	}
	for _, tt := range tests {
		if got := escape(tt.in); got != tt.want {
			t.Errorf("%s: escape(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
	if got := escapeLine(".warc files"); got != `\&.warc files` {
		t.Errorf("leading dot: %q", got)
	}
}

// TestText proves that a description laid out for --help becomes filled
// paragraphs, lists and tables, with other indented lines kept as laid
// out (relative indentation too) and a leading dot made text.
func TestText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"paragraphs", "one\ntwo\n\nthree", "one\ntwo\n.PP\nthree\n"},
		{"indented block in a paragraph", "Sort with:\n  LC_ALL=C sort -k1,1\n    -k2,2n\nthen", "Sort with:\n.RS 2\n.nf\nLC_ALL=C sort \\-k1,1\n  \\-k2,2n\n.fi\n.RE\nthen\n"},
		{"block after a blank line", "a\n\n  x", "a\n.PP\n.RS 2\n.nf\nx\n.fi\n.RE\n"},
		{"leading dot", ".warc files", "\\&.warc files\n"},
		{"table, filled", "One mode:\n\n  -c N     cut into N\n           parts\n  --hosts  split by host", "One mode:\n.PP\n.RS 2\n.PD 0\n.TP 9\n\\-c N\ncut into N parts\n.TP 9\n\\-\\-hosts\nsplit by host\n.PD\n.RE\n"},
		{"list, filled", "Unless\n  - one\n    more\n  - two", "Unless\n.RS 2\n.PD 0\n.IP \\- 2\none more\n.IP \\- 2\ntwo\n.PD\n.RE\n"},
		{"one line with two spaces is no table", "  ls x   # y", ".RS 2\n.nf\nls x   # y\n.fi\n.RE\n"},
		{"a line out of column is no table", "  a    b\n  cc  d", ".RS 2\n.nf\na    b\ncc  d\n.fi\n.RE\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		w := &roffWriter{w: bufio.NewWriter(&b)}
		w.text(tt.in)
		w.w.Flush()
		if b.String() != tt.want {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", tt.name, b.String(), tt.want)
		}
	}
}

// TestSynopsisRoff proves that usage lines set options in bold and
// placeholders in italics, and leave the rest as typed.
func TestSynopsisRoff(t *testing.T) {
	tests := []struct{ in, want string }{
		{"[OPTIONS] [FILE|DIR|-]...", `[\fIOPTIONS\fR] [\fIFILE\fR|\fIDIR\fR|\-]...`},
		{"[OPTIONS] --log FILE [INDEX...]", `[\fIOPTIONS\fR] \fB\-\-log\fR \fIFILE\fR [\fIINDEX\fR...]`},
		{"(-c N | -s SIZE)", `(\fB\-c\fR \fIN\fR | \fB\-s\fR \fISIZE\fR)`},
	}
	for _, tt := range tests {
		if got := synopsisRoff(tt.in); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// testApp is a command with a subcommand, documented as Main does.
func testApp(m Manual) (*cli.App, *bytes.Buffer) {
	app := NewApp("tool", "do things", "tool does things.", nil, nil)
	app.Commands = []*cli.Command{{
		Name: "run", Usage: "run things", ArgsUsage: "COLLECTION...",
		Description: "tool run runs.\n\n  step 1\n  step 2",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 7, DefaultText: "the number of CPUs", Usage: "read `N` files at once"},
			&cli.IntFlag{Name: "count", Usage: "cut into `N` parts"},
			&cli.StringFlag{Name: "policy", Value: "replay", Usage: "the `POLICY`"},
			&cli.StringFlag{Name: "bare", Usage: "no placeholder"},
			&cli.StringSliceFlag{Name: "root", Usage: "read under `DIR`"},
			&cli.BoolFlag{Name: "dry-run", Usage: "write nothing"},
		},
		Action: func(c *cli.Context) error { return nil },
	}}
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	Document(app, m)
	return app, &out
}

var testManual = Manual{
	Exit:     map[int]string{ExitOK: "All done.", ExitFatal: "Stopped."},
	Examples: []Example{{Says: "Do it:", Run: "tool run coll"}},
	SeeAlso:  []string{"sort(1)"},
	Commands: map[string]Manual{"run": {
		Exit:     map[int]string{ExitOK: "Ran.", ExitDamaged: "Some refused.", ExitFatal: "Stopped."},
		Examples: []Example{{Says: "Run it:", Run: "tool run -j 2 coll"}},
	}},
}

// TestManPagesOfCommands proves the pages written for an app with a
// command: one each, the command's with its usage line, options (the
// DefaultText, not the value; no default for a flag off until given;
// VALUE for a flag without placeholder), exit statuses and examples, and
// a SEE ALSO naming the app; the app's naming the command's page.
func TestManPagesOfCommands(t *testing.T) {
	app, _ := testApp(testManual)
	dir := t.TempDir()
	if err := app.Run([]string{"tool", "--man-dir", dir}); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	run := read("tool-run.1")
	for _, want := range []string{
		".TH TOOL\\-RUN 1 \"\" \"warcdedup dev\" \"warcdedup manual\"\n",
		"\n.SH NAME\ntool\\-run \\- run things\n",
		"\n.SY \"tool run\"\n[\\fIOPTIONS\\fR] \\fICOLLECTION\\fR...\n.YS\n",
		"\n.SH DESCRIPTION\ntool run runs.\n.PP\n.RS 2\n.nf\nstep 1\nstep 2\n.fi\n.RE\n",
		"\n.TP\n\\fB\\-\\-jobs\\fR, \\fB\\-j\\fR \\fIN\\fR\nRead N files at once. Default: the number of CPUs.\n",
		"\n.TP\n\\fB\\-\\-count\\fR \\fIN\\fR\nCut into N parts.\n",
		"\n.TP\n\\fB\\-\\-policy\\fR \\fIPOLICY\\fR\nThe POLICY. Default: replay.\n",
		"\n\\fB\\-\\-bare\\fR \\fIVALUE\\fR\n",
		"\nRead under DIR. Repeatable.\n",
		"\n.TP\n\\fB\\-\\-dry\\-run\\fR\nWrite nothing.\n",
		"\n.SH \"EXIT STATUS\"\n.TP\n.B 0\nRan.\n.TP\n.B 1\nSome refused.\n.TP\n.B 2\nStopped.\n",
		"\n.SH EXAMPLES\nRun it:\n.PP\n.RS 4\n.EX\ntool run \\-j 2 coll\n.EE\n.RE\n",
		"\n.SH \"SEE ALSO\"\n\\fBtool\\fR(1)\n",
	} {
		if !strings.Contains(run, want) {
			t.Errorf("tool-run.1 lacks\n%s\nin\n%s", want, run)
		}
	}
	top := read("tool.1")
	for _, want := range []string{
		"\n.SY \"tool run\"\n[\\fIOPTIONS\\fR] \\fICOLLECTION\\fR...\n.YS\n",
		"\n.SH COMMANDS\n.TP\n\\fBtool run\\fR\nRun things. See tool\\-run(1).\n",
		"\n.SH \"SEE ALSO\"\n\\fBsort\\fR(1),\n\\fBtool\\-run\\fR(1)\n",
	} {
		if !strings.Contains(top, want) {
			t.Errorf("tool.1 lacks\n%s\nin\n%s", want, top)
		}
	}
}

// TestManualOfNoCommand proves that a manual for a command the app does
// not have (renamed, removed) fails the page generation.
func TestManualOfNoCommand(t *testing.T) {
	m := testManual
	m.Commands = map[string]Manual{"rnu": {}}
	app, _ := testApp(m)
	err := app.Run([]string{"tool", "--man-dir", t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `"rnu"`) {
		t.Errorf("got %v, want an error naming rnu", err)
	}
}

// TestHelpAndUsage proves the help of an app and of its command (usage
// lines with operands, exit statuses, examples; status 0), and that a
// missing or unknown command or a wrong flag of a command is a usage
// error (status 2) that prints no help.
func TestHelpAndUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		out    []string
	}{
		{"app help", []string{"tool", "--help"}, ExitOK, []string{"USAGE:\n   tool run [OPTIONS] COLLECTION...\n", "\nOPTIONS:\n", "\nEXIT STATUS:\n   0  All done.\n   2  Stopped.\n", "\nEXAMPLES:\n   Do it:\n     tool run coll\n"}},
		{"command help", []string{"tool", "run", "--help"}, ExitOK, []string{"USAGE:\n   tool run [OPTIONS] COLLECTION...\n", "   1  Some refused.\n", "     tool run -j 2 coll\n"}},
		{"no command", []string{"tool"}, ExitFatal, nil},
		{"unknown command", []string{"tool", "rnu"}, ExitFatal, nil},
		{"wrong flag of a command", []string{"tool", "run", "--nope"}, ExitFatal, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, out := testApp(testManual)
			err := app.Run(tt.args)
			var ec cli.ExitCoder
			status := ExitOK
			if errors.As(err, &ec) {
				status = ec.ExitCode()
			} else if err != nil {
				status = -1
			}
			if status != tt.status {
				t.Errorf("status %d (%v), want %d", status, err, tt.status)
			}
			if tt.out == nil && out.Len() > 0 {
				t.Errorf("printed %q", out.String())
			}
			for _, want := range tt.out {
				if !strings.Contains(out.String(), want) {
					t.Errorf("no %q in\n%s", want, out.String())
				}
			}
		})
	}
}
