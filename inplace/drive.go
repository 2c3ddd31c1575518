package inplace

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"warcdedup/internal/ordered"
	"warcdedup/rewritelog"
)

// Outcome is what a worker leaves of one file for the run: the new
// version put in place, if any (its entries to log), and the task's
// error. The tasks of a rewrite and of a restore embed it.
type Outcome struct {
	done   chan struct{} // closed when the task is over
	Result *Replaced     // set when the file was replaced (or, in a dry run, would be)
	Err    error
}

// NewOutcome returns the Outcome of a task not yet run.
func NewOutcome() Outcome { return Outcome{done: make(chan struct{})} }

// outcome returns o: what makes a task that embeds an Outcome a Task.
func (o *Outcome) outcome() *Outcome { return o }

// Abandon ends the outcome of a task that no worker will run.
func (o *Outcome) Abandon(err error) {
	o.Err = err
	close(o.done)
}

// Task is a task of a run over files, rewrite or restore: an
// ordered.Task that embeds an Outcome.
type Task interface {
	ordered.Task
	outcome() *Outcome
}

// Drive runs the tasks of q on jobs goroutines, each with the work
// function newWorker makes it, and then, in task order, logs the entries
// of every file replaced, even once the run is stopping (an index must
// learn the new offsets of a file that was replaced), and, until the run
// fails, lets finish take each task's outcome. It returns the error that
// stopped the run: a failed log write, one finish returned, or the first
// failure of a worker (the tasks it cancelled report only that).
func Drive[T Task](q *ordered.Queue[T], cancel context.CancelFunc, jobs int, log *rewritelog.Log,
	newWorker func() func(T) error, finish func(T) error) error {
	var wg sync.WaitGroup
	var cause error // the first failure that stopped the run
	var causeOnce sync.Once
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := newWorker()
			for t := range q.Work() {
				o := t.outcome()
				o.Err = work(t)
				if o.Err != nil && !IsRefusal(o.Err) && !errors.Is(o.Err, context.Canceled) {
					// The run stops now: no worker starts writing
					// another file (on a full disk, say) while the
					// failure waits for its turn in task order. The
					// tasks this cancels are not what stopped it.
					causeOnce.Do(func() { cause = o.Err })
					cancel()
				}
				close(o.done)
			}
		}()
	}
	var fatal error
	for t := range q.Results() {
		o := t.outcome()
		<-o.done
		if o.Result != nil {
			if err := log.Append(o.Result.Intent); err != nil && fatal == nil {
				fatal = fmt.Errorf("writing the log: %w", err)
				cancel()
			}
		}
		if fatal == nil {
			if fatal = finish(t); fatal != nil {
				cancel()
			}
		}
		q.Release()
	}
	wg.Wait()
	if cause != nil && (fatal == nil || errors.Is(fatal, context.Canceled)) {
		fatal = cause
	}
	return fatal
}

// IsRefusal tells a refusal (the file left untouched, the run goes on)
// from an error that stops the run.
func IsRefusal(err error) bool {
	var re *RefusedError
	return errors.As(err, &re)
}

// RefusedOr passes a refusal (the file left untouched, the run goes on) to
// refused and returns any other error, which stops the run.
func RefusedOr(err error, refused func(error)) error {
	if !IsRefusal(err) {
		return err
	}
	if refused != nil {
		refused(err)
	}
	return nil
}
