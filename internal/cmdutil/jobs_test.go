package cmdutil

import (
	"errors"
	"io"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestJobsBounded: -j beyond maxJobs is a usage error (exit status 2),
// before the command does anything, on the app and on its commands; up to
// it, the command runs.
func TestJobsBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		ran  bool
	}{
		{name: "the app's -j at the bound", args: []string{"x", "-j", "1024"}, ran: true},
		{name: "the app's -j past the bound", args: []string{"x", "-j", "1025"}},
		{name: "a command's -j at the bound", args: []string{"x", "run", "-j", "1024"}, ran: true},
		{name: "a command's -j past the bound", args: []string{"x", "run", "-j", "100000000"}},
		{name: "no -j", args: []string{"x", "run"}, ran: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran := false
			action := func(*cli.Context) error { ran = true; return nil }
			jobs := func() cli.Flag { return &cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 2} }
			app := &cli.App{Name: "x", Flags: []cli.Flag{jobs()}, Action: action, Writer: io.Discard, ErrWriter: io.Discard,
				Commands: []*cli.Command{{Name: "run", Flags: []cli.Flag{jobs()}, Action: action}}}
			Document(app, Manual{})
			err := app.Run(c.args)
			if ran != c.ran {
				t.Fatalf("ran %v, want %v (%v)", ran, c.ran, err)
			}
			var ec cli.ExitCoder
			if !c.ran && (!errors.As(err, &ec) || ec.ExitCode() != ExitFatal) {
				t.Errorf("error %v, want a usage error (exit status %d)", err, ExitFatal)
			}
		})
	}
}
