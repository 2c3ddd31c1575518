package cmdutil

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"warcdedup/atomicfile"
)

// The hidden flags that print the command's man page, or write the pages
// of the command and of each of its commands into a directory (make man).
var (
	manFlag    = &cli.BoolFlag{Name: "man", Hidden: true, Usage: "print the man page"}
	manDirFlag = &cli.StringFlag{Name: "man-dir", Hidden: true, Usage: "write the man pages, NAME.1 and NAME-COMMAND.1, into `DIR`"}
)

// Document gives app the toolchain's help conventions, from its
// definition and m: usage lines with the operands (ArgsUsage; one line per
// way of using the command), the exit statuses and examples of m at the
// end of each help, usage errors of commands reported like the app's (exit
// status 2, no help on standard output), a usage error for an app with
// commands run without one, and the hidden --man and --man-dir. Main
// calls it; tests call it on apps of their own.
func Document(app *cli.App, m Manual) {
	descriptions := map[*cli.Command]string{nil: app.Description}
	commands := visibleCommands(app)
	if len(commands) == 0 {
		app.UsageText = usageText(app.Name, app.ArgsUsage)
	} else {
		var lines []string
		for _, c := range commands {
			lines = append(lines, usageText(app.Name+" "+c.Name, c.ArgsUsage))
		}
		app.UsageText = strings.Join(lines, "\n")
	}
	app.CustomAppHelpTemplate = helpTemplate(strings.ReplaceAll(cli.AppHelpTemplate, "GLOBAL OPTIONS:", "OPTIONS:"), m)
	for _, c := range app.Commands {
		descriptions[c] = c.Description
		c.UsageText = usageText(app.Name+" "+c.Name, c.ArgsUsage)
		c.CustomHelpTemplate = helpTemplate(cli.CommandHelpTemplate, m.Commands[c.Name])
		documentCommand(app.Name+" "+c.Name, c)
	}
	app.Flags = append(app.Flags, manFlag, manDirFlag)
	// "(default: false)" after every switch says nothing.
	for _, flags := range allFlags(app) {
		for _, f := range flags {
			if b, ok := f.(*cli.BoolFlag); ok {
				b.DisableDefaultText = true
			}
			if j, ok := f.(*cli.IntFlag); ok && j.Name == "jobs" && j.Action == nil {
				j.Action = checkJobs
			}
		}
	}
	action := app.Action
	app.Action = func(c *cli.Context) error {
		switch {
		case c.Bool("man") || c.IsSet("man-dir"):
			pages, err := manPages(c.App, descriptions, m)
			if err != nil {
				return err
			}
			if c.Bool("man") {
				_, err := fmt.Fprint(c.App.Writer, pages[0].Source)
				return err
			}
			return writeManPages(c.String("man-dir"), pages)
		case action != nil:
			return action(c)
		case c.NArg() > 0:
			return Usage("%q is not a command of %s: %s%s (see %s --help)", c.Args().First(), app.Name, commandNames(commands),
				commandHint(c.Args().First(), commands), app.Name)
		default:
			return Usage("name a command: %s (see %s --help)", commandNames(commands), app.Name)
		}
	}
}

// documentCommand gives command c, invoked as invocation, and its
// subcommands the app's conventions: usage errors with exit status 2 on
// stderr (and the flag meant, when one was misspelt), no help command, and
// for a command of subcommands (warcdedup index) a usage error when none,
// or an unknown one, is named.
func documentCommand(invocation string, c *cli.Command) {
	c.HideHelpCommand = true
	if c.OnUsageError == nil {
		c.OnUsageError = usageError(invocation, func() []cli.Flag { return c.Flags }, func() []*cli.Command { return c.Subcommands })
	}
	if len(c.Subcommands) == 0 {
		return
	}
	subs := slices.DeleteFunc(slices.Clone(c.Subcommands), func(s *cli.Command) bool { return s.Hidden })
	if c.Action == nil {
		c.Action = func(ctx *cli.Context) error {
			if ctx.NArg() > 0 {
				return Usage("%q is not a command of %s: %s%s (see %s --help)", ctx.Args().First(), invocation, commandNames(subs),
					commandHint(ctx.Args().First(), subs), invocation)
			}
			return Usage("name a command: %s (see %s --help)", commandNames(subs), invocation)
		}
	}
	for _, sc := range c.Subcommands {
		if sc.UsageText == "" {
			sc.UsageText = usageText(invocation+" "+sc.Name, sc.ArgsUsage)
		}
		documentCommand(invocation+" "+sc.Name, sc)
	}
}

// commandHint is "; did you mean run?" for a misspelt command name.
func commandHint(typed string, commands []*cli.Command) string {
	var names []string
	for _, c := range commands {
		names = append(names, c.Names()...)
	}
	if best := closest(typed, names); len(best) > 0 {
		return fmt.Sprintf("; did you mean %s?", strings.Join(best, " or "))
	}
	return ""
}

func allFlags(app *cli.App) [][]cli.Flag {
	flags := [][]cli.Flag{app.Flags}
	var add func(cs []*cli.Command)
	add = func(cs []*cli.Command) {
		for _, c := range cs {
			flags = append(flags, c.Flags)
			add(c.Subcommands)
		}
	}
	add(app.Commands)
	return flags
}

func commandNames(cs []*cli.Command) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// usageText is the usage lines of a command invoked as invocation.
func usageText(invocation, argsUsage string) string {
	var lines []string
	for _, l := range usageLines(argsUsage) {
		lines = append(lines, invocation+" "+l)
	}
	return strings.Join(lines, "\n")
}

// writeManPages writes each page into dir as NAME.1, whole or not at all.
func writeManPages(dir string, pages []ManPage) error {
	if dir == "" {
		return errors.New("--man-dir: name the directory")
	}
	for _, p := range pages {
		f, err := atomicfile.Create(filepath.Join(dir, p.Name+".1"), 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write([]byte(p.Source)); err != nil {
			f.Abort()
			return err
		}
		if err := f.CommitRenamed(); err != nil {
			return err
		}
	}
	return nil
}

// helpTemplate is base with the exit statuses and examples of m after
// the options.
func helpTemplate(base string, m Manual) string {
	var b strings.Builder
	b.WriteString("\nEXIT STATUS:\n")
	exits := m.exits()
	for _, status := range slices.Sorted(maps.Keys(exits)) {
		b.WriteString(wrap(exits[status], "   "+strconv.Itoa(status)+"  ", "      ", helpWidth))
	}
	if len(m.Examples) > 0 {
		b.WriteString("\nEXAMPLES:\n")
		for i, e := range m.Examples {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(wrap(e.Says, "   ", "   ", helpWidth))
			for _, l := range strings.Split(strings.TrimRight(e.Run, "\n"), "\n") {
				b.WriteString("     " + l + "\n")
			}
		}
	}
	// The text is data, not template: its braces ({file}) stay braces.
	text := strings.ReplaceAll(b.String(), "{{", `{{"{{"}}`)
	return strings.TrimRight(base, "\n") + "\n" + text
}

// helpWidth is the width the help's own paragraphs are wrapped at.
const helpWidth = 79

// wrap fills s into lines of at most width columns, the first starting
// with first, the others with rest.
func wrap(s string, first, rest string, width int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(s) {
		if !empty && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

// maxJobs bounds -j: a command allocates for each job before any work
// (-j 100000000 took gigabytes and never began), and no host has cores
// for more files at once.
const maxJobs = 1024

// checkJobs refuses a -j beyond maxJobs (a usage error, exit status 2).
func checkJobs(_ *cli.Context, n int) error {
	if n > maxJobs {
		return Usage("-j %d: at most %d at once", n, maxJobs)
	}
	return nil
}
