package workdir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/progress"
)

// TestLeftoversRemoved proves that the temporary files a killed run left
// in the work directory are removed when the next run opens it, and only
// then: not while another run holds it.
func TestLeftoversRemoved(t *testing.T) {
	wd := filepath.Join(t.TempDir(), "work")
	w, err := Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	left := []string{".tmp-before.manifest-123", ".tmp-by-file.manifest-sort", "cache/.tmp-0123abcd.lines-42", "tmp/sortAbCdEf", "tmp/pairs"}
	for _, name := range left {
		if err := os.WriteFile(filepath.Join(wd, filepath.FromSlash(name)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kept := []string{"before.manifest", "cache/0123abcd.lines"}
	for _, name := range kept {
		if err := os.WriteFile(filepath.Join(wd, filepath.FromSlash(name)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Held by a run: a second opening neither gets it nor cleans it.
	if _, err := Open(wd); err == nil {
		t.Fatal("a second Open got the work directory")
	}
	for _, name := range left[:3] {
		if _, err := os.Stat(filepath.Join(wd, filepath.FromSlash(name))); err != nil {
			t.Errorf("%s removed while another run holds the work directory", name)
		}
	}
	// Killed: its lock goes with it (the descriptor is closed), its files stay.
	w.lock.Close()
	w2, err := Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	for _, name := range left {
		if _, err := os.Stat(filepath.Join(wd, filepath.FromSlash(name))); err == nil {
			t.Errorf("%s left in the work directory", name)
		}
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(wd, filepath.FromSlash(name))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRunLog proves what the run log gets from a run's display: every
// line while it is open, appended after an earlier run's, with or
// without a display of the command's.
func TestRunLog(t *testing.T) {
	w, err := Open(filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var shown strings.Builder
	show := progress.NewPlain(&shown, "warcdedup")
	tests := []struct {
		name string
		show *progress.Display
		line string
	}{
		{"the command's display", show, "first run"},
		{"a later run's, appended", show, "second run"},
		{"no display: the log alone", nil, "third run"},
	}
	for _, tt := range tests {
		l, err := w.OpenRunLog(tt.show)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if tt.show != nil && l.Display() != tt.show {
			t.Errorf("%s: another display than the one given", tt.name)
		}
		l.Display().Log("%s", tt.line)
		if err := l.Close(); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if err := (*RunLogFile)(nil).Close(); err != nil {
		t.Errorf("closing a log never opened: %v", err)
	}
	data, err := os.ReadFile(w.File(RunLog))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		_, msg, _ := strings.Cut(line, " ") // after the time stamp
		got = append(got, msg)
	}
	if want := []string{"first run", "second run", "third run"}; !slices.Equal(got, want) {
		t.Errorf("the run log has %q, want %q", got, want)
	}
}
