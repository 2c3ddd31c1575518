package stage

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"warcdedup/atomicfile"
	"warcdedup/internal/syssort"
)

// DepsCounter counts revisits by their file and their original's file for
// a dependency list (deps.tsv, WriteDeps's format) in bounded memory. It
// sums pairs in a map of at most depsHeld pairs; when that is full, it
// moves the sums to a syssort.File of "FILE ORIGINAL-FILE COUNT" lines
// (names escaped, as manifests have them: no byte at or below the space),
// which Write reads back sorted, in memory while small, else through the
// system sort, and adds up pair by pair. A collection whose files'
// revisits point into most of the files before them has up to files
// squared pairs: about 2x10^6 at 10^7 responses in the 1,600 files of
// scripts/warcgen, which held 94 MB in a map.
type DepsCounter struct {
	Sorter syssort.Sorter
	// Unresolved counts the revisits that refer to no record of the
	// collection (a comment line of the list).
	Unresolved int64
	// Held is the most pairs summed in memory; 0 is depsHeld.
	Held int

	held    map[[2]string]int64
	spilled *syssort.File
}

// depsHeld is the most pairs a DepsCounter sums in memory (some 10 MB).
const depsHeld = 1 << 16

// Add counts n revisits of file whose originals are in original.
func (c *DepsCounter) Add(file, original string, n int64) error {
	if c.held == nil {
		c.held = map[[2]string]int64{}
	}
	c.held[[2]string{file, original}] += n
	if limit := cmp.Or(c.Held, depsHeld); len(c.held) >= limit {
		return c.spill()
	}
	return nil
}

// spill moves the sums held to the file of lines.
func (c *DepsCounter) spill() error {
	if c.spilled == nil {
		f, err := c.Sorter.Create("deps-")
		if err != nil {
			return err
		}
		c.spilled = f
	}
	var line []byte
	for k, n := range c.held {
		line = append(append(append(append(line[:0], k[0]...), ' '), k[1]...), ' ')
		if err := c.spilled.Line(strconv.AppendInt(line, n, 10)); err != nil {
			return err
		}
	}
	clear(c.held)
	return nil
}

// Write writes the list to out, whole or not at all, and removes what the
// counter spilled.
func (c *DepsCounter) Write(ctx context.Context, out string) error {
	if c.spilled == nil {
		return WriteDeps(out, c.held, c.Unresolved)
	}
	defer c.spilled.Remove()
	if err := c.spill(); err != nil {
		return err
	}
	lines, err := c.Sorter.Sorted(ctx, c.spilled)
	if err != nil {
		return fmt.Errorf("sorting the dependencies of %s: %w", out, err)
	}
	defer lines.Close()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := c.writeSums(lines, bufio.NewWriterSize(f, 256<<10)); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := lines.Close(); err != nil {
		return fmt.Errorf("sorting the dependencies of %s: %w", out, err)
	}
	return f.CommitRenamed()
}

// writeSums writes the list from the sorted lines, each pair's counts
// added up.
func (c *DepsCounter) writeSums(lines *syssort.Lines, w *bufio.Writer) error {
	if _, err := w.WriteString(DepsHeader); err != nil {
		return err
	}
	var file, original []byte
	var sum int64
	have := false // file and original hold a pair
	row := func() error {
		if !have {
			return nil
		}
		_, err := fmt.Fprintf(w, "%s\t%s\t%d\n", file, original, sum)
		return err
	}
	for lines.Next() {
		var p [3][]byte
		if !syssort.Fields(lines.Bytes(), p[:]) {
			return fmt.Errorf("a spilled dependency line without its three fields: %q", lines.Bytes())
		}
		n, err := strconv.ParseInt(string(p[2]), 10, 64)
		if err != nil {
			return fmt.Errorf("a spilled dependency line: %w", err)
		}
		if have && bytes.Equal(p[0], file) && bytes.Equal(p[1], original) {
			sum += n
			continue
		}
		if err := row(); err != nil {
			return err
		}
		file, original, sum, have = append(file[:0], p[0]...), append(original[:0], p[1]...), n, true
	}
	if err := lines.Err(); err != nil {
		return err
	}
	if err := row(); err != nil {
		return err
	}
	if c.Unresolved > 0 {
		if _, err := fmt.Fprintf(w, "# %d revisits refer to no record of the collection\n", c.Unresolved); err != nil {
			return err
		}
	}
	return w.Flush()
}
