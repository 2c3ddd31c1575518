package ordered

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

type task struct {
	n    int
	err  error
	done chan struct{}
}

func (t *task) Abandon(err error) { t.err = err; close(t.done) }

// run queues n tasks that take random time on workers, cancelling after
// cancelAt tasks (never if negative), and returns the order the writer saw.
func run(t *testing.T, n, workers, inFlight, cancelAt int) ([]int, int) {
	q := New[*task](inFlight)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer q.Close()
		for i := range n {
			if i == cancelAt {
				cancel()
			}
			if q.Add(ctx, &task{n: i, done: make(chan struct{})}) != nil {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tk := range q.Work() {
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				close(tk.done)
			}
		}()
	}
	var seen []int
	abandoned := 0
	most := 0
	for tk := range q.Results() {
		<-tk.done
		if errors.Is(tk.err, context.Canceled) {
			abandoned++
		}
		seen = append(seen, tk.n)
		most = max(most, len(q.window))
		q.Release()
	}
	wg.Wait()
	if most > inFlight {
		t.Errorf("%d tasks in flight, more than %d", most, inFlight)
	}
	return seen, abandoned
}

// TestOrder proves the writer sees every task once, in the order added,
// whatever order the workers finish in.
func TestOrder(t *testing.T) {
	seen, _ := run(t, 500, 4, 8, -1)
	if len(seen) != 500 {
		t.Fatalf("%d tasks seen, want 500", len(seen))
	}
	for i, n := range seen {
		if n != i {
			t.Fatalf("task %d seen in place %d", n, i)
		}
	}
}

// TestCancelEnds proves a cancelled run ends: the writer never waits for
// a task that no worker will run (repeated, since the race is by chance).
func TestCancelEnds(t *testing.T) {
	for range 200 {
		done := make(chan []int)
		go func() { s, _ := run(t, 100, 2, 4, 10); done <- s }()
		select {
		case seen := <-done:
			for i, n := range seen {
				if n != i {
					t.Fatalf("task %d seen in place %d", n, i)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the writer waited forever after the run was cancelled")
		}
	}
}
