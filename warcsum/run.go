package warcsum

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"warcdedup/internal/ordered"
	"warcdedup/internal/spool"
	"warcdedup/manifest"
)

// Input is one file to read: where it is on disk and the name field 1 gives
// it (relative to the directory it was found under, or its base name when
// it was named directly).
type Input struct {
	Path string
	Name string
	Size int64
}

// IsArchiveName reports whether a file found in a directory is read: the
// WARC and ARC names, in any case (.ARC files exist).
func IsArchiveName(name string) bool {
	n := strings.ToLower(name)
	for _, ext := range []string{".warc", ".warc.gz", ".arc", ".arc.gz"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// Collect turns command-line paths into Inputs, in argument order and, within
// a directory, in byte order of the names. A file named directly is read
// whatever its name; files in a directory only if IsArchiveName, and
// subdirectories only when recursive. Two inputs with the same name are an
// error, because field 1 must name one file.
func Collect(paths []string, recursive bool) ([]Input, error) {
	var inputs []Input
	seen := map[string]string{}
	add := func(in Input) error {
		if prev, dup := seen[in.Name]; dup {
			return fmt.Errorf("%s and %s would both be listed as %q: field 1 must name one file (name the directory above them instead)", prev, in.Path, in.Name)
		}
		seen[in.Name] = in.Path
		inputs = append(inputs, in)
		return nil
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := add(Input{Path: p, Name: filepath.Base(p), Size: fi.Size()}); err != nil {
				return nil, err
			}
			continue
		}
		var found []Input
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || !IsArchiveName(d.Name()) {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(p, path)
			if err != nil {
				return err
			}
			found = append(found, Input{Path: path, Name: filepath.ToSlash(rel), Size: info.Size()})
			return nil
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(found, func(a, b Input) int { return strings.Compare(a.Name, b.Name) })
		for _, in := range found {
			if err := add(in); err != nil {
				return nil, err
			}
		}
	}
	return inputs, nil
}

// Progress is updated while Run works, for a display to read.
type Progress struct {
	Bytes      atomic.Int64 // bytes of input read so far
	Files      atomic.Int64 // files finished
	TotalBytes int64
	TotalFiles int64
}

// spoolMemory is how much of one file's manifest lines is held in memory
// while an earlier file is still being read; the rest goes to a temporary
// file, so memory stays bounded however many records a file holds.
const spoolMemory = 4 << 20

// job is one file of a run and the lines it produced.
type job struct {
	in    Input
	out   *spool.Spool
	buf   []byte
	done  chan struct{}
	stats Stats
	err   error
}

// Abandon finishes a job that no worker will run.
func (j *job) Abandon(error) { close(j.done) }

func (j *job) write(l *manifest.Line) error {
	j.buf = l.Append(j.buf[:0])
	_, err := j.out.Write(j.buf)
	return err
}

// countingReader adds what it reads from a file to a progress counter.
type countingReader struct {
	f *os.File
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Seek lets the reader seek back over a damaged gzip member instead of
// keeping a copy of every byte it reads in case one is.
func (c countingReader) Seek(off int64, whence int) (int64, error) { return c.f.Seek(off, whence) }

// Runner reads many files in parallel and writes their manifest lines in
// input order.
type Runner struct {
	Options
	Jobs     int       // files read in parallel; 1 if < 1
	Progress *Progress // updated while Run works; may be nil
	// OnFileError receives each file that could not be read to its end. It
	// is called in input order from the goroutine that called Run.
	OnFileError func(Input, error)

	spoolMemory int // per-file output held in memory; spoolMemory if 0
}

// Run reads the inputs and writes their manifest lines to out: files in
// input order, records in file order, whatever Jobs is. A file that cannot
// be read is passed to OnFileError and counted; the run goes on. The error
// returned is one that makes the output unusable (writing it failed).
func (r *Runner) Run(inputs []Input, out io.Writer) (Stats, error) {
	jobs := max(r.Jobs, 1)
	progress := r.Progress
	if progress == nil {
		progress = new(Progress)
	}
	for _, in := range inputs {
		progress.TotalBytes += in.Size
	}
	progress.TotalFiles = int64(len(inputs))
	memory := r.spoolMemory
	if memory == 0 {
		memory = spoolMemory
	}

	// The queue bounds the files read ahead of the one being written, and
	// so the memory their spooled output takes. A failed write stops it.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	q := ordered.New[*job](2 * jobs)
	// Spools written out are used again: their memory is then allocated
	// once, not once per file.
	spools := make(chan *spool.Spool, jobs)
	go func() {
		defer q.Close()
		for _, in := range inputs {
			var out *spool.Spool
			select {
			case out = <-spools:
			default:
				out = spool.New(memory)
			}
			if q.Add(ctx, &job{in: in, out: out, done: make(chan struct{})}) != nil {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			summer := NewSummer(r.Options)
			for s := range q.Work() {
				if ctx.Err() == nil {
					s.stats, s.err = sumPath(summer, s, progress)
				}
				progress.Files.Add(1)
				close(s.done)
			}
		}()
	}

	bw := bufio.NewWriterSize(out, 256<<10)
	var total Stats
	var fatal error
	for s := range q.Results() {
		<-s.done
		if fatal == nil {
			if s.err != nil && r.OnFileError != nil {
				r.OnFileError(s.in, s.err)
			}
			total.Add(&s.stats)
			if _, err := s.out.WriteTo(bw); err != nil {
				fatal = err
				stop()
			}
		}
		if s.out.Reset() == nil {
			select {
			case spools <- s.out:
			default:
				s.out.Close()
			}
		}
		q.Release()
	}
	wg.Wait()
	if fatal == nil {
		fatal = bw.Flush()
	}
	return total, fatal
}

func sumPath(summer *Summer, s *job, progress *Progress) (Stats, error) {
	f, err := os.Open(s.in.Path)
	if err != nil {
		return Stats{FilesFailed: 1}, err
	}
	defer f.Close()
	st, err := summer.SumFile(countingReader{f, &progress.Bytes}, s.in.Name, s.write)
	st.Bytes = s.in.Size
	return st, err
}
