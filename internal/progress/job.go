package progress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A job of several stages shows where it is as a whole beside the stage
// at work: "step 5 of 8", the share of the whole job done, as bytes of
// the collection, and the time left for the whole job. Stages cost
// unequally (a rewrite reads, compares, writes and reads back what a hash
// only reads), so each has a weight: its cost as passes over the
// collection's bytes, the hash stage's 1. The job is done to the weights
// of the stages done plus the share of the current one, and its rate is
// that of this run's own work, so that stages done by an earlier run do
// not make it look fast.

// Step is a stage of a job, as Plan takes it.
type Step struct {
	Name   string
	Weight float64 // its cost as passes over the collection's bytes; the hash stage's is 1
}

// job is a Display's plan of the job and where it is in it.
type job struct {
	steps []Step
	bytes int64 // of the collection
	cur   int   // the step at work, -1 before the first
	// doneWeight is the weight of the steps before cur; fromWeight that
	// of the steps done before this run's own work began, at start.
	doneWeight, fromWeight float64
	start                  time.Time
}

// Plan tells the display the job's steps, in order, and the bytes of the
// collection: a terminal's line then shows the stage's number and the
// whole job's progress, and plain lines the stage's number.
func (d *Display) Plan(steps []Step, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.job = &job{steps: steps, bytes: bytes, cur: -1}
}

// Step says the job is at step i of its plan (0-based): the steps before
// it are done. done says it was done by an earlier run: it is passed
// over, and counts as done without adding to this run's rate.
func (d *Display) Step(i int, done bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.job
	if j == nil || i < 0 || i >= len(j.steps) {
		return
	}
	j.doneWeight = 0
	for _, s := range j.steps[:i] {
		j.doneWeight += s.Weight
	}
	j.cur = i
	if done {
		j.fromWeight = j.doneWeight + j.steps[i].Weight
		return
	}
	if j.start.IsZero() {
		j.start, j.fromWeight = time.Now(), j.doneWeight
	}
}

// StepOf is "step 5 of 8" for step i of the plan, "" without one.
func (d *Display) StepOf(i int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.job == nil || i < 0 || i >= len(d.job.steps) {
		return ""
	}
	return StepNumber(i, len(d.job.steps))
}

// StepNumber is "step 5 of 8" for the i-th (0-based) of n stages: the
// place of a stage in this job's plan, which is not the stage's number
// in the pipeline of commands (package stage: rewrite is stage 4).
func StepNumber(i, n int) string { return fmt.Sprintf("step %d of %d", i+1, n) }

// where is the job's part of a progress line: "step 5 of 8" and, with
// the whole job's share, "job 272 MB / 716 MB (38%), ETA 25 s". The
// caller holds mu; s is the stage at work, if any.
func (j *job) where(s *Stage, now time.Time) (stage, whole string) {
	if j == nil || j.cur < 0 {
		return "", ""
	}
	stage = StepNumber(j.cur, len(j.steps))
	var total float64
	for _, st := range j.steps {
		total += st.Weight
	}
	if total <= 0 || j.bytes <= 0 {
		return stage, ""
	}
	done := j.doneWeight
	if s != nil {
		if t := s.total.Load(); t > 0 {
			done += j.steps[j.cur].Weight * min(float64(s.done.Load())/float64(t), 1)
		}
	}
	share := min(done/total, 1)
	whole = fmt.Sprintf("job %s / %s (%.0f%%)", Bytes(int64(share*float64(j.bytes))), Bytes(j.bytes), 100*share)
	if elapsed := now.Sub(j.start).Seconds(); !j.start.IsZero() && elapsed > 1 && done > j.fromWeight {
		rate := (done - j.fromWeight) / elapsed
		whole += ", ETA " + Duration(time.Duration((total-done)/rate*float64(time.Second)))
	}
	return stage, whole
}

// End ends the stage as Done does when err is nil; otherwise it says the
// stage stopped, and why, instead of calling it done: "rewrite:
// interrupted after 2.3 s". It returns how long the stage ran.
func (s *Stage) End(err error, note string) time.Duration {
	if err == nil {
		return s.Done(note)
	}
	took := time.Since(s.start)
	d := s.d
	d.mu.Lock()
	if d.stage == s {
		d.stage = nil
	}
	d.mu.Unlock()
	d.plain(fmt.Sprintf("%s: %s after %s", s.Name, Stopped(err), Duration(took)))
	return took
}

// Stopped is how a stage that err stopped ended, in words: "interrupted"
// when the job was (a signal: the context canceled), else "stopped".
func Stopped(err error) string {
	if Interrupted(err) {
		return "interrupted"
	}
	return "stopped"
}

// Interrupted reports whether err is the job's interruption (a signal
// canceled its context), not a failure of its own.
func Interrupted(err error) bool {
	return errors.Is(err, context.Canceled)
}

// Plural is n and the noun, singular for 1: "1 file", "2 files",
// "1,234 records". plural is the noun's plural; "" adds an s.
func Plural(n int64, noun, plural string) string {
	if n == 1 || n == -1 {
		return Count(n) + " " + noun
	}
	if plural == "" {
		plural = noun + "s"
	}
	return Count(n) + " " + plural
}

// Nouns is a list in words: "a", "a and b", "a, b and c".
func Nouns(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
