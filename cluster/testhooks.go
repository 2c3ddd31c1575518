//go:build warcdedup_testhooks

package cluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"warcdedup/workdir"
)

// This file is built only with the build tag warcdedup_testhooks, into
// the warcdedup that the fault tests of e2e/cluster build and run under
// Slurm: a warcdedup built without it (every other) has no test hook,
// and reads no WARCDEDUP_TEST_FREEZE.

// testHooks says that the task's hooks are built in.
const testHooks = true

// freezeForTest stops the task's own process, for the fault tests of
// e2e/cluster: when WARCDEDUP_TEST_FREEZE names the task ("STEP" or
// "STEP#INDEX", with ":start", ":mid" or ":end", the default, for where),
// the first attempt that reaches that point writes its process ID to
// tasks/STEP/N.frozen and stops (SIGSTOP), so that a test can crash its
// node or cancel it mid-stage. "mid" is the first look at the progress that finds some work
// done and some left, or the end for a task too quick for that. A later
// attempt finds the file and goes on.
func (k *task) freezeForTest(where string) error {
	spec := os.Getenv("WARCDEDUP_TEST_FREEZE")
	if spec == "" {
		return nil
	}
	me := k.step.Name
	if k.step.Array() {
		me += "#" + strconv.Itoa(k.Index)
	}
	for _, f := range strings.Split(spec, ",") {
		name, at, _ := strings.Cut(f, ":")
		if at == "" {
			at = "end"
		}
		if name != me || (at != where && !(at == "mid" && where == "end")) {
			continue
		}
		marker := k.wd.taskFile(k.Step, k.Index, ".frozen")
		if _, err := os.Stat(marker); err == nil {
			return nil
		}
		if err := workdir.WriteFile(marker, []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
			return err
		}
		fmt.Fprintf(k.Log, "warcdedup: %s: frozen for a test (pid %d)\n", me, os.Getpid())
		return syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
	return nil
}
