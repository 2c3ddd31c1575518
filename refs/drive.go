package refs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"warcdedup/internal/ordered"
	"warcdedup/rewritelog"
)

// fileOutcome is what a worker leaves of one file for the run: the new
// version put in place, if any, with the entries to log, and the task's
// error. The tasks of a rewrite and of a restore embed it.
type fileOutcome struct {
	done    chan struct{} // closed when the task is over
	entries []rewritelog.Entry
	result  *replaced // set when the file was replaced
	err     error
}

func (o *fileOutcome) outcome() *fileOutcome { return o }

// fileTask is a task of a run over files, rewrite or restore.
type fileTask interface {
	ordered.Task
	outcome() *fileOutcome
}

// drive runs the tasks of q on jobs goroutines, each with the work
// function newWorker makes it, and then, in task order, logs the entries
// of every file replaced, even once the run is stopping (an index must
// learn the new offsets of a file that was replaced), and, until the run
// fails, lets finish take each task's outcome. It returns the error that
// stopped the run: a failed log write, one finish returned, or the first
// failure of a worker (the tasks it cancelled report only that).
func drive[T fileTask](q *ordered.Queue[T], cancel context.CancelFunc, jobs int, log *rewritelog.Log,
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
				o.err = work(t)
				if o.err != nil && !isRefusal(o.err) && !errors.Is(o.err, context.Canceled) {
					// The run stops now: no worker starts writing
					// another file (on a full disk, say) while the
					// failure waits for its turn in task order. The
					// tasks this cancels are not what stopped it.
					causeOnce.Do(func() { cause = o.err })
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
		if o.result != nil {
			if err := log.Append(o.result.Intent); err != nil && fatal == nil {
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

// isRefusal tells a refusal (the file left untouched, the run goes on)
// from an error that stops the run.
func isRefusal(err error) bool {
	var re *RefusedError
	return errors.As(err, &re)
}

// refusedOr passes a refusal (the file left untouched, the run goes on) to
// refused and returns any other error, which stops the run.
func refusedOr(err error, refused func(error)) error {
	if !isRefusal(err) {
		return err
	}
	if refused != nil {
		refused(err)
	}
	return nil
}
