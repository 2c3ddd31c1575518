package cmdutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestCreateOutputNamingStandardOutput proves that "-o /dev/stdout" with
// standard output redirected to a regular file ("> m", ">> m") writes to
// standard output: /dev/stdout links to /proc/self/fd/1, which links to
// that file, so the name looked like a regular file and a temporary file
// was renamed over it. Run as root, that replaced the /dev/stdout link by
// a regular file for the whole machine, and the redirected file stayed
// empty. The link here stands for /dev/stdout (/dev is not the test's).
func TestCreateOutputNamingStandardOutput(t *testing.T) {
	tests := []struct {
		name    string
		flag    int    // how the shell opened standard output
		earlier string // what the file held before
		want    string
	}{
		{"redirected with >", os.O_TRUNC, "", "line\n"},
		{"redirected with >>", os.O_APPEND, "earlier\n", "earlier\nline\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "m")
			if err := os.WriteFile(file, []byte(tt.earlier), 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, err := os.OpenFile(file, os.O_WRONLY|tt.flag, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer stdout.Close()
			saved := os.Stdout
			os.Stdout = stdout
			defer func() { os.Stdout = saved }()
			link := filepath.Join(dir, "stdout")
			if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", stdout.Fd()), link); err != nil {
				t.Fatal(err)
			}

			o, err := CreateOutput(link)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(o, "line\n"); err != nil {
				t.Fatal(err)
			}
			if err := o.Commit(); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
				t.Errorf("%s is no longer a link (%v, %v): a file was renamed over it", link, fi, err)
			}
			if got, _ := os.ReadFile(file); string(got) != tt.want {
				t.Errorf("standard output's file holds %q, want %q", got, tt.want)
			}
		})
	}
}
