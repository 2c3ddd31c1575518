// Package progress shows a long job to the person running it: on a
// terminal, one line redrawn twice a second with the stage, what is done
// of how much, the rate and the time left; elsewhere (a log file, a batch
// system), plain lines when a stage starts and ends and every so often in
// between. Messages printed meanwhile appear above the progress line.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Display writes the progress of a job's stages.
type Display struct {
	mu       sync.Mutex
	w        io.Writer
	name     string // the program, prefixed to plain lines
	terminal bool
	quiet    bool
	every    time.Duration // between plain progress lines
	stage    *Stage
	drawn    bool // a progress line is on screen
	stop     chan struct{}
	stopped  chan struct{}
	tee      io.Writer // also receives every plain line (a run log); may be nil
	job      *job      // the job's plan and where it is (Plan), if given
}

// New returns a Display writing to f (a terminal gets the redrawn line);
// name starts plain lines. quiet shows nothing but Print's messages.
func New(f *os.File, name string, quiet bool) *Display {
	d := &Display{w: f, name: name, terminal: isTerminal(f), quiet: quiet, every: 30 * time.Second}
	if d.terminal && !quiet {
		d.stop, d.stopped = make(chan struct{}), make(chan struct{})
		go d.redraw()
	}
	return d
}

// NewPlain returns a Display of plain lines to w, as for a log file.
func NewPlain(w io.Writer, name string) *Display {
	return &Display{w: w, name: name, every: 30 * time.Second}
}

// Tee makes every plain line (messages, stage starts and ends) also go to
// w, with a time stamp: the job's own log, whatever the display.
func (d *Display) Tee(w io.Writer) {
	d.mu.Lock()
	d.tee = w
	d.mu.Unlock()
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Stage is one stage of the job, counting done units of a total.
type Stage struct {
	d       *Display
	Name    string
	Unit    string // "bytes", "lines", "files": bytes are shown in human units
	total   atomic.Int64
	done    atomic.Int64
	note    atomic.Pointer[string]
	start   time.Time
	lastLog time.Time
}

// Start begins a stage; total may be 0 when it is not known.
func (d *Display) Start(name, unit string, total int64) *Stage {
	s := &Stage{d: d, Name: name, Unit: unit, start: time.Now()}
	s.total.Store(total)
	s.lastLog = s.start
	d.mu.Lock()
	d.stage = s
	step, _ := d.job.where(nil, s.start)
	d.mu.Unlock()
	if step != "" {
		d.plain(fmt.Sprintf("%s: started (%s)", name, step))
	} else {
		d.plain(fmt.Sprintf("%s: started", name))
	}
	return s
}

// Add counts n more units done.
func (s *Stage) Add(n int64) {
	s.done.Add(n)
	if s.d.terminal || s.d.quiet {
		return
	}
	if now := time.Now(); now.Sub(s.lastLog) >= s.d.every {
		s.lastLog = now
		s.d.plain(s.d.statusLine(s, now))
	}
}

// Counter is where a stage's done units are counted by the code doing the
// work (an atomic counter the stage reads).
func (s *Stage) Counter() *atomic.Int64 { return &s.done }

// Begin sets what the stage counts and out of how much (Meter).
func (s *Stage) Begin(unit string, total int64) {
	s.d.mu.Lock()
	s.Unit = unit
	s.d.mu.Unlock()
	s.total.Store(total)
}

// Set counts the units done up to done (Meter): a count that has not
// grown changes nothing.
func (s *Stage) Set(done int64) {
	if n := done - s.done.Load(); n > 0 {
		s.Add(n)
	}
}

// SetTotal changes the stage's total once it is known.
func (s *Stage) SetTotal(n int64) { s.total.Store(n) }

// SetNote sets words shown after the stage's figures (for a stage done by
// many tasks elsewhere: how many are done, running, waiting).
func (s *Stage) SetNote(note string) { s.note.Store(&note) }

// Done ends the stage and returns how long it took.
func (s *Stage) Done(note string) time.Duration {
	took := time.Since(s.start)
	d := s.d
	d.mu.Lock()
	if d.stage == s {
		d.stage = nil
	}
	d.mu.Unlock()
	line := fmt.Sprintf("%s: done in %s", s.Name, Duration(took))
	if note != "" {
		line += " (" + note + ")"
	}
	d.plain(line)
	return took
}

// status is the stage's progress in words.
func (s *Stage) status(now time.Time) string {
	done, total := s.done.Load(), s.total.Load()
	elapsed := now.Sub(s.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed
	}
	var b strings.Builder
	b.WriteString(s.Name)
	if done == 0 && total == 0 {
		// Nothing counted yet (what the stage counts is set later, by
		// Begin): a bare "0" would say nothing.
		return s.withNote(&b)
	}
	b.WriteString("  ")
	b.WriteString(s.amount(done))
	if total > 0 {
		b.WriteString(" / ")
		b.WriteString(s.amount(total))
		fmt.Fprintf(&b, " (%.0f%%)", 100*float64(min(done, total))/float64(total))
	}
	if rate > 0 {
		b.WriteString("  ")
		b.WriteString(s.amount(int64(rate)))
		b.WriteString("/s")
		if total > done {
			b.WriteString("  ETA ")
			b.WriteString(Duration(time.Duration(float64(total-done) / rate * float64(time.Second))))
		}
	}
	return s.withNote(&b)
}

// withNote ends a status line with the stage's note, if it has one.
func (s *Stage) withNote(b *strings.Builder) string {
	if note := s.note.Load(); note != nil && *note != "" {
		b.WriteString("  ")
		b.WriteString(*note)
	}
	return b.String()
}

// statusLine is lineOf for a caller that does not hold mu.
func (d *Display) statusLine(s *Stage, now time.Time) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lineOf(s, now)
}

// lineOf is a stage's progress line with the job's around it: "[step 5
// of 8] rewrite  120 MB / 716 MB ...  | job 272 MB / 716 MB (38%), ETA
// 25 s". The caller holds mu.
func (d *Display) lineOf(s *Stage, now time.Time) string {
	step, whole := d.job.where(s, now)
	line := s.status(now)
	if step != "" {
		line = "[" + step + "] " + line
	}
	if whole != "" {
		line += "  | " + whole
	}
	return line
}

func (s *Stage) amount(n int64) string {
	if s.Unit == "bytes" {
		return Bytes(n)
	}
	return Count(n) + " " + s.Unit
}

// Print writes a message (a warning, an error) above the progress line,
// even when quiet.
func (d *Display) Print(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	fmt.Fprintln(d.w, msg)
	d.teeLine(msg)
	if d.terminal && !d.quiet {
		d.draw(time.Now())
	}
}

// Note writes an informational message (what the job is about to do, a
// warning) above the progress line, unless quiet; the tee gets it always.
func (d *Display) Note(format string, args ...any) {
	if !d.quiet {
		d.Print(format, args...)
		return
	}
	d.Log(format, args...)
}

// Log writes a message to the run log only (the tee): a detail looked up
// afterwards, such as why a file was read again, not shown as the job
// runs.
func (d *Display) Log(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.teeLine(fmt.Sprintf(format, args...))
}

// plain writes a stage's start, end or progress as a line of its own.
func (d *Display) plain(line string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.teeLine(line)
	if d.quiet {
		return
	}
	d.clear()
	if d.terminal {
		fmt.Fprintln(d.w, line)
		d.draw(time.Now())
		return
	}
	fmt.Fprintf(d.w, "%s: %s\n", d.name, line)
}

// draw puts the stage's progress line back under what was written, so a
// stage shorter than the redraw's tick is still seen with its step and
// the whole job's progress; the caller holds mu.
func (d *Display) draw(now time.Time) {
	if s := d.stage; s != nil {
		fmt.Fprintf(d.w, "\r\033[K%s", d.lineOf(s, now))
		d.drawn = true
	}
}

func (d *Display) teeLine(line string) {
	if d.tee != nil {
		fmt.Fprintf(d.tee, "%s %s\n", time.Now().UTC().Format(time.RFC3339), line)
	}
}

// clear erases the progress line; the caller holds mu.
func (d *Display) clear() {
	if d.drawn {
		fmt.Fprint(d.w, "\r\033[K")
		d.drawn = false
	}
}

func (d *Display) redraw() {
	defer close(d.stopped)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case now := <-t.C:
			d.mu.Lock()
			d.draw(now)
			d.mu.Unlock()
		}
	}
}

// Close stops redrawing and erases the progress line.
func (d *Display) Close() {
	if d.stop != nil {
		close(d.stop)
		<-d.stopped
		d.stop = nil
	}
	d.mu.Lock()
	d.clear()
	d.mu.Unlock()
}

// Bytes formats a byte count for people, in decimal units: 1.5 GB.
func Bytes(n int64) string {
	const unit = 1000
	if n < 0 {
		return "-" + Bytes(-n)
	}
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// Count formats a count with thousands separators: 1,234,567.
func Count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Duration formats a duration for people: 850 ms, 12.3 s, 4 min 05 s,
// 2 h 03 min.
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min %02d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %02d min", int(d.Hours()), int(d.Minutes())%60)
}

// Percent formats part of whole: 12.3%.
func Percent(part, whole int64) string {
	if whole == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}
