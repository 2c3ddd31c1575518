package cmdutil

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestFlagsFirst proves that flags after positional arguments are moved
// ahead of them with their values, and that "-" and "--" stay positional.
func TestFlagsFirst(t *testing.T) {
	flags := []cli.Flag{
		&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FlagsFirst(flags, tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
