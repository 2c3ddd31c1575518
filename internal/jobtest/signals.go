package jobtest

import (
	"os"
	"os/signal"
	"syscall"
)

// InterruptibleChildren makes the commands a test starts begin with
// SIGINT's and SIGTERM's default actions even when the test binary was
// started with them ignored (a script's `cmd &` ignores SIGINT): a child
// inherits an ignored signal, and the commands keep ignoring what they
// were started ignoring (cmdutil.NotifyContext), so a test that
// interrupts one would see it run to its end. A signal the test binary
// handles is reset to its default action in every child it starts; the
// binary, which ignored it, goes on ignoring it.
func InterruptibleChildren() {
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		if signal.Ignored(s) {
			signal.Notify(make(chan os.Signal, 1), s)
		}
	}
}
