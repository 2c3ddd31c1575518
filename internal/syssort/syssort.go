// Package syssort runs the system sort(1), so that what needs its
// records in an order it did not read them in holds none of them in
// memory: byte order (LC_ALL=C), temporary files in the work directory
// rather than /tmp, a bounded buffer, several threads, and a sort that
// dies with its parent. sort spills to disk, so memory stays bounded
// whatever the input. Every sort and merge of warcdedup run, cluster,
// undo, assess, warcsumcmp and warccdx goes through it, in two forms:
//
//   - work files sorted on the keys of a manifest order, as those who
//     script the pipeline commands sort them between them (Sort, Merge,
//     MergeStream);
//   - a stage's own lines, written to a File, sorted whole-line and read
//     back for a merge join (Create, SortLines, Sorted: lines.go).
package syssort

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
	"syscall"
	"time"

	"warcdedup/atomicfile"
)

// Sorter is how the system sort runs.
type Sorter struct {
	// TempDir holds sort's temporary files (sort -T) and those of
	// Create, made if need be: the work directory's, not /tmp. "" is
	// os.TempDir().
	TempDir string
	// Memory is sort's buffer (sort -S, e.g. "1G" or "25%"); "" is
	// DefaultMemory, so that a sort's memory does not grow with its input
	// (GNU sort sizes its buffer to the input, up to an eighth of the
	// machine's memory).
	Memory string
	// Parallel is sort's threads (sort --parallel), 0 for sort's default
	// (as many as there are cores, up to 8).
	Parallel int
	// Compress is the program sort compresses its temporary files with
	// (sort --compress-program), "" none.
	Compress string
	// InMemory is the size up to which a File stays in memory (where
	// Budget is nil), and Files of that size together are sorted in this
	// process (SortLines, Sorted; Files each still in memory are sorted
	// here whatever their total): 0 is DefaultInMemory, a negative size
	// none.
	InMemory int
	// Budget, if not nil, bounds what the Files of this Sorter and of
	// the others sharing it hold in memory together, in place of each
	// one's InMemory.
	Budget *Budget
}

// Compressor is the program a job's sorts compress their temporary
// files with (Sorter.Compress): the first installed of zstd and lz4
// (each faster than the disk it saves writing to at level 1-3: sort
// spends less time waiting for them than for the bytes they spare) and
// gzip; "" if none is.
func Compressor() string {
	for _, p := range []string{"zstd", "lz4", "gzip"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	return ""
}

// DefaultMemory is sort's buffer when Sorter.Memory is "".
const DefaultMemory = "64M"

func (s Sorter) dir() string {
	if s.TempDir == "" {
		return os.TempDir()
	}
	return s.TempDir
}

// Sort sorts the inputs on the keys of command, a sort command as the
// manifest's orders give it ("LC_ALL=C sort -k6,6 -k7,7n ..."), into the
// file out, which appears only when complete: synced, then renamed.
func (s Sorter) Sort(ctx context.Context, command string, inputs []string, out string) error {
	return s.toFile(ctx, command, false, inputs, out)
}

// Merge merges inputs, each sorted on the keys of command, into out
// (sort -m), which appears only when complete.
func (s Sorter) Merge(ctx context.Context, command string, inputs []string, out string) error {
	return s.toFile(ctx, command, true, inputs, out)
}

// options are sort's options but for its keys: up to 64 runs merged at
// once, so that the runs of up to 64 buffers are merged in one pass
// (sort's default, 16, merges what is above 16 buffers twice, and the
// time per line would grow with the input).
func (s Sorter) options() []string {
	mem := s.Memory
	if mem == "" {
		mem = DefaultMemory
	}
	args := []string{"-T", s.dir(), "-S", mem, "--batch-size=64"}
	if s.Compress != "" {
		args = append(args, "--compress-program="+s.Compress)
	}
	if s.Parallel > 0 {
		args = append(args, "--parallel="+strconv.Itoa(s.Parallel))
	}
	return args
}

// args are sort's options for the keys of command.
func (s Sorter) args(command string, merge bool) []string {
	args := s.options()
	if merge {
		args = append(args, "-m")
	}
	return append(args, strings.Fields(strings.TrimPrefix(command, "LC_ALL=C sort"))...)
}

// command is sort with args, its temporary directory made, its error
// output kept.
func (s Sorter) command(ctx context.Context, args []string) (*exec.Cmd, *bytes.Buffer, error) {
	if err := os.MkdirAll(s.dir(), 0o755); err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, "sort", args...)
	// Stopped (an interrupted command), sort is asked to end, which it
	// does removing its temporary files; killed, it left them in the
	// temporary directory, as large as its input.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	dieWithParent(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr, nil
}

// orNull is the inputs, or /dev/null for none: sort reads its standard
// input when it is given no file.
func orNull(inputs []string) []string {
	if len(inputs) == 0 {
		return []string{os.DevNull}
	}
	return inputs
}

func (s Sorter) toFile(ctx context.Context, command string, merge bool, inputs []string, out string) error {
	inputs = orNull(inputs)
	// sort writes its own output (it checks that the output is no
	// input); it goes to a temporary name, synced and renamed when
	// complete.
	tmp := filepath.Join(filepath.Dir(out), atomicfile.TempPrefix+filepath.Base(out)+"-sort")
	os.Remove(tmp)
	args, feed, err := feedInputs(inputs)
	if err != nil {
		return err
	}
	cmd, stderr, err := s.command(ctx, append(append(s.args(command, merge), "-o", tmp), args...))
	if err != nil {
		feed.close()
		return err
	}
	cmd.ExtraFiles = feed.r
	if err := cmd.Start(); err != nil {
		feed.close()
		return fmt.Errorf("sort %s: %v", strings.Join(inputs, " "), err)
	}
	feed.start()
	err = cmd.Wait()
	if ferr := feed.wait(); err == nil && ferr != nil {
		err = ferr
		stderr.Reset()
	}
	if err != nil {
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

// Merged is the output of sort -m over sorted inputs, read as it comes.
// Its end (io.EOF) means that sort succeeded: a sort that failed makes
// the last Read return its error instead, so that a reader of the merge
// never takes a cut one for whole.
type Merged struct {
	out    io.ReadCloser
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	what   string
	waited bool
	err    error // of sort, once waited for
}

// MergeStream starts sort -m over inputs, each sorted on the keys of
// command; its output is read from the Merged, and Wait ends it.
func (s Sorter) MergeStream(ctx context.Context, command string, inputs []string) (*Merged, error) {
	inputs = orNull(inputs)
	cmd, stderr, err := s.command(ctx, append(s.args(command, true), inputs...))
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
	return &Merged{out: out, cmd: cmd, stderr: stderr, what: strings.Join(inputs, " ")}, nil
}

// Read reads the merge's output; at its end, and after, io.EOF or sort's
// error.
func (m *Merged) Read(p []byte) (int, error) {
	if m.waited {
		// sort has ended (and its output is closed): what ended it is
		// all there is to read.
		if m.err != nil {
			return 0, m.err
		}
		return 0, io.EOF
	}
	n, err := m.out.Read(p)
	if err == io.EOF {
		if werr := m.wait(); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// Wait ends the merge, read to its end or abandoned: sort's error, if it
// failed.
func (m *Merged) Wait() error {
	m.out.Close()
	return m.wait()
}

func (m *Merged) wait() error {
	if m.waited {
		return m.err
	}
	m.waited = true
	if err := m.cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() < 0 {
			m.err = fmt.Errorf("sort -m %s: %v", m.what, err)
		} else {
			m.err = fmt.Errorf("sort -m %s: %v: %s", m.what, err, strings.TrimSpace(m.stderr.String()))
		}
	}
	return m.err
}

// Share returns the Sorter for one of n sorts run at once: each gets an
// nth of the buffer and of the threads (at least one), so that together
// they hold what one sort alone would (--sort-memory is the job's bound,
// not each sort's). A Memory sort would not take is left as it is, for
// sort to name.
func (s Sorter) Share(n int) Sorter {
	if n <= 1 {
		return s
	}
	if s.Parallel > 0 {
		s.Parallel = max(1, s.Parallel/n)
	}
	mem := s.Memory
	if mem == "" {
		mem = DefaultMemory
	}
	if shared, ok := shareMemory(mem, n); ok {
		s.Memory = shared
	}
	return s
}

// shareMemory is an nth of sort's buffer size mem (sort -S: a number of
// KiB, or one with a suffix: % of the machine's memory, b, or a power of
// 1024 as GNU sort spells them, k m g t in either case, P, E), read as
// sort reads it (blanks and a plus sign may come first).
func shareMemory(mem string, n int) (string, bool) {
	num := strings.TrimPrefix(strings.TrimLeft(mem, " \t\n\v\f\r"), "+")
	if num == "" {
		return "", false
	}
	unit := byte('K')
	if last := num[len(num)-1]; last < '0' || last > '9' {
		num, unit = num[:len(num)-1], last
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return "", false
	}
	if unit == '%' {
		return strconv.FormatUint(max(1, v/uint64(n)), 10) + "%", true
	}
	shift := strings.IndexByte("bKMGTPE", unit)
	if shift < 0 {
		shift = strings.IndexByte("bkmgt", unit) // sort takes these in lower case too
	}
	if shift < 0 || v > 1<<(64-10*uint(shift))-1 {
		return "", false
	}
	bytes := v << (10 * uint(shift)) / uint64(n)
	return strconv.FormatUint(max(1, bytes), 10) + "b", true
}
