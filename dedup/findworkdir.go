package dedup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"warcdedup/crawlindex"
	"warcdedup/internal/fspath"
	"warcdedup/workdir"
)

// The work directory of a job is found from a file of its collection by
// the job's state (state.json), which names the collections it was run
// on: what warcdedup undo and warcdedup show look a file up in.

// FindWorkDir finds the work directory beside the collection that holds
// path: the first COLLECTION.warcdedup, from path up, whose job was on
// COLLECTION.
func FindWorkDir(path string) (string, error) {
	abs, err := fspath.Abs(path)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		wd := workdir.Default(d)
		if st, err := readStateFile(filepath.Join(wd, workdir.StateFile)); err == nil && (slices.Contains(st.Params.Collections, d) || st.Params.Source == d) {
			return wd, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("%s: no work directory of warcdedup run beside it or a directory above it (give --work-dir, or --index for a crawl run with one)", path)
		}
	}
}

// FindCrawlWorkDir finds the work directory of the crawl of the index that
// holds path: the one of INDEX/work/* whose job was on a directory that
// is path or holds it.
func FindCrawlWorkDir(index, path string) (string, error) {
	abs, err := fspath.Abs(path)
	if err != nil {
		return "", err
	}
	dirs, err := os.ReadDir(filepath.Join(index, "work"))
	if err != nil {
		return "", fmt.Errorf("%s: no crawl's work directory: %w", index, err)
	}
	for _, d := range dirs {
		wd := filepath.Join(index, "work", d.Name())
		st, err := readStateFile(filepath.Join(wd, workdir.StateFile))
		if err != nil || st.Params.Index == "" {
			continue
		}
		for _, c := range st.Params.Collections {
			if crawlindex.Within(abs, c) {
				return wd, nil
			}
		}
	}
	return "", fmt.Errorf("%s: no crawl of the index %s was run on it or a directory above it", path, index)
}
