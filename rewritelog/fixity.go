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

// Forwarding names, kept only so that code not yet switched to package
// fixity still builds (inplace/version.go, stage/wacz.go,
// stage/wacz_recover.go, dedup/wacz_undo.go, dedup/waczinput.go,
// dedup/workdirid.go, dedup/job_test.go). New code uses package fixity;
// remove these once those call it.

// Algorithm forwards to fixity.Algorithm.
type Algorithm = fixity.Algorithm

// FileHash forwards to fixity.Hash.
type FileHash = fixity.Hash

// SHA256, BLAKE3 and FixityAlgorithm forward to package fixity's.
const (
	SHA256          = fixity.SHA256
	BLAKE3          = fixity.BLAKE3
	FixityAlgorithm = fixity.Default
)

// SumAlgorithm forwards to fixity.AlgorithmOf.
func SumAlgorithm(sum string) (Algorithm, bool) { return fixity.AlgorithmOf(sum) }

// NewFileHash forwards to fixity.New.
func NewFileHash(algs ...Algorithm) *FileHash { return fixity.New(algs...) }

// Like forwards to fixity.Like.
func Like(sums ...string) []Algorithm { return fixity.Like(sums...) }

// HashFile forwards to fixity.HashFile.
func HashFile(path string, algs ...Algorithm) (*FileHash, error) {
	return fixity.HashFile(path, algs...)
}

// FileSum forwards to fixity.FileSum.
func FileSum(path string) (int64, string, error) { return fixity.FileSum(path) }
