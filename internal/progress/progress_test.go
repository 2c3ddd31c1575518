package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestUnits proves the human units of the summaries.
func TestUnits(t *testing.T) {
	tests := []struct{ got, want string }{
		{Bytes(999), "999 B"},
		{Bytes(1000), "1.0 kB"},
		{Bytes(1_500_000_000), "1.5 GB"},
		{Bytes(-2000), "-2.0 kB"},
		{Count(0), "0"},
		{Count(1234567), "1,234,567"},
		{Count(-1000), "-1,000"},
		{Duration(850 * time.Millisecond), "850 ms"},
		{Duration(12300 * time.Millisecond), "12.3 s"},
		{Duration(4*time.Minute + 5*time.Second), "4 min 05 s"},
		{Duration(2*time.Hour + 3*time.Minute), "2 h 03 min"},
		{Percent(1, 8), "12.5%"},
		{Percent(1, 0), "0%"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestPlain proves what a display writes where there is no terminal: a
// line per stage start and end, progress lines at the set interval with
// done/total, rate and time left, and messages; and that the tee gets them
// all with time stamps.
func TestPlain(t *testing.T) {
	var out, tee bytes.Buffer
	d := NewPlain(&out, "warcdedup")
	d.Tee(&tee)
	d.every = 0
	s := d.Start("hash", "bytes", 2_000_000)
	time.Sleep(5 * time.Millisecond)
	s.Add(1_000_000)
	d.Print("warcdedup: warning: %s", "something")
	s.Done("1 file")
	d.Close()
	text := out.String()
	for _, want := range []string{"warcdedup: hash: started\n", "hash  1.0 MB / 2.0 MB (50%)", "/s  ETA ",
		"warcdedup: warning: something\n", "warcdedup: hash: done in "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\r") {
		t.Errorf("carriage return in plain output: %q", text)
	}
	if n := strings.Count(tee.String(), "\n"); n != strings.Count(text, "\n") {
		t.Errorf("tee has %d lines, output %d", n, strings.Count(text, "\n"))
	}
}

// TestTerminalDrawsAtOnce proves that on a terminal a stage's progress
// line is drawn as soon as the stage starts and again under every message,
// not only at the redraw's tick: a stage shorter than the tick would
// otherwise never be seen with its figures (CI caught a whole job done
// between two ticks).
func TestTerminalDrawsAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		write func(d *Display, s *Stage)
		want  int // progress lines drawn
	}{
		{"stage started", func(*Display, *Stage) {}, 1},
		{"warning printed during the stage", func(d *Display, _ *Stage) { d.Print("warning: x") }, 2},
		{"stage done", func(_ *Display, s *Stage) { s.Done("") }, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			d := &Display{w: &out, name: "warcdedup", terminal: true, every: time.Hour}
			s := d.Start("hash", "bytes", 2_000_000)
			s.Add(1_000_000)
			tc.write(d, s)
			text := out.String()
			if n := strings.Count(text, "\r\033[Khash  "); n != tc.want {
				t.Errorf("%d progress lines drawn, want %d:\n%q", n, tc.want, text)
			}
			if !strings.HasPrefix(text, "hash: started\n\r\033[Khash  0 B / 2.0 MB (0%)") {
				t.Errorf("the stage's line is not drawn under its start:\n%q", text)
			}
		})
	}
}

// TestStatusBeforeCounting proves that a stage started before it knows
// what it counts (Begin comes later) shows its name alone, not a bare 0.
func TestStatusBeforeCounting(t *testing.T) {
	d := &Display{w: &bytes.Buffer{}, name: "warcdedup", every: time.Hour}
	s := d.Start("resolve the collisions", "", 0)
	if got := s.status(time.Now()); got != "resolve the collisions" {
		t.Errorf("status %q before anything is counted, want the name alone", got)
	}
	s.Begin("files", 3)
	if got := s.status(time.Now()); !strings.HasPrefix(got, "resolve the collisions  0 files / 3 files (0%)") {
		t.Errorf("status %q once begun", got)
	}
}

// TestNote proves that a stage's note follows its figures in the progress
// line, and changes when it is set again.
func TestNote(t *testing.T) {
	var out bytes.Buffer
	d := NewPlain(&out, "warcdedup")
	d.every = 0
	s := d.Start("resolve", "lines", 10)
	s.SetNote("tasks 1/4 done, 2 running")
	s.Add(5)
	s.SetNote("tasks 3/4 done")
	s.Add(1)
	s.Done("")
	text := out.String()
	for _, want := range []string{"resolve  5 lines / 10 lines (50%)", "tasks 1/4 done, 2 running\n", "tasks 3/4 done\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// TestQuiet proves what -q leaves on the terminal: errors (Print), not
// notes (the job's start, warnings), which still reach the log.
func TestQuiet(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		var out, tee bytes.Buffer
		d := NewPlain(&out, "warcdedup")
		d.quiet = quiet
		d.Tee(&tee)
		d.Note("warcdedup: warning: %s", "a note")
		d.Print("warcdedup: error: %s", "an error")
		d.Close()
		if got := strings.Contains(out.String(), "a note"); got == quiet {
			t.Errorf("quiet %v: note shown %v:\n%s", quiet, got, out.String())
		}
		if !strings.Contains(out.String(), "an error") {
			t.Errorf("quiet %v: error not shown:\n%s", quiet, out.String())
		}
		if !strings.Contains(tee.String(), "a note") || !strings.Contains(tee.String(), "an error") {
			t.Errorf("quiet %v: the log lacks a message:\n%s", quiet, tee.String())
		}
	}
}
