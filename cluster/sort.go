package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/manifest"
)

// sorter runs the system sort as the stages' users run it between the
// stage commands (LC_ALL=C, the keys of a manifest order), with its
// temporary files in a directory of the work directory.
type sorter struct {
	tmp      string // sort -T
	memory   string // sort -S, "" for sort's default
	parallel int    // sort --parallel
}

// args are sort's options for an order: the keys of its command
// ("LC_ALL=C sort -k6,6 ...").
func (s sorter) args(order *manifest.Order, merge bool) []string {
	args := []string{"-T", s.tmp}
	if s.memory != "" {
		args = append(args, "-S", s.memory)
	}
	if s.parallel > 1 {
		args = append(args, "--parallel="+strconv.Itoa(s.parallel))
	}
	if merge {
		args = append(args, "-m")
	}
	return append(args, strings.Fields(strings.TrimPrefix(order.Command, "LC_ALL=C sort"))...)
}

func (s sorter) command(ctx context.Context, args []string) (*exec.Cmd, *bytes.Buffer, error) {
	if err := os.MkdirAll(s.tmp, 0o755); err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, "sort", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr, nil
}

// sort sorts (or, with merge, merges the already sorted) inputs into out,
// which appears only when complete.
func (s sorter) sort(ctx context.Context, order *manifest.Order, merge bool, inputs []string, out string) error {
	tmp := filepath.Join(filepath.Dir(out), atomicfile.TempPrefix+filepath.Base(out)+"-sort")
	os.Remove(tmp)
	if len(inputs) == 0 {
		// sort reads standard input when it has no file.
		inputs = []string{os.DevNull}
	}
	cmd, stderr, err := s.command(ctx, append(append(s.args(order, merge), "-o", tmp), inputs...))
	if err != nil {
		return err
	}
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("sort %s: %v: %s", strings.Join(inputs, " "), err, strings.TrimSpace(stderr.String()))
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(out))
}

// merged is the output of sort -m over sorted inputs, read as it comes.
type merged struct {
	io.ReadCloser
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	what   string
}

// merge starts sort -m over inputs, each sorted in order.
func (s sorter) merge(ctx context.Context, order *manifest.Order, inputs []string) (*merged, error) {
	if len(inputs) == 0 {
		inputs = []string{os.DevNull}
	}
	cmd, stderr, err := s.command(ctx, append(s.args(order, true), inputs...))
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &merged{ReadCloser: out, cmd: cmd, stderr: stderr, what: strings.Join(inputs, " ")}, nil
}

// Wait ends the merge: its error if sort failed (after the output was read
// to its end, or abandoned).
func (m *merged) Wait() error {
	m.ReadCloser.Close()
	if err := m.cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() < 0 {
			return fmt.Errorf("sort -m %s: %v", m.what, err)
		}
		return fmt.Errorf("sort -m %s: %v: %s", m.what, err, strings.TrimSpace(m.stderr.String()))
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
