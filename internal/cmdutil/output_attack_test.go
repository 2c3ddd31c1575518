package cmdutil

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"warcdedup/manifest"
)

// TestCreateOutputKeepsSpecialFiles proves that an output named by a FIFO
// or by a link to a device (as "-o /dev/stdout" or "--stats /dev/null"
// are) is written into, not replaced by a regular file renamed over the
// name: run as root, that rename replaced /dev/null or /dev/full for the
// whole machine, and a reader of a FIFO waited for ever while the bytes
// went to a file nobody reads.
func TestCreateOutputKeepsSpecialFiles(t *testing.T) {
	tests := []struct {
		name string
		// make creates the output's name in dir and returns what reads
		// what was written to it (nil: nothing to read back).
		make func(t *testing.T, name string) io.Reader
		mode os.FileMode // the type name keeps (os.Lstat)
	}{
		{"FIFO", func(t *testing.T, name string) io.Reader {
			if err := syscall.Mkfifo(name, 0o600); err != nil {
				t.Fatal(err)
			}
			// A reader that does not wait for the writer, so that the
			// test cannot hang whatever the output does.
			r, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		}, os.ModeNamedPipe},
		{"link to /dev/null", func(t *testing.T, name string) io.Reader {
			if err := os.Symlink(os.DevNull, name); err != nil {
				t.Fatal(err)
			}
			return nil
		}, os.ModeSymlink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "out")
			r := tt.make(t, name)
			o, err := CreateOutput(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(o, "line\n"); err != nil {
				t.Fatal(err)
			}
			if err := o.Commit(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(name)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != tt.mode {
				t.Fatalf("%s is now %v, want it left a %v", name, fi.Mode().Type(), tt.mode)
			}
			if r != nil {
				got, _ := io.ReadAll(r)
				if string(got) != "line\n" {
					t.Errorf("the reader got %q, want %q", got, "line\n")
				}
			}
		})
	}
}

// TestAbortMarksStandardOutput proves that standard output a command
// stopped writing (Abort before Commit) ends so that no stage reads it as
// a whole manifest, as read directly or after sort (which ends the last
// line): warccollres stopping on a bad line left the lines of its last
// batch, ending with a line feed, and warcsumproc read them after sort as
// the whole manifest, exit status 0. Committed or empty output is left as
// it is.
func TestAbortMarksStandardOutput(t *testing.T) {
	const line = "a.warc 0 100 http://x/ 2024-01-01T00:00:00Z sha1:VIQCHCVLTSXPYXCRRSX35GPZEFC2OW7Z\n"
	tests := []struct {
		name   string
		write  string
		commit bool
		want   string // what the output holds after Abort
	}{
		{"stopped after whole lines", line + line, false, line + line + IncompleteMark},
		{"stopped within a line", line + line[:20], false, line + line[:20] + "\n" + IncompleteMark},
		{"nothing written", "", false, ""},
		{"committed", line, true, line},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			o := newStreamOutput(&b)
			if _, err := io.WriteString(o, tt.write); err != nil {
				t.Fatal(err)
			}
			if tt.commit {
				if err := o.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			o.Abort()
			o.Abort() // deferred after an explicit one: nothing more
			if b.String() != tt.want {
				t.Fatalf("output %q, want %q", b.String(), tt.want)
			}
			if tt.commit || tt.write == "" {
				return
			}
			for _, text := range []string{b.String(), b.String() + "\n"} { // as written, and after sort
				r := manifest.NewReader(strings.NewReader(text), "-")
				var err error
				for err == nil {
					_, err = r.Next()
				}
				if err == io.EOF {
					t.Errorf("%q reads as a whole manifest", text)
				}
			}
		})
	}
}

// TestLocatorRefusesHTTPValuesNoRunMeans proves that --retries below 0,
// a --timeout of 0 or less and a --min-rate below 0 are bad usage: they
// were taken, every HTTP fetch then failed ("too slow: ... (-1 retries)"),
// and warccollres reported each line of the clusters as stale, the
// collection changed, exit status 1.
func TestLocatorRefusesHTTPValuesNoRunMeans(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string // "": accepted
	}{
		{[]string{"--retries", "-1"}, "--retries -1"},
		{[]string{"--timeout", "0s"}, "--timeout 0s"},
		{[]string{"--timeout", "-5s"}, "--timeout -5s"},
		{[]string{"--min-rate", "-1"}, "--min-rate -1"},
		{[]string{"--retries", "0", "--timeout", "1s", "--min-rate", "0"}, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var err error
			app := &cli.App{
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "url-template"},
					&cli.IntFlag{Name: "per-host", Value: 4},
					&cli.IntFlag{Name: "retries", Value: 5},
					&cli.DurationFlag{Name: "timeout"},
					&cli.Int64Flag{Name: "min-rate"},
				},
				Action: func(c *cli.Context) error {
					_, err = Locator(c)
					return nil
				},
			}
			args := append([]string{"cmd", "--url-template", "http://store/{file}"}, tt.args...)
			if rerr := app.Run(args); rerr != nil {
				t.Fatal(rerr)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Locator: %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Locator: %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}
