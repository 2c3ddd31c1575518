package rewritelog

import (
	"fmt"

	"warcdedup/fixity"
)

// A "# file" line's sums (and a journal's "# pending" line's) are fixity
// sums in their text form (package fixity): "blake3:HEX", or bare hex,
// a SHA-256 (earlier versions wrote it for every file; a new version whose
// SHA-256 the check takes anyway, a WACZ member's or a --index file's, is
// logged by it still); "-" is a dry run's, no sum. Other new versions are
// summed with fixity.Default.

// checkSum checks a sum read from a "# file" or "# pending" line: "-", a
// BLAKE3 sum, or anything without a label (earlier versions' SHA-256, and
// the placeholders of tests and hand-written logs, which then never match
// a file).
func checkSum(sum string) error {
	if _, ok := fixity.AlgorithmOf(sum); ok || sum == "-" {
		return nil
	}
	return fmt.Errorf("sum %q: want \"blake3:\" and 64 hex digits, 64 hex digits (SHA-256) or \"-\"", sum)
}
