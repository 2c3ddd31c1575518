package syssort

// A stage's own lines, sorted: it writes the fields it sorts on first,
// separated by one space, with every byte of a field above 0x20 and
// numbers of a fixed width (Num), so that the whole-line byte order is
// the order of the fields, compared one by one as strings. Small files
// stay in memory and are sorted there, in the same order, so that a small
// job starts no process and writes no file.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"warcdedup/internal/gzfile"
)

// DefaultInMemory is Sorter.InMemory when it is 0.
const DefaultInMemory = 1 << 20

// bufferSize is the buffer of each file written or read.
const bufferSize = 64 << 10

func (s Sorter) inMemory() int {
	switch {
	case s.InMemory == 0:
		return DefaultInMemory
	case s.InMemory < 0:
		return 0
	}
	return s.InMemory
}

// File is a temporary file of lines: in memory while it is small, else
// in the temporary directory until Remove.
type File struct {
	s       Sorter
	pattern string
	// mem is the File in memory: chunks of lines, each whole in one,
	// so that the File grows without copying what it holds (verify's
	// files, 27 MB at once on the bench collection, were copied twice on
	// average as one slice doubled); n is their length.
	mem [][]byte
	n   int64
	// sorted, if not nil, are the lines of a File SortLines sorted in
	// memory, in order, each with its line feed: they point into the
	// bytes of its inputs, copied nowhere (flat copies them into mem
	// where the File is written to or sorted again).
	sorted [][]byte
	// held is what mem took of the Sorter's Budget.
	held int64
	name string // once on disk
	f    *os.File
	w    *bufio.Writer
	// gz: on disk gzip-compressed (a Sorter that compresses: its lines
	// take a fifth of the space), a member per writing; z writes it, and
	// raw counts its bytes uncompressed. A file sort wrote is plain.
	gz  bool
	z   *gzfile.Writer
	raw int64
	// Lines counts the lines written.
	Lines int64
}

// Create returns an empty File; on disk, its name starts with ".tmp-"
// and pattern.
func (s Sorter) Create(pattern string) (*File, error) {
	return &File{s: s, pattern: pattern}, nil
}

// Line appends a line and its line feed; it must hold no line feed.
func (f *File) Line(line []byte) error {
	if err := f.flat(); err != nil {
		return err
	}
	f.Lines++
	if f.name == "" && f.keep(len(line)+1) {
		f.add(line, true)
		return nil
	}
	if err := f.spill(); err != nil {
		return err
	}
	f.raw += int64(len(line)) + 1
	f.w.Write(line)
	return f.w.WriteByte('\n')
}

// keep reports whether n bytes more stay in memory: within InMemory, or
// within the Sorter's Budget, which they then take.
func (f *File) keep(n int) bool {
	b := f.s.Budget
	if b == nil {
		return f.n+int64(n) <= int64(f.s.inMemory())
	}
	if !b.take(int64(n)) {
		return false
	}
	f.held += int64(n)
	return true
}

// release gives back to the Budget what the File's memory took.
func (f *File) release() {
	f.s.Budget.give(f.held)
	f.held = 0
}

// Budget bounds the bytes that the Files of the Sorters sharing it hold
// in memory together, in place of each one's InMemory: a File goes to
// disk when its next line would pass it, and gives back what it held.
// One large File then stays in memory where others are small (verify's
// join by digest, 9 MB of the 31 MB of temporary lines of the bench
// collection), and the whole is bounded as before. A File that SortLines
// sorted in memory holds its inputs' bytes, which they count: Remove it
// before them. Safe for concurrent use.
type Budget struct{ left atomic.Int64 }

// NewBudget returns a Budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{}
	b.left.Store(n)
	return b
}

func (b *Budget) take(n int64) bool {
	if b.left.Add(-n) >= 0 {
		return true
	}
	b.left.Add(n)
	return false
}

func (b *Budget) give(n int64) {
	if b != nil && n > 0 {
		b.left.Add(n)
	}
}

// writer is where the lines of a file on disk go: through gzip or not.
func (f *File) writer(file *os.File) *bufio.Writer {
	if !f.gz {
		return bufio.NewWriterSize(file, bufferSize)
	}
	f.z = gzfile.NewWriter(file)
	return bufio.NewWriterSize(f.z, bufferSize)
}

// chunkSize is the size of the chunks of a File in memory.
const chunkSize = 256 << 10

// add appends line (and a line feed, with lf) to the File in memory.
func (f *File) add(line []byte, lf bool) {
	n := len(line)
	if lf {
		n++
	}
	last := len(f.mem) - 1
	if last < 0 || cap(f.mem[last])-len(f.mem[last]) < n {
		f.mem = append(f.mem, make([]byte, 0, max(chunkSize, n)))
		last++
	}
	c := append(f.mem[last], line...)
	if lf {
		c = append(c, '\n')
	}
	f.mem[last] = c
	f.n += int64(n)
}

// flat makes a File sorted in memory one of its own, to be written to:
// its lines, which point into its inputs' bytes, are copied into its
// memory, which takes from the Budget (or InMemory) as any line does, or,
// where that has no room for them, to disk.
func (f *File) flat() error {
	if f.sorted == nil {
		return nil
	}
	if f.keep(int(f.sortedSize())) {
		for _, l := range f.sorted {
			f.add(l, false)
		}
		f.sorted = nil
		return nil
	}
	return f.spill()
}

func (f *File) sortedSize() int64 {
	var n int64
	for _, l := range f.sorted {
		n += int64(len(l))
	}
	return n
}

// spill moves the file to disk, open for writing.
func (f *File) spill() error {
	if f.f != nil {
		return nil
	}
	if f.name != "" {
		file, err := os.OpenFile(f.name, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		f.f = file
		f.w = f.writer(file)
		return nil
	}
	if err := os.MkdirAll(f.s.dir(), 0o755); err != nil {
		return err
	}
	file, err := os.CreateTemp(f.s.dir(), ".tmp-"+f.pattern+"-*")
	if err != nil {
		return err
	}
	f.gz = f.s.Compress != ""
	f.name, f.f = file.Name(), file
	f.w = f.writer(file)
	for _, c := range f.mem {
		if err == nil {
			_, err = f.w.Write(c)
		}
	}
	for _, l := range f.sorted {
		if err == nil {
			_, err = f.w.Write(l)
		}
	}
	f.raw = f.n + f.sortedSize()
	f.mem, f.n, f.sorted = nil, 0, nil
	f.release()
	return err
}

// close ends a writing to disk.
func (f *File) close() error {
	if f.f == nil {
		return nil
	}
	err := f.w.Flush()
	if f.z != nil {
		if zerr := f.z.Close(); err == nil {
			err = zerr
		}
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	f.f, f.w, f.z = nil, nil, nil
	return err
}

// Remove removes the file.
func (f *File) Remove() {
	if f == nil {
		return
	}
	f.close()
	if f.name != "" {
		os.Remove(f.name)
	}
	f.mem, f.n, f.sorted, f.name = nil, 0, nil, ""
	f.release()
}

// OnDisk reports whether the File is a file in the temporary directory,
// not lines in memory (its own, or, sorted by SortLines, its inputs').
func (f *File) OnDisk() bool { return f.name != "" }

// size is the file's size in bytes.
func (f *File) size() (int64, error) {
	if f.name == "" {
		return f.n + f.sortedSize(), nil
	}
	if err := f.close(); err != nil {
		return 0, err
	}
	if f.gz {
		return f.raw, nil
	}
	fi, err := os.Stat(f.name)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Open returns the lines of the file, from the start. Close it when done.
func (f *File) Open() (*Lines, error) {
	if f.sorted != nil {
		return &Lines{lines: f.sorted}, nil
	}
	if f.name == "" {
		return &Lines{chunks: f.mem}, nil
	}
	if err := f.close(); err != nil {
		return nil, err
	}
	r, err := gzfile.Open(f.name)
	if err != nil {
		return nil, err
	}
	l := NewLines(r)
	l.done = func(bool) error { return r.Close() }
	return l, nil
}

// SortLines sorts the lines of the inputs into a new File, to be read
// more than once, or later.
func (s Sorter) SortLines(ctx context.Context, pattern string, inputs ...*File) (*File, error) {
	// Sorted in memory, no process would notice a cancellation: a
	// cancelled job stops here as it would in sort.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, _ := s.Create(pattern)
	lines, ok, err := s.sortInMemory(inputs)
	if err != nil {
		return nil, err
	}
	if ok {
		out.sorted, out.Lines = lines, int64(len(lines))
		return out, nil
	}
	if err := out.spill(); err != nil {
		return nil, err
	}
	if err := out.close(); err != nil {
		out.Remove()
		return nil, err
	}
	out.gz = false // sort writes it, plain
	cmd, stderr, feed, err := s.linesCommand(ctx, append(s.options(), "-o", out.name), inputs)
	if err == nil {
		err = feed.run(cmd)
		if err != nil {
			err = sortError(ctx, err, stderr)
		}
	}
	if err != nil {
		out.Remove()
		return nil, err
	}
	return out, nil
}

// Sorted sorts the lines of the inputs and returns them, read from sort's
// output as it merges. Close it when done.
func (s Sorter) Sorted(ctx context.Context, inputs ...*File) (*Lines, error) {
	if err := ctx.Err(); err != nil { // as in SortLines
		return nil, err
	}
	lines, ok, err := s.sortInMemory(inputs)
	if err != nil {
		return nil, err
	}
	if ok {
		return &Lines{lines: lines}, nil
	}
	cmd, stderr, feed, err := s.linesCommand(ctx, s.options(), inputs)
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		feed.close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		feed.close()
		return nil, err
	}
	feed.start()
	l := NewLines(out)
	l.done = func(whole bool) error {
		if !whole {
			// Stopped before the end: sort may be blocked writing. Asked
			// to end, it removes its temporary files (killed, it left
			// them); killed if it does not.
			cmd.Process.Signal(syscall.SIGTERM)
			kill := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
			cmd.Wait()
			kill.Stop()
			feed.wait()
			return nil
		}
		err := cmd.Wait()
		if ferr := feed.wait(); err == nil && ferr != nil {
			return ferr
		}
		if err != nil {
			return sortError(ctx, err, stderr)
		}
		return nil
	}
	return l, nil
}

// sortInMemory sorts the inputs here if together they are small enough,
// or if each is in memory still: their bytes are held already (each at
// most InMemory), the sorted lines point into them, copied nowhere, and
// the system sort would have them written out, compressed, fed back and
// read from its pipe first (verify's joins by capture and by target, of
// two or three files of 3-5 MB each on the bench collection).
func (s Sorter) sortInMemory(inputs []*File) ([][]byte, bool, error) {
	var size int64
	held := true
	for _, in := range inputs {
		n, err := in.size()
		if err != nil {
			return nil, false, err
		}
		size += n
		held = held && in.name == ""
	}
	if size > int64(s.inMemory()) && !held {
		return nil, false, nil
	}
	var lines [][]byte
	for _, in := range inputs {
		if in.sorted != nil {
			lines = append(lines, in.sorted...)
			continue
		}
		chunks := in.mem
		if in.name != "" {
			data, err := readFile(in.name)
			if err != nil {
				return nil, false, err
			}
			chunks = [][]byte{data}
		}
		for _, data := range chunks {
			var err error
			if lines, err = appendLines(lines, data); err != nil {
				return nil, false, err
			}
		}
	}
	return sortLines(lines, runtime.GOMAXPROCS(0)), true, nil
}

// parallelLines is the number of lines from which sortLines sorts on
// more than one core: below it, a goroutine and the merge's copy cost
// more than half a sort saves.
const parallelLines = 1 << 14

// sortLines sorts lines on up to cores cores: halves sorted at the same
// time, each again halved while cores are left, then merged. (verify's
// joins sort their files here one after another, each on one core, at
// the end of a run that has little else to do.) It returns the sorted
// lines, lines itself or a new slice.
func sortLines(lines [][]byte, cores int) [][]byte {
	if cores < 2 || len(lines) < parallelLines {
		slices.SortFunc(lines, compareLines)
		return lines
	}
	half := len(lines) / 2
	var a [][]byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		a = sortLines(lines[:half], cores/2)
	}()
	b := sortLines(lines[half:], cores-cores/2)
	<-done
	return mergeLines(make([][]byte, 0, len(lines)), a, b)
}

// mergeLines appends to dst the lines of a and b, each sorted, in order.
func mergeLines(dst, a, b [][]byte) [][]byte {
	for len(a) > 0 && len(b) > 0 {
		if compareLines(b[0], a[0]) < 0 {
			dst, b = append(dst, b[0]), b[1:]
		} else {
			dst, a = append(dst, a[0]), a[1:]
		}
	}
	return append(append(dst, a...), b...)
}

// appendLines appends the lines of data, each with its line feed.
func appendLines(lines [][]byte, data []byte) ([][]byte, error) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, errors.New("syssort: a file ends without a line feed")
		}
		lines = append(lines, data[:i+1])
		data = data[i+1:]
	}
	return lines, nil
}

// compareLines orders two lines, each with its line feed, as sort(1)
// does with LC_ALL=C and no keys: their bytes without the line feed
// compared one by one, a line before the longer ones it begins. (With
// the line feeds compared, a line would sort after a longer one it
// begins whose next byte is below '\n', a tab or a control byte.)
func compareLines(a, b []byte) int {
	return bytes.Compare(a[:len(a)-1], b[:len(b)-1])
}

// readFile reads a File's lines on disk whole, compressed or not.
func readFile(name string) ([]byte, error) {
	r, err := gzfile.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// linesCommand is sort over the inputs, each moved to disk; those
// compressed it reads through the feeds, which the caller starts once
// sort has (feeds.run, or start and wait).
func (s Sorter) linesCommand(ctx context.Context, args []string, inputs []*File) (*exec.Cmd, *bytes.Buffer, *feeds, error) {
	names := make([]string, 0, len(inputs))
	for _, in := range inputs {
		if err := in.spill(); err != nil {
			return nil, nil, nil, err
		}
		if err := in.close(); err != nil {
			return nil, nil, nil, err
		}
		names = append(names, in.name)
	}
	names, feed, err := feedInputs(orNull(names))
	if err != nil {
		return nil, nil, nil, err
	}
	cmd, stderr, err := s.command(ctx, append(args, names...))
	if err != nil {
		feed.close()
		return nil, nil, nil, err
	}
	cmd.ExtraFiles = feed.r
	return cmd, stderr, feed, nil
}

func sortError(ctx context.Context, err error, stderr *bytes.Buffer) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("sort: %v: %s", err, strings.TrimSpace(stderr.String()))
}

// Lines reads lines one at a time, each valid until the next.
type Lines struct {
	// In memory: the lines (each with its line feed), or their bytes in
	// chunks (data the one being read).
	lines  [][]byte
	chunks [][]byte
	data   []byte

	r    *bufio.Reader
	long []byte
	line []byte
	err  error
	// done ends the reading, whole or not.
	done func(whole bool) error
}

// NewLines reads the lines of r.
func NewLines(r io.Reader) *Lines { return &Lines{r: bufio.NewReaderSize(r, bufferSize)} }

// Next reads the next line and reports whether there is one; Err says why
// not.
func (l *Lines) Next() bool {
	if l.err != nil {
		return false
	}
	if l.r == nil {
		return l.nextInMemory()
	}
	b, err := l.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = l.r.ReadSlice('\n')
			l.long = append(l.long, b...)
		}
		b = l.long
	}
	switch {
	case err == io.EOF && len(b) == 0:
		l.err = io.EOF
		return false
	case err == io.EOF:
		l.err = errors.New("syssort: the last line has no line feed")
		return false
	case err != nil:
		l.err = err
		return false
	}
	l.line = b[:len(b)-1]
	return true
}

func (l *Lines) nextInMemory() bool {
	for len(l.data) == 0 && len(l.chunks) > 0 {
		l.data, l.chunks = l.chunks[0], l.chunks[1:]
	}
	var b []byte
	switch {
	case len(l.lines) > 0:
		b, l.lines = l.lines[0], l.lines[1:]
	case len(l.data) > 0:
		i := bytes.IndexByte(l.data, '\n')
		if i < 0 {
			l.err = errors.New("syssort: the last line has no line feed")
			return false
		}
		b, l.data = l.data[:i+1], l.data[i+1:]
	default:
		l.err = io.EOF
		return false
	}
	l.line = b[:len(b)-1]
	return true
}

// Bytes is the current line, without its line feed.
func (l *Lines) Bytes() []byte { return l.line }

// Err is why Next returned false: nil at the end of the lines.
func (l *Lines) Err() error {
	if l.err == io.EOF {
		return nil
	}
	return l.err
}

// Close ends the reading; after every line was read, it returns a failure
// of the sort that wrote them.
func (l *Lines) Close() error {
	done := l.done
	l.done = nil
	if done == nil {
		return nil
	}
	return done(l.err == io.EOF)
}

// Fields splits a line into len(f) space-separated fields, the last
// holding the rest of the line; false if it has fewer.
func Fields(line []byte, f [][]byte) bool {
	for i := range f {
		if i == len(f)-1 {
			f[i] = line
			return true
		}
		j := bytes.IndexByte(line, ' ')
		if j < 0 {
			return false
		}
		f[i], line = line[:j], line[j+1:]
	}
	return true
}

// Num appends n (n >= 0) as 16 hexadecimal digits, lower case, so that
// numbers sort as their fields do.
func Num(dst []byte, n int64) []byte {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[n&15]
		n >>= 4
	}
	return append(dst, b[:]...)
}

// ParseNum reads a field of Num.
func ParseNum(b []byte) (int64, error) {
	if len(b) != 16 {
		return 0, fmt.Errorf("syssort: %q: not a number of 16 digits", b)
	}
	var n int64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			n = n<<4 | int64(c-'0')
		case 'a' <= c && c <= 'f':
			n = n<<4 | int64(c-'a'+10)
		default:
			return 0, fmt.Errorf("syssort: %q: not a number", b)
		}
	}
	return n, nil
}
