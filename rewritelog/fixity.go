package rewritelog

import (
	"fmt"

	"warcdedup/fixity"
)

// A "# file" line's sums (and a journal's "# pending" line's) are fixity
// sums in their text form (package fixity): "blake3:HEX", or bare hex,
// which earlier versions wrote for SHA-256; "-" is a dry run's, no sum.
// New versions are summed with fixity.Default.

// checkSum checks a sum read from a "# file" or "# pending" line: "-", a
// BLAKE3 sum, or anything without a label (earlier versions' SHA-256, and
// the placeholders of tests and hand-written logs, which then never match
// a file).
func checkSum(sum string) error {
	if _, ok := fixity.AlgorithmOf(sum); ok || sum == "-" {
		return nil
	}
	return fmt.Errorf("sum %q: want \"blake3:\" and 64 hex digits, 64 hex digits (SHA-256, logs of earlier versions) or \"-\"", sum)
}
