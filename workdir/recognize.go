package workdir

import (
	"os"
	"path/filepath"
	"strings"
)

// Recognize reports whether the directory at path is a work directory of
// warcdedup run, named as run names them (NAME.warcdedup) and holding
// the run log or cache every work directory has from its opening on.
// The work directory of a WACZ file named alone is beside it, inside the
// collection around it: a listing of that collection skips it (its files
// are no part of it), and so does a lock on the collection's tree.
func Recognize(path string) bool {
	if !strings.HasSuffix(path, ".warcdedup") {
		return false
	}
	for _, n := range []string{RunLog, CacheDir} {
		if _, err := os.Stat(filepath.Join(path, n)); err == nil {
			return true
		}
	}
	return false
}
