package progress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestJobProgress proves the whole job's part of a progress line: the
// stage's number, the job's done and total bytes as the weights of the
// stages done and the share of the one at work, and a time left from
// this run's own rate, which stages done by an earlier run do not speed.
func TestJobProgress(t *testing.T) {
	var out bytes.Buffer
	d := NewPlain(&out, "warcdedup")
	d.every = 0
	// 4 stages of weights 1, 1, 2 (the one at work), 0: 1,000 bytes.
	d.Plan([]Step{{"hash", 1}, {"sort", 1}, {"rewrite", 2}, {"account", 0}}, 1000)
	d.Step(0, true) // done by an earlier run
	d.Step(1, false)
	d.Step(2, false)
	s := d.Start("rewrite", "bytes", 100)
	s.Add(50)
	d.mu.Lock()
	// This run began 10 s ago, with stage 2: 1 weight done in 10 s... plus
	// half of the rewrite's 2: 2 weights in 10 s; 1 weight is left: 5 s.
	d.job.start = time.Now().Add(-10 * time.Second)
	line := d.lineOf(s, time.Now())
	d.mu.Unlock()
	for _, want := range []string{"[step 3 of 4] rewrite ", "| job 750 B / 1.0 kB (75%), ETA 5.0 s"} {
		if !strings.Contains(line, want) {
			t.Errorf("the line %q lacks %q", line, want)
		}
	}
	if text := out.String(); !strings.Contains(text, "warcdedup: rewrite: started (step 3 of 4)\n") || !strings.Contains(text, "[step 3 of 4] rewrite  50 B / 100 B (50%)") {
		t.Errorf("the plain lines do not number the stage:\n%s", text)
	}
	// A stage that stops is not said to be done.
	out.Reset()
	s.End(fmt.Errorf("rewrite: %w", context.Canceled), "")
	s2 := d.Start("verify", "", 0)
	s2.End(errors.New("disk full"), "")
	if text := out.String(); !strings.Contains(text, "rewrite: interrupted after ") || !strings.Contains(text, "verify: stopped after ") || strings.Contains(text, "done") {
		t.Errorf("the stages that stopped:\n%s", text)
	}
	// Without a plan, the line is the stage's alone.
	var plain bytes.Buffer
	d2 := NewPlain(&plain, "warcdedup")
	s3 := d2.Start("hash", "bytes", 10)
	if line := d2.statusLine(s3, time.Now()); strings.Contains(line, "stage") || strings.Contains(line, "job") {
		t.Errorf("a line without a plan: %q", line)
	}
}

// TestPlural proves the counted nouns and lists of the summaries.
func TestPlural(t *testing.T) {
	tests := []struct{ got, want string }{
		{Plural(1, "file", ""), "1 file"},
		{Plural(0, "file", ""), "0 files"},
		{Plural(1234, "index", "indexes"), "1,234 indexes"},
		{Nouns([]string{"a"}), "a"},
		{Nouns([]string{"a", "b"}), "a and b"},
		{Nouns([]string{"a", "b", "c"}), "a, b and c"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
