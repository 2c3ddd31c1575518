package syssort

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"

	"warcdedup/internal/gzfile"
)

// feeds are the inputs of a sort stored gzip-compressed (the work files
// kept so, see package gzfile), which sort reads decompressed through
// pipes, named to it /dev/fd/N; the others it reads itself.
type feeds struct {
	names []string
	r, w  []*os.File
	errs  chan error
}

// feedInputs returns sort's input arguments for inputs, with a pipe for
// each gzip one (the command's extra files, f.r, from fd 3 on).
func feedInputs(inputs []string) ([]string, *feeds, error) {
	args := slices.Clone(inputs)
	f := &feeds{}
	for i, name := range inputs {
		gz, err := gzfile.IsGzip(name)
		if err != nil || !gz {
			continue // sort says what is wrong with a file it cannot read
		}
		r, w, err := os.Pipe()
		if err != nil {
			f.close()
			return nil, nil, err
		}
		args[i] = fmt.Sprintf("/dev/fd/%d", 3+len(f.r))
		f.names, f.r, f.w = append(f.names, name), append(f.r, r), append(f.w, w)
	}
	return args, f, nil
}

// start, once sort has started (with f.r), closes this process's read
// ends and copies each file, decompressed, into its pipe.
func (f *feeds) start() {
	for _, r := range f.r {
		r.Close()
	}
	f.errs = make(chan error, len(f.w))
	for i, w := range f.w {
		go func() {
			in, err := gzfile.Open(f.names[i])
			if err == nil {
				_, err = io.Copy(w, in)
				in.Close()
			}
			w.Close()
			f.errs <- err
		}()
	}
}

// wait returns the first error of a copy: a file that could not be read
// whole, whose cut sort took for its end.
func (f *feeds) wait() error {
	var first error
	for range f.w {
		if err := <-f.errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// run runs cmd, which reads the feeds, and returns its error, or else
// the feeds'.
func (f *feeds) run(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		f.close()
		return err
	}
	f.start()
	err := cmd.Wait()
	if ferr := f.wait(); err == nil {
		err = ferr
	}
	return err
}

// close closes the pipes of a sort that did not start.
func (f *feeds) close() {
	for _, p := range append(f.r, f.w...) {
		p.Close()
	}
}
