package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"warcdedup/atomicfile"
)

// SortOptions are how the system sort runs.
type SortOptions struct {
	TempDir  string // its temporary files (sort -T): the work directory's, not /tmp
	Memory   string // its buffer (sort -S), "" for sort's default
	Parallel int    // its threads (sort --parallel)
}

// Sort runs the system sort with the keys of command (one of the
// manifest's sort commands, "LC_ALL=C sort -k6,6 ..."), in byte order,
// from the file in to the file out, which appears only when complete. The
// system sort is what users run between the stages, so the job sorts as
// they would; it spills to TempDir, bounded in memory whatever the input.
func Sort(ctx context.Context, o SortOptions, command, in, out string) error {
	keys := strings.Fields(strings.TrimPrefix(command, "LC_ALL=C sort"))
	// sort writes its own output (it checks that the output is no input);
	// it goes to a temporary name, synced and renamed when complete.
	tmp := filepath.Join(filepath.Dir(out), atomicfile.TempPrefix+filepath.Base(out)+"-sort")
	os.Remove(tmp)
	args := []string{"-T", o.TempDir}
	if o.Memory != "" {
		args = append(args, "-S", o.Memory)
	}
	if o.Parallel > 1 {
		args = append(args, "--parallel="+strconv.Itoa(o.Parallel))
	}
	args = append(args, keys...)
	args = append(args, "-o", tmp, in)
	cmd := exec.CommandContext(ctx, "sort", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("sort %s: %v: %s", filepath.Base(in), err, strings.TrimSpace(stderr.String()))
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := atomicfile.SyncDir(filepath.Dir(out)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
