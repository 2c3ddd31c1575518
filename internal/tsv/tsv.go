// Package tsv splits the lines of the lists a work directory keeps for
// people and for later runs (fixity.tsv, undo-fixity.tsv, deps.tsv,
// saved.tsv, hashed-files.tsv, after-files.tsv, a cluster host's
// files.tsv): fields separated by one tab, file names as manifest
// field 1 (manifest.EscapeFile: bytes 0x00-0x20, 0x7F and '%' as %XX, so
// that a name holds no tab or newline and is the same string the
// manifests hold). Work directories an earlier warcdedup wrote hold the
// same lists separated by one space: a line without a tab is split on
// spaces, so that both forms are read, line by line.
package tsv

import "strings"

// Sep separates the fields of a line the writers write.
const Sep = "\t"

// sep is the separator of line: a tab, or a space in the earlier form.
func sep(line string) string {
	if strings.Contains(line, Sep) {
		return Sep
	}
	return " "
}

// Split returns the fields of line.
func Split(line string) []string { return strings.Split(line, sep(line)) }

// SplitN returns at most n fields of line, the last the rest of it (a
// field that may hold blanks of its own goes last).
func SplitN(line string, n int) []string { return strings.SplitN(line, sep(line), n) }

// Cut returns the first field of line and the rest.
func Cut(line string) (first, rest string, ok bool) { return strings.Cut(line, sep(line)) }
