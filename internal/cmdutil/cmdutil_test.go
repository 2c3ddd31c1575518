package cmdutil

import (
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestReorderFlags proves that flags after positional arguments are moved
// ahead of them with their values, and that "-" and "--" stay positional
// (urfave/cli v2 stops at the first positional argument, and users write
// "warcsum DIR -o FILE").
func TestReorderFlags(t *testing.T) {
	flags := []cli.Flag{
		&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}},
		&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}},
	}
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"already first", []string{"cmd", "-r", "-o", "x", "dir"}, []string{"cmd", "-r", "-o", "x", "dir"}},
		{"flags after paths", []string{"cmd", "dir", "-o", "x", "-r", "dir2"}, []string{"cmd", "-o", "x", "-r", "dir", "dir2"}},
		{"value joined with =", []string{"cmd", "dir", "--jobs=2"}, []string{"cmd", "--jobs=2", "dir"}},
		{"dash is stdin, a positional", []string{"cmd", "-", "-j", "2"}, []string{"cmd", "-j", "2", "-"}},
		{"after -- all positional", []string{"cmd", "a", "--", "-o", "b"}, []string{"cmd", "a", "--", "-o", "b"}},
		{"unknown flags move alone", []string{"cmd", "a", "--zap", "b"}, []string{"cmd", "--zap", "a", "b"}},
		// -qo FILE is -q -o FILE: FILE is the output, not an input (taken
		// for an input, a WARC named before it became the output)
		{"bundled short flags, the last taking a value", []string{"cmd", "a.warc.gz", "-qo", "m.txt"}, []string{"cmd", "-qo", "m.txt", "a.warc.gz"}},
		{"bundled short flags first", []string{"cmd", "-ro", "m.txt", "dir"}, []string{"cmd", "-ro", "m.txt", "dir"}},
		{"bundled booleans take no value", []string{"cmd", "dir", "-qr", "dir2"}, []string{"cmd", "-qr", "dir", "dir2"}},
		{"a bundle with an unknown letter moves alone", []string{"cmd", "a", "-qz", "b"}, []string{"cmd", "-qz", "a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reorder(&cli.App{Flags: flags, HideVersion: true}, tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReorderCommands proves that flags after the paths of a command go
// before them, behind the command's name, and that the app's own flags stay
// where they are.
func TestReorderCommands(t *testing.T) {
	app := &cli.App{Name: "x", Flags: []cli.Flag{&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}}, profileFlag},
		Commands: []*cli.Command{{Name: "run", Flags: []cli.Flag{&cli.StringFlag{Name: "work-dir", Aliases: []string{"w"}}, &cli.BoolFlag{Name: "dry-run"}, &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}}}}}}
	tests := []struct{ in, want string }{
		{"x run coll --work-dir w --dry-run", "x run --work-dir w --dry-run coll"},
		{"x -q run coll --work-dir w", "x -q run --work-dir w coll"},
		{"x run --work-dir w coll", "x run --work-dir w coll"},
		{"x coll -q", "x -q coll"},
		// the value of an app's flag is not taken for the command
		{"x --cpuprofile p run coll -q", "x --cpuprofile p run -q coll"},
		{"x --cpuprofile=p run coll -q", "x --cpuprofile=p run -q coll"},
		{"x run coll -qw w", "x run -qw w coll"},
	}
	for _, tt := range tests {
		if got := strings.Join(reorder(app, strings.Fields(tt.in)), " "); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestReorderSubcommands proves that a subcommand's flags are taken
// wherever they are written: before its name ("warcdedup index --index DIR
// stats", which urfave/cli alone refuses), after its operands, and that
// the app's flags given after a command go back to the app.
func TestReorderSubcommands(t *testing.T) {
	app := &cli.App{Name: "x", Flags: []cli.Flag{profileFlag},
		Commands: []*cli.Command{
			{Name: "index", Subcommands: []*cli.Command{
				{Name: "stats", Flags: []cli.Flag{&cli.StringFlag{Name: "index"}, &cli.BoolFlag{Name: "json"}}},
				{Name: "deps", Flags: []cli.Flag{&cli.StringFlag{Name: "index"}, &cli.BoolFlag{Name: "reverse"}}},
			}},
			{Name: "run", Flags: []cli.Flag{&cli.BoolFlag{Name: "dry-run"}, &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}}}},
		}}
	tests := []struct{ in, want string }{
		{"x index --index d stats", "x index stats --index d"},
		{"x index --index=d stats --json", "x index stats --index=d --json"},
		{"x index stats --index d", "x index stats --index d"},
		{"x index deps c1 --index d --reverse", "x index deps --index d --reverse c1"},
		{"x --index d index deps c1", "x index deps --index d c1"},
		{"x -q run coll", "x run -q coll"},
		{"x run coll --cpuprofile p --dry-run", "x --cpuprofile p run --dry-run coll"},
		// an unknown flag stays where it was given: its level reports it
		{"x run coll --dryrun", "x run --dryrun coll"},
		// a subcommand's flag with a misspelt subcommand goes after the
		// word, so that the word is what is reported
		{"x index --index d sttas", "x index sttas --index d"},
		{"x run -- --dry-run", "x run -- --dry-run"},
	}
	for _, tt := range tests {
		if got := strings.Join(reorder(app, strings.Fields(tt.in)), " "); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDidYouMean proves the suggestions for misspelt flags and commands,
// and that a word far from every name gets none.
func TestDidYouMean(t *testing.T) {
	names := []string{"dry-run", "index", "work-dir", "jobs", "j", "hard-links", "sort-memory", "quiet", "q"}
	tests := []struct {
		typed string
		want  []string
	}{
		{"dryrun", []string{"dry-run"}},
		{"dry_run", []string{"dry-run"}},
		{"dyr-run", []string{"dry-run"}},
		{"dry", []string{"dry-run"}},
		{"indx", []string{"index"}},
		{"workdir", []string{"work-dir"}},
		{"job", []string{"jobs"}},
		{"quite", []string{"quiet"}},
		{"zap", nil},
		{"x", nil},
		{"recursive", nil},
	}
	for _, tt := range tests {
		if got := closest(tt.typed, names); !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.typed, got, tt.want)
		}
	}
}
