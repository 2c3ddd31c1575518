// Package cmdutil holds what every command of the toolchain does the same
// way: common flags, exit statuses, output written atomically, warnings and
// a progress line on a terminal. Commands stay thin: flags and wiring.
package cmdutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
	"warcdedup/source"
)

// Version is set at build time with -ldflags "-X warcdedup/internal/cmdutil.Version=...".
var Version = "dev"

// Exit statuses shared by all commands.
const (
	ExitOK      = 0
	ExitDamaged = 1 // the run finished, but some input was damaged or unreadable (reported)
	ExitFatal   = 2 // bad usage, bad input that stops the run, or output that could not be written
)

// Flags every command has.
var (
	QuietFlag   = &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only errors (what makes the exit status non-zero): no warnings, progress or summary"}
	VerboseFlag = &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print more detail"}
	InputFlag   = &cli.StringFlag{Name: "input", Aliases: []string{"i"}, Value: "-", Usage: "read from `FILE` (- for standard input)"}
	OutputFlag  = &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "-", Usage: "write to `FILE` (- for standard output); a file is written under a temporary name and renamed when complete"}
	// profileFlag writes a CPU profile, for measuring the hot loops.
	profileFlag = &cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile to `FILE`"}
	// traceFlag writes an execution trace, for finding where cores idle.
	traceFlag = &cli.StringFlag{Name: "trace", Hidden: true, Usage: "write an execution trace to `FILE`"}
)

// NewApp returns a cli.App with the toolchain's conventions: --version
// (without -v, which is --verbose), --help, and errors turned into exit
// statuses. Main adds the help's usage lines, exit statuses and examples,
// and the hidden --man and --man-dir that print and write the man pages.
func NewApp(name, usage, description string, flags []cli.Flag, action cli.ActionFunc) *cli.App {
	app := &cli.App{
		Name:                   name,
		Usage:                  usage,
		Description:            description,
		Version:                Version,
		Flags:                  append(flags, profileFlag, traceFlag),
		UseShortOptionHandling: true,
		HideHelpCommand:        true,
		// Repeatable flags (--root, --originals) take each value whole:
		// a directory named "coll,new" is one root, not "coll" and "new".
		DisableSliceFlagSeparator: true,
		// A wrong flag must not print help to standard output, where a
		// pipeline's next stage (or a redirected manifest) would take it
		// for data.
		ExitErrHandler: func(c *cli.Context, err error) {},
	}
	app.OnUsageError = usageError(name, func() []cli.Flag { return app.Flags }, func() []*cli.Command { return app.Commands })
	app.Action = action
	// The profile and the trace are started before any action, a
	// subcommand's too (warcdedup --cpuprofile FILE run ...), and stopped
	// after it.
	var profile, traced *os.File
	app.Before = func(c *cli.Context) error {
		if p := c.String("cpuprofile"); p != "" {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return err
			}
			profile = f
		}
		if p := c.String("trace"); p != "" {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			if err := trace.Start(f); err != nil {
				f.Close()
				return err
			}
			traced = f
		}
		return nil
	}
	app.After = func(c *cli.Context) error {
		var err error
		if traced != nil {
			trace.Stop()
			err = traced.Close()
		}
		if profile != nil {
			pprof.StopCPUProfile()
			err = errors.Join(err, profile.Close())
		}
		return err
	}
	return app
}

// usageError reports a command line urfave/cli could not parse, with the
// flag meant when one was misspelt (flags are the command's).
// usageError reports a command line urfave/cli could not parse, with the
// flag meant when one was misspelt, or the commands a flag belongs to
// when it is one of the subcommands' (flags and commands are the
// command's).
func usageError(invocation string, flags func() []cli.Flag, commands func() []*cli.Command) cli.OnUsageErrorFunc {
	return func(c *cli.Context, err error, isSubcommand bool) error {
		hint := ""
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			if of := commandsWith(name, commands()); len(of) > 0 {
				return Usage("--%s is an option of %s %s: name the command (see %s --help)", name, invocation, strings.Join(of, "|"), invocation)
			}
			hint = didYouMean(name, flags())
		}
		return Usage("%v%s (see %s --help)", err, hint, invocation)
	}
}

// commandsWith names the commands that define the flag name.
func commandsWith(name string, commands []*cli.Command) []string {
	var out []string
	for _, c := range commands {
		if _, ok := valueFlags(c.Flags)[name]; ok && !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

// Main runs app with the process arguments and exits with its status. m
// is what the command's help and man page say beyond its definition.
func Main(app *cli.App, m Manual) {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version", DisableDefaultText: true}
	Document(app, m)
	err := app.Run(reorder(app, os.Args))
	os.Exit(Status(app.Name, err))
}

// Status prints err, if any, and returns the exit status for it.
func Status(name string, err error) int {
	if err == nil {
		return ExitOK
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(os.Stderr, "%s: %s\n", name, msg)
		}
		return ec.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	return ExitFatal
}

// Usage is the error of a command run the wrong way: exit status 2.
func Usage(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), ExitFatal)
}

// Damaged is the error a command returns when it finished but reported
// damaged or unreadable input.
func Damaged(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), ExitDamaged)
}

// Output is where a command writes its result: standard output, or a file
// that only appears under its name when Commit is called.
type Output struct {
	io.Writer
	file    *atomicfile.File
	special *os.File      // a device or FIFO written in place
	stream  *streamWriter // standard output: Abort marks what went out
	done    bool          // committed or aborted
}

// IncompleteMark ends standard output that a command stopped writing
// (Abort): a line that no stage reads as a manifest line, without a line
// feed. What went out before it cannot be taken for a whole manifest by
// the next stage of a pipeline, which does not see the exit status: the
// output stops where a batch of lines ended as often as not.
const IncompleteMark = manifest.IncompleteMark

// streamWriter is standard output, remembering whether anything was
// written and its last byte.
type streamWriter struct {
	w     io.Writer
	wrote bool
	last  byte
}

func (s *streamWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if n > 0 {
		s.wrote, s.last = true, p[n-1]
	}
	return n, err
}

// newStreamOutput is the Output to standard output w.
func newStreamOutput(w io.Writer) *Output {
	s := &streamWriter{w: w}
	return &Output{Writer: s, stream: s}
}

// CreateOutput opens name for writing; "-" or "" is standard output. A
// name that is, or links to, something other than a regular file (a
// device such as /dev/stdout or /dev/null, a FIFO) is written in place, as
// standard output is: a file renamed over it would replace the device (for
// the whole machine, run as root) or leave the FIFO's reader waiting. A
// name that is standard output's file (-o /dev/stdout redirected to a
// file) is standard output.
func CreateOutput(name string) (*Output, error) {
	if name == "" || name == "-" {
		return newStreamOutput(os.Stdout), nil
	}
	fi, err := os.Stat(name)
	if err == nil && isStandardOutput(fi) {
		// -o /dev/stdout with standard output redirected to a file: the
		// name links (through /proc/self/fd/1) to a regular file, but a
		// file renamed over it would replace the /dev/stdout link and
		// leave the redirected file empty.
		return newStreamOutput(os.Stdout), nil
	}
	if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		// Its reader (a FIFO's: the next stage) does not see the exit
		// status either: Abort marks it as it does standard output.
		s := &streamWriter{w: f}
		return &Output{Writer: s, stream: s, special: f}, nil
	}
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return nil, err
	}
	return &Output{Writer: f, file: f}, nil
}

// isStandardOutput reports whether fi is the file standard output writes
// to.
func isStandardOutput(fi os.FileInfo) bool {
	so, err := os.Stdout.Stat()
	return err == nil && os.SameFile(fi, so)
}

// Commit makes a file output appear under its name. A directory that
// could not be synced after the rename is not an error here: the output
// is complete under its name.
func (o *Output) Commit() error {
	o.done = true
	if o.special != nil {
		return o.special.Close()
	}
	if o.file == nil {
		return nil
	}
	if err := o.file.CommitRenamed(); err != nil {
		return err
	}
	return nil
}

// Abort removes an uncommitted file output, and ends uncommitted standard
// output, or a device or FIFO, that has lines with IncompleteMark; it can
// be deferred.
func (o *Output) Abort() {
	if o.stream != nil && !o.done && o.stream.wrote {
		mark := IncompleteMark
		if o.stream.last != '\n' {
			mark = "\n" + mark
		}
		io.WriteString(o.stream.w, mark)
	}
	o.done = true
	if o.special != nil {
		o.special.Close()
	}
	if o.file != nil {
		o.file.Abort()
	}
}

// OpenInput opens name for reading; "-" or "" is standard input.
func OpenInput(name string) (io.ReadCloser, string, error) {
	if name == "" || name == "-" {
		return io.NopCloser(os.Stdin), "-", nil
	}
	f, err := os.Open(name)
	return f, name, err
}

// Log prints warnings and the summary to stderr, safely from many
// goroutines. Warnings and errors start with the program's name, so that
// in a pipeline it is clear who spoke.
type Log struct {
	mu      sync.Mutex
	w       io.Writer
	name    string
	Quiet   bool
	Verbose bool
	onLine  func() // clears a progress line before a message
}

// NewLog returns a Log to stderr.
func NewLog(c *cli.Context) *Log {
	return &Log{w: os.Stderr, name: c.App.Name, Quiet: c.Bool("quiet"), Verbose: c.Bool("verbose")}
}

// Warn prints err as a warning, unless quiet.
func (l *Log) Warn(err error) {
	if !l.Quiet {
		l.print("warning: ", err)
	}
}

// Error prints err as an error, quiet or not: errors are what make the
// exit status non-zero, so they are always said.
func (l *Log) Error(err error) {
	l.print("error: ", err)
}

func (l *Log) print(prefix string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.onLine != nil {
		l.onLine()
	}
	if l.name != "" {
		fmt.Fprintf(l.w, "%s: %s%v\n", l.name, prefix, err)
		return
	}
	fmt.Fprintf(l.w, "%s%v\n", prefix, err)
}

// Printf prints a line unless quiet.
func (l *Log) Printf(format string, args ...any) {
	if l.Quiet {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.onLine != nil {
		l.onLine()
	}
	fmt.Fprintf(l.w, format, args...)
}

// Writer is the Log's stream, for summaries.
func (l *Log) Writer() io.Writer { return l.w }

// IsTerminal reports whether f is a terminal (a character device).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// StartProgress redraws a progress line on stderr twice a second while
// stderr is a terminal and the log is not quiet; status returns the line.
// The returned stop function erases the line.
func (l *Log) StartProgress(status func(elapsed time.Duration) string) (stop func()) {
	if l.Quiet || !IsTerminal(os.Stderr) {
		return func() {}
	}
	start := time.Now()
	clear := func() { fmt.Fprint(l.w, "\r\033[K") }
	l.mu.Lock()
	l.onLine = clear
	l.mu.Unlock()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				l.mu.Lock()
				fmt.Fprintf(l.w, "\r\033[K%s", status(time.Since(start)))
				l.mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		l.mu.Lock()
		clear()
		l.onLine = nil
		l.mu.Unlock()
	}
}

// Bytes formats a byte count for people: 1.5 GB.
func Bytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// Locations reads the file of the --locations flag, if given.
func Locations(c *cli.Context) (map[string]string, error) {
	name := c.String("locations")
	if name == "" {
		return nil, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return source.ReadLocations(f, name)
}

// Locator builds the source.Locator of the --root, --locations,
// --url-template, --per-host, --retries and --timeout flags.
func Locator(c *cli.Context) (*source.Locator, error) {
	loc := &source.Locator{Roots: c.StringSlice("root"), URLTemplate: c.String("url-template")}
	var err error
	if loc.Locations, err = Locations(c); err != nil {
		return nil, err
	}
	if len(loc.Roots) == 0 && loc.Locations == nil && loc.URLTemplate == "" {
		return nil, errors.New("say where the files are: --root DIR, --locations FILE or --url-template URL")
	}
	// A root that is not there would make every line stale: a run that
	// read nothing must not look like a run over a changed collection.
	for _, r := range loc.Roots {
		if fi, err := os.Stat(r); err != nil {
			return nil, fmt.Errorf("--root %s: %w", r, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("--root %s is not a directory", r)
		}
	}
	h := source.NewHTTP(c.Int("per-host"))
	// A value no run can mean would fail every fetch, each reported as a
	// stale line (a changed collection): bad usage instead.
	if c.IsSet("retries") {
		if h.Retries = c.Int("retries"); h.Retries < 0 {
			return nil, fmt.Errorf("--retries %d: want 0 or more", h.Retries)
		}
	}
	if c.IsSet("timeout") {
		if h.IdleTimeout = c.Duration("timeout"); h.IdleTimeout <= 0 {
			return nil, fmt.Errorf("--timeout %s: want a positive duration", h.IdleTimeout)
		}
	}
	if c.IsSet("min-rate") {
		if h.MinRate = c.Int64("min-rate"); h.MinRate < 0 {
			return nil, fmt.Errorf("--min-rate %d: want 0 (no bound) or more bytes a second", h.MinRate)
		}
	}
	loc.HTTP = h
	return loc, nil
}

// BufferedWriter is a buffered writer over a command's output; Flush it
// before Commit.
func BufferedWriter(o *Output) *bufio.Writer { return BufferedWriterTo(o) }

// BufferedWriterTo is a buffered writer over any output file.
func BufferedWriterTo(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 256<<10) }

// NotifyContext is signal.NotifyContext for those of sigs the process
// does not ignore: a command a script started in the background (`cmd &`),
// whose SIGINT the shell set to ignored so that an interrupt of the script
// does not reach it, keeps ignoring it, as nohup's commands and the
// shell's own do (signal.Notify would catch it again).
func NotifyContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	var caught []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			caught = append(caught, s)
		}
	}
	if len(caught) == 0 {
		return context.WithCancel(parent)
	}
	return signal.NotifyContext(parent, caught...)
}
