package progress

import "time"

// A Meter takes a stage's progress as the work counts it: what it counts
// and out of how much, once the stage knows, then how much is done. A
// Stage of a Display is one; a cluster task's progress file is another.
type Meter interface {
	Begin(unit string, total int64)
	Set(done int64)
}

// Discard is a Meter that shows nothing.
var Discard Meter = discard{}

type discard struct{}

func (discard) Begin(string, int64) {}
func (discard) Set(int64)           {}

// Counter is what the work counts in as it goes (an atomic.Int64 of its
// Progress).
type Counter interface{ Load() int64 }

// followEvery is how often Follow looks at the counter.
const followEvery = 200 * time.Millisecond

// Follow copies a counter into a meter until stop is called, and once more
// then: the work counts in an atomic, the meter shows it without slowing
// the work down.
func Follow(from Counter, to Meter) (stop func()) {
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(followEvery)
		defer t.Stop()
		for {
			to.Set(from.Load())
			select {
			case <-quit:
				to.Set(from.Load())
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit); <-ended }
}
