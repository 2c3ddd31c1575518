package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binary is warcsumcmp built from this package for the tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "warcsumcmp-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "warcsumcmp")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	dX   = "sha1:VIQCHCVLTSXPYXCRRSX35GPZEFC2OW7Z"
	dY   = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
	orig = "crawl-a.warc.gz 3901 635 http://example.com/robots.txt 2012-04-08T20:13:38Z " + dX + "\n"
	dup  = "crawl-b.warc.gz 88127 610 http://example.com/robots.txt 2012-05-08T20:13:41Z " + dX + "\n"
	// dup after the rewrite: a revisit of orig.
	dupRevisit = "crawl-b.warc.gz 88127 402 http://example.com/robots.txt 2012-05-08T20:13:41Z " + dX +
		" -1 0 http://example.com/robots.txt 2012-04-08T20:13:38Z\n"
	other = "crawl-b.warc.gz 0 900 http://example.com/ 2012-05-08T20:13:40Z " + dY + "\n"
)

// TestExitStatus proves the command's contract: 0 and no violation for a
// clean pair, 1 with each violation on stdout and the summary on stderr,
// 2 with a message for bad usage or bad input.
func TestExitStatus(t *testing.T) {
	tests := []struct {
		name          string
		before, after string // manifest contents; "" and no file for args
		args          []string
		wantStatus    int
		wantStdout    []string // each must appear; nil: stdout empty
		wantStderr    []string
	}{
		{
			name:   "clean pair",
			before: orig + dup + other, after: other + dupRevisit + orig,
			wantStatus: 0,
			wantStderr: []string{"before: 3 records; after: 3 records", "present as themselves: 2", "same digest: 1", "violations: 0"},
		},
		{
			name:   "clean pair, quiet",
			before: orig + dup, after: orig + dupRevisit,
			args:       []string{"-q"},
			wantStatus: 0,
		},
		{
			name:   "records lost",
			before: orig + dup + other, after: dupRevisit + other,
			wantStatus: 1,
			wantStdout: []string{
				"http://example.com/robots.txt 2012-04-08T20:13:38Z (" + dX + ", was crawl-a.warc.gz offset 3901): missing after",
				"http://example.com/robots.txt 2012-05-08T20:13:41Z (" + dX + ", was crawl-b.warc.gz offset 88127): its revisit refers to",
				"payload is lost",
			},
			wantStderr: []string{"violations: 3", "warcsumcmp: 3 violations: records were lost"},
		},
		{
			name:       "one argument",
			args:       []string{"only-one.manifest"},
			wantStatus: 2,
			wantStderr: []string{"warcsumcmp: give two manifests: BEFORE AFTER"},
		},
		{
			name:       "no arguments",
			args:       []string{},
			wantStatus: 2,
			wantStderr: []string{"give two manifests"},
		},
		{
			name:   "malformed line",
			before: orig + "crawl-b.warc.gz 12 x http://example.com/ 2012-05-08T20:13:40Z " + dY + "\n", after: orig,
			wantStatus: 2,
			wantStderr: []string{"before.manifest:2:", "length"},
		},
		{
			name:       "missing file",
			args:       []string{"no-such-before.manifest", "no-such-after.manifest"},
			wantStatus: 2,
			wantStderr: []string{"no-such-before.manifest"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := tt.args
			if tt.before != "" || tt.after != "" {
				b, a := filepath.Join(dir, "before.manifest"), filepath.Join(dir, "after.manifest")
				if err := os.WriteFile(b, []byte(tt.before), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(a, []byte(tt.after), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, b, a)
			}
			cmd := exec.Command(binary, args...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tt.wantStatus {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", status, tt.wantStatus, &stdout, &stderr)
			}
			if tt.wantStdout == nil && stdout.Len() > 0 {
				t.Errorf("stdout %q, want it empty", &stdout)
			}
			for _, s := range tt.wantStdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout %q does not say %q", &stdout, s)
				}
			}
			if got := strings.Count(stdout.String(), "\n"); tt.wantStatus == 1 && got != len(tt.wantStdout) {
				t.Errorf("%d lines on stdout, want one per violation (%d)", got, len(tt.wantStdout))
			}
			if tt.wantStderr == nil && stderr.Len() > 0 {
				t.Errorf("stderr %q, want it empty", &stderr)
			}
			for _, s := range tt.wantStderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr %q does not say %q", &stderr, s)
				}
			}
			if tt.wantStatus == 1 && strings.Contains(stderr.String(), "robots.txt") {
				t.Errorf("stderr %q repeats a violation; violations go to stdout", &stderr)
			}
		})
	}
}
