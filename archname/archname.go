// Package archname tells web archive files by their names: WARC and ARC
// files, plain or gzip-compressed, in any case (.ARC files exist).
package archname

import "strings"

// The suffixes of archive files' names, in lower case.
var (
	arcSuffixes     = []string{".arc", ".arc.gz"}
	archiveSuffixes = []string{".warc", ".warc.gz", ".arc", ".arc.gz"}
)

// IsArchive reports whether name is a WARC or an ARC file's.
func IsArchive(name string) bool { return hasSuffix(name, archiveSuffixes) }

// IsARC reports whether name is an ARC file's.
func IsARC(name string) bool { return hasSuffix(name, arcSuffixes) }

func hasSuffix(name string, suffixes []string) bool {
	n := strings.ToLower(name)
	for _, s := range suffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}
