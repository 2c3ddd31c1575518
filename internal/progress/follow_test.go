package progress

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// meterLog records what a Meter is given.
type meterLog struct {
	mu   sync.Mutex
	sets []int64
}

func (m *meterLog) Begin(string, int64) {}
func (m *meterLog) Set(n int64) {
	m.mu.Lock()
	m.sets = append(m.sets, n)
	m.mu.Unlock()
}

// TestFollow proves that the meter gets the counter as it grows and its
// last value when the follower stops, whenever that is.
func TestFollow(t *testing.T) {
	for _, tt := range []struct {
		name  string
		steps []int64
		pause time.Duration
	}{
		{"stopped at once", []int64{7}, 0},
		{"grows across looks", []int64{1, 5, 9}, followEvery + 50*time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c atomic.Int64
			m := &meterLog{}
			stop := Follow(&c, m)
			for _, n := range tt.steps {
				c.Store(n)
				time.Sleep(tt.pause)
			}
			stop()
			last := tt.steps[len(tt.steps)-1]
			if len(m.sets) == 0 || m.sets[len(m.sets)-1] != last {
				t.Fatalf("meter got %v, want it to end at %d", m.sets, last)
			}
			for i := 1; i < len(m.sets); i++ {
				if m.sets[i] < m.sets[i-1] {
					t.Errorf("meter went back: %v", m.sets)
				}
			}
		})
	}
}

// TestStageAsMeter proves that a Stage counts what a follower sets, once,
// in the unit Begin gives.
func TestStageAsMeter(t *testing.T) {
	var out bytes.Buffer
	d := NewPlain(&out, "warcdedup")
	s := d.Start("resolve", "", 0)
	s.Begin("lines", 10)
	s.Set(4)
	s.Set(4)
	s.Set(10)
	if got := s.Counter().Load(); got != 10 {
		t.Errorf("done %d, want 10", got)
	}
	if !strings.Contains(s.status(time.Now()), "10 lines / 10 lines") {
		t.Errorf("status %q", s.status(time.Now()))
	}
}
