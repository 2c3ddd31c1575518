package cmdutil

import (
	"context"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestNotifyContextKeepsIgnoredSignals: a signal the process ignores (a
// SIGINT a shell set to ignored for a background command) stays ignored,
// and another of the signals named still ends the context.
func TestNotifyContextKeepsIgnoredSignals(t *testing.T) {
	signal.Ignore(syscall.SIGUSR1)
	defer signal.Reset(syscall.SIGUSR1)
	for _, c := range []struct {
		name   string
		send   syscall.Signal
		cancel bool
	}{
		{name: "an ignored signal is not caught", send: syscall.SIGUSR1, cancel: false},
		{name: "a signal not ignored ends the context", send: syscall.SIGUSR2, cancel: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, stop := NotifyContext(context.Background(), syscall.SIGUSR1, syscall.SIGUSR2)
			defer stop()
			if err := syscall.Kill(syscall.Getpid(), c.send); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
				if !c.cancel {
					t.Errorf("the context ended on %v, which the process ignores", c.send)
				}
			case <-time.After(500 * time.Millisecond):
				if c.cancel {
					t.Errorf("the context did not end on %v", c.send)
				}
			}
		})
	}
}
