package rewritelog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/zeebo/blake3"
)

// Algorithm is a hash function a "# file" line's sums are taken with.
type Algorithm uint8

// The algorithms of fixity sums. BLAKE3 is what the log writes: a
// cryptographic hash (a file changed on purpose to match a logged sum is
// out of reach, as with SHA-256) that runs at about 1.5 GB/s on one core
// of a machine without SHA instructions, where SHA-256 runs at about
// 0.2 GB/s (BenchmarkFileHash), and the fixity of every replaced file, old
// and new version, is on the rewrite's path. SHA-256 is what logs of
// earlier versions hold, and what a file is checked against them with.
const (
	SHA256 Algorithm = 1 + iota
	BLAKE3
)

// Fixity sums are taken with this algorithm, unless a file is checked
// against a sum of another one.
const FixityAlgorithm = BLAKE3

// blake3Label starts a BLAKE3 sum as the log writes it.
const blake3Label = "blake3:"

func (a Algorithm) String() string {
	switch a {
	case SHA256:
		return "SHA-256"
	case BLAKE3:
		return "BLAKE3"
	}
	return "?"
}

// New returns a hash of the algorithm.
func (a Algorithm) New() hash.Hash {
	if a == BLAKE3 {
		return blake3.New()
	}
	return sha256.New()
}

// Format writes sum, taken with a, as a "# file" line does: "blake3:" and
// 64 lower-case hex digits for BLAKE3, 64 hex digits with no label for
// SHA-256 (the form of the logs of earlier versions, which is the only
// form a SHA-256 sum is ever written in).
func (a Algorithm) Format(sum []byte) string {
	if a == BLAKE3 {
		return blake3Label + hex.EncodeToString(sum)
	}
	return hex.EncodeToString(sum)
}

// SumAlgorithm returns the algorithm of a sum as a "# file" line (or a
// journal's "# pending" line) holds it: "blake3:HEX", or bare hex, which
// earlier versions wrote for SHA-256. It is false for "-" (a dry run's,
// no sum) and for a label it does not know.
func SumAlgorithm(sum string) (Algorithm, bool) {
	if rest, ok := strings.CutPrefix(sum, blake3Label); ok {
		return BLAKE3, isHex(rest, 64)
	}
	if sum == "-" || strings.IndexByte(sum, ':') >= 0 {
		return 0, false
	}
	return SHA256, true
}

// checkSum checks a sum read from a "# file" or "# pending" line: "-", a
// BLAKE3 sum, or anything without a label (earlier versions' SHA-256, and
// the placeholders of tests and hand-written logs, which then never match
// a file).
func checkSum(sum string) error {
	if _, ok := SumAlgorithm(sum); ok || sum == "-" {
		return nil
	}
	return fmt.Errorf("sum %q: want \"blake3:\" and 64 hex digits, 64 hex digits (SHA-256, logs of earlier versions) or \"-\"", sum)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// FileHash takes a file's sums while it is read (it is an io.Writer),
// with one or more algorithms at once.
type FileHash struct {
	hashes [BLAKE3 + 1]hash.Hash
	n      int64
}

// NewFileHash returns a FileHash taking the sums of algs (FixityAlgorithm
// if none).
func NewFileHash(algs ...Algorithm) *FileHash {
	h := &FileHash{}
	for _, a := range algs {
		if a == SHA256 || a == BLAKE3 {
			h.hashes[a] = a.New()
		}
	}
	if len(algs) == 0 {
		h.hashes[FixityAlgorithm] = FixityAlgorithm.New()
	}
	return h
}

// Like returns the algorithms of sums, as a "# file" line holds them, each
// once ("-" and unknown ones left out): what a file checked against them
// is hashed with.
func Like(sums ...string) []Algorithm {
	var algs []Algorithm
	for _, s := range sums {
		if a, ok := SumAlgorithm(s); ok && !slices.Contains(algs, a) {
			algs = append(algs, a)
		}
	}
	return algs
}

// Write hashes p with each algorithm.
func (h *FileHash) Write(p []byte) (int, error) {
	for _, x := range h.hashes {
		if x != nil {
			x.Write(p)
		}
	}
	h.n += int64(len(p))
	return len(p), nil
}

// Size is the bytes written.
func (h *FileHash) Size() int64 { return h.n }

// Raw returns the sum taken with a, nil if it was not taken.
func (h *FileHash) Raw(a Algorithm) []byte {
	if int(a) >= len(h.hashes) || h.hashes[a] == nil {
		return nil
	}
	return h.hashes[a].Sum(nil)
}

// Sum returns the sum taken with a, as the log writes it, or "" if it was
// not taken.
func (h *FileHash) Sum(a Algorithm) string {
	raw := h.Raw(a)
	if raw == nil {
		return ""
	}
	return a.Format(raw)
}

// Like returns the sum in the algorithm of want ("" if it was not taken):
// what the file has where the log says want.
func (h *FileHash) Like(want string) string {
	a, ok := SumAlgorithm(want)
	if !ok {
		return ""
	}
	return h.Sum(a)
}

// Matches says whether the bytes written have the sum want, taken with
// its algorithm (false for "-" and for an algorithm not taken).
func (h *FileHash) Matches(want string) bool {
	got := h.Like(want)
	return got != "" && got == want
}

// Is says whether the bytes written are the version of size bytes with
// the sum sum (as a "# file" line gives them).
func (h *FileHash) Is(size int64, sum string) bool {
	return h.n == size && h.Matches(sum)
}

// HashFile reads the file at path once and returns its sums taken with
// algs (FixityAlgorithm if none); to check it against sums of a log,
// HashFile(path, Like(sums...)...).
func HashFile(path string, algs ...Algorithm) (*FileHash, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := NewFileHash(algs...)
	if _, err := io.CopyBuffer(h, f, make([]byte, 256<<10)); err != nil {
		return nil, err
	}
	return h, nil
}

// FileSum returns the size and fixity sum of the file at path, in
// FixityAlgorithm: what a "# file" line says of a version of it.
func FileSum(path string) (int64, string, error) {
	h, err := HashFile(path)
	if err != nil {
		return 0, "", err
	}
	return h.Size(), h.Sum(FixityAlgorithm), nil
}
