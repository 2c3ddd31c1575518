package wacz

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
)

// lineSorter gathers lines and gives them back in byte order (LC_ALL=C
// sort): in memory up to memLimit bytes, beyond that through a file and
// the system sort, so that memory stays bounded by the limit whatever
// the number of lines.
type lineSorter struct {
	tmpDir   string
	memLimit int
	lines    [][]byte
	size     int
	spill    *os.File
	w        *bufio.Writer
}

const sortMemory = 64 << 20

func newLineSorter(tmpDir string) *lineSorter {
	return &lineSorter{tmpDir: tmpDir, memLimit: sortMemory}
}

func (s *lineSorter) add(l []byte) error {
	if bytes.IndexByte(l, '\n') >= 0 {
		return fmt.Errorf("index line with a line feed: %.100q", l)
	}
	if s.spill == nil && s.size+len(l) <= s.memLimit {
		s.lines = append(s.lines, bytes.Clone(l))
		s.size += len(l) + 1
		return nil
	}
	if s.spill == nil {
		f, err := os.CreateTemp(s.tmpDir, ".tmp-wacz-sort-*")
		if err != nil {
			return err
		}
		s.spill, s.w = f, bufio.NewWriterSize(f, 1<<20)
		for _, m := range s.lines {
			s.w.Write(m)
			s.w.WriteByte('\n')
		}
		s.lines = nil
	}
	s.w.Write(l)
	return s.w.WriteByte('\n')
}

// each calls fn with every line in order.
func (s *lineSorter) each(fn func([]byte) error) error {
	if s.spill == nil {
		slices.SortFunc(s.lines, bytes.Compare)
		for _, l := range s.lines {
			if err := fn(l); err != nil {
				return err
			}
		}
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	args := []string{"-S", "64M"}
	if s.tmpDir != "" {
		args = append(args, "-T", s.tmpDir)
	}
	cmd := exec.CommandContext(context.Background(), "sort", append(args, s.spill.Name())...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	br := bufio.NewReaderSize(out, 1<<20)
	var ferr error
	for {
		l, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long := bytes.Clone(l)
			for err == bufio.ErrBufferFull {
				l, err = br.ReadSlice('\n')
				long = append(long, l...)
			}
			l = long
		}
		if len(l) > 0 && ferr == nil {
			ferr = fn(bytes.TrimSuffix(l, []byte("\n")))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			ferr = err
			break
		}
	}
	if ferr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return ferr
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("sort: %v: %s", err, stderr.String())
	}
	return nil
}

// close removes the spill file.
func (s *lineSorter) close() {
	if s.spill != nil {
		s.spill.Close()
		os.Remove(s.spill.Name())
		s.spill = nil
	}
}
