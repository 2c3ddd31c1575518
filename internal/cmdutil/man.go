package cmdutil

import (
	"bufio"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// Manual is what a command's man page and help say beyond its definition
// (name, usage, operands, description and flags, from which the rest of
// the page is generated, so that the page cannot drift from the flags).
// Each command keeps its Manual next to its definition and hands it to
// Main.
type Manual struct {
	// Exit says what each exit status means for this command: ExitOK,
	// ExitDamaged (when the command can end with it), ExitFatal.
	Exit map[int]string
	// Examples are real command lines, as a user runs them.
	Examples []Example
	// SeeAlso names related pages, as "warccollres(1)" or "sort(1)".
	SeeAlso []string
	// Commands are the manuals of the app's commands, by command name.
	// Each command gets a page of its own, NAME-COMMAND(1), as git's do.
	Commands map[string]Manual
}

// Example is a command line, or a few shell lines, and what they do.
type Example struct {
	Says string // a sentence: what the lines do
	Run  string // the shell lines, as typed
}

// ManPage is one generated page: Name is the page's name (warcsum,
// warcdedup-run), Source its roff text.
type ManPage struct {
	Name   string
	Source string
}

// manSource is the raw definition of one page: what the app or command
// said before Main added the exit statuses and examples to its help.
type manSource struct {
	name        string // page name: warcsum, warcdedup-run
	invocation  string // what the user types: warcsum, warcdedup run
	usage       string
	argsUsage   string
	description string
	flags       []cli.Flag
	version     bool // the page documents --version
	commands    []*cli.Command
	// subcommands of a command (warcdedup index verify, ...) are written
	// on its page, each with its usage, description and options.
	subcommands []*cli.Command
	manual      Manual
}

// manPages returns the page of the app and one per visible command. A
// Manual naming a command the app does not have is an error: its text
// was written for something that is gone or renamed.
func manPages(app *cli.App, descriptions map[*cli.Command]string, m Manual) ([]ManPage, error) {
	for name := range m.Commands {
		if app.Command(name) == nil {
			return nil, fmt.Errorf("the manual has a page for %q, which is not a command of %s", name, app.Name)
		}
	}
	commands := visibleCommands(app)
	top := manSource{
		name: app.Name, invocation: app.Name, usage: app.Usage, argsUsage: app.ArgsUsage,
		description: descriptions[nil], flags: app.Flags, version: !app.HideVersion,
		commands: commands, manual: m,
	}
	pages := []ManPage{{Name: top.name, Source: top.roff(app.Version)}}
	for _, c := range commands {
		s := manSource{
			name: app.Name + "-" + c.Name, invocation: app.Name + " " + c.Name, usage: c.Usage,
			argsUsage: c.ArgsUsage, description: descriptions[c], flags: c.Flags, manual: m.Commands[c.Name],
		}
		for _, sc := range c.Subcommands {
			if !sc.Hidden && sc.Name != "help" {
				s.subcommands = append(s.subcommands, sc)
			}
		}
		s.manual.SeeAlso = append([]string{app.Name + "(1)"}, s.manual.SeeAlso...)
		pages = append(pages, ManPage{Name: s.name, Source: s.roff(app.Version)})
	}
	return pages, nil
}

func visibleCommands(app *cli.App) []*cli.Command {
	var cs []*cli.Command
	for _, c := range app.Commands {
		if !c.Hidden && c.Name != "help" {
			cs = append(cs, c)
		}
	}
	return cs
}

// usageLines are what follows a command's name in its usage lines: one
// per line of its ArgsUsage (a command used in several ways has several),
// each after "[OPTIONS]".
func usageLines(argsUsage string) []string {
	if argsUsage == "" {
		return []string{"[OPTIONS]"}
	}
	var lines []string
	for _, l := range strings.Split(argsUsage, "\n") {
		lines = append(lines, "[OPTIONS] "+strings.TrimSpace(l))
	}
	return lines
}

// roff writes the page. No date, host name, CPU count or path of the
// build machine goes into it: only the definition and the version.
func (s *manSource) roff(version string) string {
	var b strings.Builder
	w := &roffWriter{w: bufio.NewWriter(&b)}
	w.comment(fmt.Sprintf("%s(1): generated from the definition of %q by its --man; do not edit.", s.name, s.invocation))
	w.macro("TH", strings.ToUpper(s.name), "1", "", "warcdedup "+version, "warcdedup manual")
	// Names of options, headers and files hyphenated at the line's end
	// would read as something else. The man macros turn hyphenation on
	// again at every paragraph, as register HY says; without it, lines are
	// better left ragged than justified with wide gaps.
	w.macro("nr", "HY", "0")
	w.macro("nh")
	w.macro("ad", "l")

	w.macro("SH", "NAME")
	w.line(escape(s.name) + ` \- ` + escape(s.usage))
	w.macro("SH", "SYNOPSIS")
	s.synopsis(w)
	w.macro("SH", "DESCRIPTION")
	w.text(s.description)
	if len(s.commands) > 0 {
		w.macro("SH", "COMMANDS")
		for _, c := range s.commands {
			w.macro("TP")
			w.line(`\fB` + escape(s.invocation+" "+c.Name) + `\fR`)
			w.line(escape(sentence(c.Usage) + " See " + s.invocation + "-" + c.Name + "(1)."))
		}
	}
	if len(s.subcommands) > 0 {
		w.macro("SH", "COMMANDS")
		for _, sc := range s.subcommands {
			w.macro("SS", escape(s.invocation+" "+sc.Name))
			for _, l := range usageLines(sc.ArgsUsage) {
				w.macro("SY", s.invocation+" "+sc.Name)
				w.line(synopsisRoff(l))
				w.macro("YS")
			}
			text := sc.Description
			if text == "" {
				text = sentence(sc.Usage)
			}
			w.text(text)
			for _, f := range sc.Flags {
				if name := f.Names()[0]; visible(f) && name != "help" {
					w.option(f)
				}
			}
		}
	}
	w.macro("SH", "OPTIONS")
	s.options(w)
	w.macro("SH", "EXIT STATUS")
	exits := s.manual.exits()
	for _, status := range slices.Sorted(maps.Keys(exits)) {
		w.macro("TP")
		w.macro("B", strconv.Itoa(status))
		w.line(escape(exits[status]))
	}
	if len(s.manual.Examples) > 0 {
		w.macro("SH", "EXAMPLES")
		s.examples(w)
	}
	see := slices.Clone(s.manual.SeeAlso)
	for _, c := range s.commands {
		see = append(see, s.invocation+"-"+c.Name+"(1)")
	}
	if len(see) > 0 {
		w.macro("SH", "SEE ALSO")
		seeAlso(w, see)
	}
	w.w.Flush()
	return b.String()
}

// synopsis writes the usage lines: the command's, or each of its
// commands'.
func (s *manSource) synopsis(w *roffWriter) {
	if len(s.commands) == 0 {
		for _, l := range usageLines(s.argsUsage) {
			w.macro("SY", s.invocation)
			w.line(synopsisRoff(l))
			w.macro("YS")
		}
		return
	}
	for _, c := range s.commands {
		for _, l := range usageLines(c.ArgsUsage) {
			w.macro("SY", s.invocation+" "+c.Name)
			w.line(synopsisRoff(l))
			w.macro("YS")
		}
	}
	w.macro("SY", s.invocation)
	w.line(`\fB\-\-help\fR | \fB\-\-version\fR`)
	w.macro("YS")
}

// options writes the visible flags, then --help and --version, which
// urfave/cli adds only when it runs the command.
func (s *manSource) options(w *roffWriter) {
	for _, f := range s.flags {
		if name := f.Names()[0]; !visible(f) || name == "help" || name == "version" {
			continue
		}
		w.option(f)
	}
	w.macro("TP")
	w.line(`\fB\-\-help\fR, \fB\-h\fR`)
	w.line("Print the help and exit with status 0.")
	if s.version {
		w.macro("TP")
		w.line(`\fB\-\-version\fR`)
		w.line("Print the version and exit with status 0.")
	}
}

// examples writes each example's sentence, then its lines as typed.
func (s *manSource) examples(w *roffWriter) {
	for i, e := range s.manual.Examples {
		if i > 0 {
			w.macro("PP")
		}
		w.line(escape(e.Says))
		w.macro("PP")
		w.macro("RS", "4")
		w.macro("EX")
		for _, l := range strings.Split(strings.TrimRight(e.Run, "\n"), "\n") {
			w.line(escapeLine(l))
		}
		w.macro("EE")
		w.macro("RE")
	}
}

// seeAlso writes references "name(1)" as a list, names in bold.
func seeAlso(w *roffWriter, refs []string) {
	for i, ref := range refs {
		sep := ","
		if i == len(refs)-1 {
			sep = ""
		}
		name, section, ok := strings.Cut(strings.TrimSuffix(ref, ")"), "(")
		if !ok {
			w.line(escape(ref) + sep)
			continue
		}
		w.line(`\fB` + escape(name) + `\fR(` + escape(section) + `)` + sep)
	}
}

// genericExit is what the exit statuses mean when a command says nothing
// more precise.
var genericExit = map[int]string{
	ExitOK:      "Everything was read and written.",
	ExitDamaged: "The run finished, but some input was damaged or could not be read; each case is reported on standard error, and the output is complete for everything else.",
	ExitFatal:   "The run stopped: bad usage, bad input, or output that could not be written. No output file is left behind.",
}

// exits is what m says of the exit statuses, or what they mean generally.
func (m *Manual) exits() map[int]string {
	if len(m.Exit) == 0 {
		return genericExit
	}
	return m.Exit
}

func visible(f cli.Flag) bool {
	v, ok := f.(cli.VisibleFlag)
	return !ok || v.IsVisible()
}

// sentence makes a usage phrase ("list the digests") a sentence.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// valuePlaceholder is the placeholder a flag that takes a value is shown
// with when its usage names none in backquotes; the tests refuse it.
const valuePlaceholder = "VALUE"

// option writes a flag's entry: names, placeholder, usage and default.
func (w *roffWriter) option(f cli.Flag) {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return
	}
	placeholder, usage := unquoteUsage(df.GetUsage())
	var names []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			names = append(names, `\fB\-`+escape(n)+`\fR`)
		} else {
			names = append(names, `\fB\-\-`+escape(n)+`\fR`)
		}
	}
	tag := strings.Join(names, ", ")
	if df.TakesValue() {
		if placeholder == "" {
			placeholder = valuePlaceholder
		}
		tag += ` \fI` + escape(placeholder) + `\fR`
	}
	w.macro("TP")
	w.line(tag)
	text := sentence(usage)
	if df.TakesValue() {
		// A 0 or empty default is a flag that is off until given.
		if d := defaultText(df); d != "" && d != "0" {
			text += " Default: " + d + "."
		}
	}
	if s, ok := f.(cli.DocGenerationSliceFlag); ok && s.IsSliceFlag() && !strings.Contains(text, "repeatable") {
		text += " Repeatable."
	}
	w.line(escape(text))
}

// defaultText is the default a flag shows: its DefaultText when set (what
// a default taken from the machine, such as the number of CPUs, must
// have), else its value, unquoted.
func defaultText(f cli.DocGenerationFlag) string {
	d := f.GetDefaultText()
	if u, err := strconv.Unquote(d); err == nil {
		d = u
	}
	return d
}

// unquoteUsage splits a usage into the `PLACEHOLDER` it names, if any,
// and the usage without the backquotes (as urfave/cli does for --help).
func unquoteUsage(usage string) (string, string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name := usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+2+j:]
}

// roffWriter writes man(7) source.
type roffWriter struct {
	w *bufio.Writer
	// para is whether the current paragraph has text, so that a new one
	// needs .PP.
	para bool
}

func (w *roffWriter) comment(s string) { fmt.Fprintf(w.w, ".\\\" %s\n", s) }

// macro writes a request; arguments are escaped and quoted as needed.
func (w *roffWriter) macro(name string, args ...string) {
	w.w.WriteString("." + name)
	for _, a := range args {
		a = escape(a)
		if a == "" || strings.ContainsAny(a, " \t") {
			a = `"` + strings.ReplaceAll(a, `"`, `\(dq`) + `"`
		}
		w.w.WriteString(" " + a)
	}
	w.w.WriteByte('\n')
	w.para = false
}

// line writes one line of roff text, already escaped.
func (w *roffWriter) line(s string) {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	w.w.WriteString(s + "\n")
	w.para = true
}

// text writes a description as laid out for --help: paragraphs between
// blank lines are filled; an indented block is a list or table (see
// listItems), filled to the reader's width, or else (a layout, a command)
// kept as it is, indented.
func (w *roffWriter) text(s string) {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	started := false // a paragraph of this text has begun
	for i := 0; i < len(lines); {
		l := strings.TrimRight(lines[i], " \t")
		switch {
		case l == "":
			started = false
			i++
		case l[0] == ' ' || l[0] == '\t':
			j := i
			for j < len(lines) && strings.TrimSpace(lines[j]) != "" && (lines[j][0] == ' ' || lines[j][0] == '\t') {
				j++
			}
			block := make([]string, j-i)
			indent := commonIndent(lines[i:j])
			for k, b := range lines[i:j] {
				block[k] = strings.TrimRight(b[indent:], " \t")
			}
			if !started && w.para {
				w.macro("PP")
			}
			w.macro("RS", "2")
			if items, col, ok := listItems(block); ok {
				// As compact as in --help: no blank line between entries.
				w.macro("PD", "0")
				for _, it := range items {
					if it.tag == "-" {
						w.macro("IP", "-", strconv.Itoa(col))
					} else {
						w.macro("TP", strconv.Itoa(col))
						w.line(escape(it.tag))
					}
					w.line(escape(it.text))
				}
				w.macro("PD")
			} else {
				w.macro("nf")
				for _, b := range block {
					w.line(escapeLine(b))
				}
				w.macro("fi")
			}
			w.macro("RE")
			started, w.para = true, true
			i = j
		default:
			if !started && w.para {
				w.macro("PP")
			}
			w.line(escape(l))
			started = true
			i++
		}
	}
}

// listItem is an entry of a list or table in a description: its tag
// ("-", "1. hash", "replay", "-c N, -s SIZE") and its text.
type listItem struct{ tag, text string }

// tagged is a table row: a tag, two or more spaces, the text.
var tagged = regexp.MustCompile(`^(\S(?:.*?\S)?)( {2,})(\S.*)$`)

// listItems reads block (without its common indentation) as a list or
// table: each entry a line starting "- " or a tag and two spaces, its
// text continued on lines indented to where its text starts, all texts
// starting in one column col. A block of one line, or with a line that
// fits none of it, is no list (ok false): it is a layout to keep as it is.
func listItems(block []string) (items []listItem, col int, ok bool) {
	col = -1
	continued := false
	for _, l := range block {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if indent > 0 {
			if len(items) == 0 || indent != col {
				return nil, 0, false
			}
			items[len(items)-1].text += " " + strings.TrimSpace(l)
			continued = true
			continue
		}
		var it listItem
		at := 0
		if rest, found := strings.CutPrefix(l, "- "); found {
			it = listItem{tag: "-", text: strings.TrimLeft(rest, " ")}
			at = len(l) - len(it.text)
		} else if m := tagged.FindStringSubmatch(l); m != nil {
			it = listItem{tag: m[1], text: m[3]}
			at = len(m[1]) + len(m[2])
		} else {
			return nil, 0, false
		}
		if col >= 0 && at != col {
			return nil, 0, false
		}
		col = at
		items = append(items, it)
	}
	return items, col, len(items) > 1 || continued
}

func commonIndent(lines []string) int {
	n := -1
	for _, l := range lines {
		k := len(l) - len(strings.TrimLeft(l, " \t"))
		if n < 0 || k < n {
			n = k
		}
	}
	return max(n, 0)
}

// escaper spells the characters roff would otherwise take as requests or
// typeset as something else: a backslash, a hyphen-minus (which groff
// may print as a hyphen, breaking copied options), quotes and accents
// (printed as typographic quotes and modifier letters in UTF-8).
var escaper = strings.NewReplacer(
	`\`, `\e`,
	`-`, `\-`,
	`'`, `\(aq`,
	"`", `\(ga`,
	`^`, `\(ha`,
	`~`, `\(ti`,
)

func escape(s string) string { return escaper.Replace(s) }

// escapeLine escapes a line that stands as it is (no-fill): spaces at its
// start stay, a leading dot cannot start a request.
func escapeLine(s string) string {
	s = escape(s)
	if strings.HasPrefix(s, ".") {
		s = `\&` + s
	}
	return s
}

// synopsisToken is a long or short option, or an operand placeholder
// (a word in capitals), in a usage line.
var synopsisToken = regexp.MustCompile(`--?[a-z][a-z0-9-]*|\b[A-Z][A-Z0-9_-]*[A-Z0-9]\b|\b[A-Z]\b`)

// synopsisRoff sets a usage line: options in bold, placeholders in italics.
func synopsisRoff(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range synopsisToken.FindAllStringIndex(s, -1) {
		b.WriteString(escape(s[last:m[0]]))
		tok := s[m[0]:m[1]]
		if tok[0] == '-' {
			b.WriteString(`\fB` + escape(tok) + `\fR`)
		} else {
			b.WriteString(`\fI` + escape(tok) + `\fR`)
		}
		last = m[1]
	}
	b.WriteString(escape(s[last:]))
	return b.String()
}
