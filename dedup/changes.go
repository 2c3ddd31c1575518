package dedup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/tsv"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// A job's manifests describe the files as the hash stage read them. The
// collection may change after that, under assess (whose hashing a run
// reuses) or an interrupted run: files added, replaced by another
// process, removed. The hash stage keeps each file's stamp (size, times,
// inode: see fileStamp) as it was before it was read, so that a run can
// tell: one that has not begun to rewrite hashes again (through the
// cache, only what changed); one that has finishes its job on the files
// it hashed, leaves the changed ones out of the verification (their
// records were never this job's), names them, and does not record the
// collection as done, so that the next run takes them.

// changes are how the collection's files differ from those the hash stage
// read, by name as warcsum.Collect gives them, each sorted.
type changes struct {
	Added   []string `json:"added,omitempty"`
	Changed []string `json:"changed,omitempty"` // by another process, not by the job
	Removed []string `json:"removed,omitempty"`
	// Unknown is set when the hash stage's stamps were not kept (a work
	// directory of an earlier warcdedup): nothing can be told.
	Unknown bool `json:"unknown,omitempty"`
}

func (c *changes) none() bool {
	return c == nil || !c.Unknown && len(c.Added)+len(c.Changed)+len(c.Removed) == 0
}

// String says what changed, in a sentence.
func (c *changes) String() string {
	if c.Unknown {
		return "the files the hash stage read are not known (a work directory of an earlier warcdedup)"
	}
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"added", c.Added}, {"changed", c.Changed}, {"removed", c.Removed}} {
		if len(p.names) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(p.names), p.what, inline(p.names, 3)))
		}
	}
	return strings.Join(parts, ", ")
}

// excluded are the files the job's completion must not record as done:
// the next run takes them.
func (c *changes) excluded() map[string]bool {
	m := map[string]bool{}
	if c != nil {
		for _, n := range slices.Concat(c.Added, c.Changed) {
			m[n] = true
		}
	}
	return m
}

// writeStamps writes, into the work file name, each input's name and its
// stamp as it is now ("-" where the file system gives none), before the
// hash stage reads it.
func writeStamps(name string, inputs []warcsum.Input) error {
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := bufio.NewWriter(f)
	for _, in := range inputs {
		s, ok := inputStamp(in)
		if !ok {
			s = "-"
		}
		fmt.Fprintf(w, "%s\t%s\n", manifest.EscapeFile(in.Name), s)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.CommitRenamed()
}

// readStamps reads what writeStamps wrote, by name.
func readStamps(name string) (map[string]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		n, s, ok := tsv.Cut(sc.Text())
		file, err := manifest.UnescapeFile(n)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: line %d: want a file name and its stamp", name, line)
		}
		m[file] = s
	}
	return m, sc.Err()
}

// changesSinceHash compares the collection's files now with those the
// hash stage read. replaced, if not nil, are the files the job's rewrite
// replaced and their size after it: a file among them that still has that
// size changed by the job's own hand.
func (r *run) changesSinceHash(replaced map[string]int64) (*changes, error) {
	hashed, err := readStamps(r.wd.File(workdir.HashedFiles))
	if errors.Is(err, os.ErrNotExist) {
		return &changes{Unknown: true}, nil
	}
	if err != nil {
		return nil, err
	}
	inputs, err := r.collect()
	if err != nil {
		return nil, err
	}
	c := &changes{}
	for _, in := range inputs {
		was, ok := hashed[in.Name]
		delete(hashed, in.Name)
		now, _ := inputStamp(in)
		size, ours := replaced[in.Name]
		switch {
		case !ok:
			c.Added = append(c.Added, in.Name)
		case now == was && now != "":
		case ours && size == in.Size:
			// The job's own new version.
		default:
			c.Changed = append(c.Changed, in.Name)
		}
	}
	for name := range hashed {
		c.Removed = append(c.Removed, name)
	}
	slices.Sort(c.Added)
	slices.Sort(c.Changed)
	slices.Sort(c.Removed)
	return c, nil
}

// replacedSinceHash returns the files the job's runs replaced (the rewrite
// log's entries since the hash stage) and each one's size after the last.
func (r *run) replacedSinceHash() (map[string]int64, error) {
	sizes := map[string]int64{}
	f, err := os.Open(r.wd.File(workdir.LogFile))
	if errors.Is(err, os.ErrNotExist) {
		return sizes, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lr := rewritelog.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, r.state.LogSizeAtHash, 1<<62), 256<<10), r.wd.File(workdir.LogFile))
	lr.Fixity = func(fx rewritelog.Fixity) error {
		if fx.NewSum != "-" {
			sizes[fx.File] = fx.NewSize
		}
		return nil
	}
	for {
		if _, err := lr.Next(); err == io.EOF {
			return sizes, nil
		} else if err != nil {
			return nil, err
		}
	}
}

// withoutFiles copies the manifest from to the work file to, leaving out
// the lines of the files named (unescaped).
func withoutFiles(from, to string, files []string) error {
	leave := map[string]bool{}
	for _, n := range files {
		leave[manifest.EscapeFile(n)] = true
	}
	in, err := gzfile.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := atomicfile.Create(to, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	w := bufio.NewWriterSize(out, 256<<10)
	sc := bufio.NewScanner(bufio.NewReaderSize(in, 256<<10))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		file, _, _ := bytes.Cut(line, []byte(" "))
		if leave[string(file)] {
			continue
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.CommitRenamed()
}
