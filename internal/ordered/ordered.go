// Package ordered runs tasks on several workers and hands them back in the
// order they were queued, with a bounded number in flight. It is how every
// parallel stage writes its output in input order: a dispatcher Adds tasks,
// workers take them from Work, and one writer takes them from Results,
// waits for each to finish, writes it, and Releases its place.
package ordered

import "context"

// Task is what a Queue carries. Abandon finishes a task that was queued
// but never given to a worker (the run was cancelled first), so that the
// writer waiting for it does not wait forever.
type Task interface {
	Abandon(err error)
}

// Queue is a bounded, ordered hand-off of tasks to workers and a writer.
type Queue[T Task] struct {
	window  chan struct{}
	results chan T
	work    chan T
}

// New returns a Queue holding at most inFlight tasks that the writer has
// not yet Released.
func New[T Task](inFlight int) *Queue[T] {
	inFlight = max(inFlight, 1)
	return &Queue[T]{
		window:  make(chan struct{}, inFlight),
		results: make(chan T, inFlight),
		work:    make(chan T),
	}
}

// Add waits for room, queues t for the writer and hands it to a worker. If
// ctx ends first it returns ctx's error; t is then either not queued at
// all or Abandoned, so the writer never waits for a task nobody runs.
func (q *Queue[T]) Add(ctx context.Context, t T) error {
	select {
	case q.window <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	q.results <- t // cannot block: the window is as large as the buffer
	select {
	case q.work <- t:
		return nil
	case <-ctx.Done():
		t.Abandon(ctx.Err())
		return ctx.Err()
	}
}

// Close says no more tasks will be added; Work and Results end after the
// tasks already queued.
func (q *Queue[T]) Close() {
	close(q.work)
	close(q.results)
}

// Work is where workers take tasks.
func (q *Queue[T]) Work() <-chan T { return q.work }

// Results gives the tasks in the order they were added. The writer must
// wait for each to finish and then call Release.
func (q *Queue[T]) Results() <-chan T { return q.results }

// Release frees the place of a task the writer is done with.
func (q *Queue[T]) Release() { <-q.window }
