package dedup

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"warcdedup/atomicfile"
	"warcdedup/workdir"
)

// DigestSlice restricts a job, from resolution on, to the payloads whose
// digest Keep keeps: every file is hashed and the whole manifest sorted,
// and only the lines of those digests are resolved, numbered and measured
// (warcdedup assess --sample by digests). Keep is asked once per digest,
// with the length of its first line in by-digest.manifest. Lines naming
// no digest (revisits without one, "-") are kept. Key identifies the
// slice: a job on another slice is another job.
type DigestSlice struct {
	Key  string
	Keep func(digest []byte, length int64) bool
}

// writeSlice copies the lines of workdir.ByDigestFile whose digest (field
// 6) the slice keeps into workdir.SliceFile, whole or not at all.
func (r *run) writeSlice(ctx context.Context) error {
	in, err := os.Open(r.wd.File(workdir.ByDigestFile))
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := atomicfile.Create(r.wd.File(workdir.SliceFile), 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	br := bufio.NewReaderSize(in, 256<<10)
	w := bufio.NewWriterSize(out, 256<<10)
	var digest []byte
	keep := false
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", workdir.ByDigestFile, err)
		}
		if d := field(line, 5); !bytes.Equal(d, digest) {
			digest = append(digest[:0], d...)
			length, err := strconv.ParseInt(string(field(line, 2)), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: line %d: length: %w", workdir.ByDigestFile, n, err)
			}
			keep = string(d) == "-" || r.opt.Digests.Keep(d, length)
		}
		if keep {
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		if n%(1<<16) == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.CommitRenamed()
}

// field returns the i-th (0-based) space-separated field of a manifest
// line, without its line end.
func field(line []byte, i int) []byte {
	for ; i > 0; i-- {
		k := bytes.IndexByte(line, ' ')
		if k < 0 {
			return nil
		}
		line = line[k+1:]
	}
	if k := bytes.IndexAny(line, " \n"); k >= 0 {
		line = line[:k]
	}
	return line
}
