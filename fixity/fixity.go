// Package fixity takes the sums of whole files, the fixity an archive
// keeps of them: the algorithms, the text form of a sum and the hashing
// of a file or a stream.
//
// A sum is written "blake3:" and 64 lower-case hex digits for BLAKE3, and
// 64 hex digits with no label for SHA-256: the form the rewrite logs of
// earlier versions hold and the crawl index's CONTENTS and registry hold.
// A sum with a label this package does not know is refused, never taken
// for a SHA-256.
package fixity

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/zeebo/blake3"
)

// Algorithm is a hash function a file's sum is taken with.
type Algorithm uint8

// The algorithms of fixity sums. BLAKE3 is what new rewrite logs hold: a
// cryptographic hash (a file changed on purpose to match a logged sum is
// out of reach, as with SHA-256) that runs at about 1.5 GB/s on one core
// of a machine without SHA instructions, where SHA-256 runs at about
// 0.2 GB/s (BenchmarkHash), and the fixity of every replaced file, old
// and new version, is on the rewrite's path. SHA-256 is what logs of
// earlier versions hold, what a file is checked against them with, and
// what the crawl index and WACZ packages require.
const (
	SHA256 Algorithm = 1 + iota
	BLAKE3
)

// Default is the algorithm sums are taken with unless a file is checked
// against a sum of another one.
const Default = BLAKE3

// blake3Label starts a BLAKE3 sum.
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

// Format writes sum, taken with a, in its text form: "blake3:" and 64
// lower-case hex digits for BLAKE3, 64 hex digits with no label for
// SHA-256 (the only form a SHA-256 sum is ever written in).
func (a Algorithm) Format(sum []byte) string {
	if a == BLAKE3 {
		return blake3Label + hex.EncodeToString(sum)
	}
	return hex.EncodeToString(sum)
}

// AlgorithmOf returns the algorithm of a sum in its text form:
// "blake3:HEX" (false unless HEX is 64 lower-case hex digits), or
// anything without a label, taken for the bare hex of a SHA-256 (the
// placeholders of tests and hand-written logs then never match a file).
// It is false for "-" (no sum: a dry run's) and for a label it does not
// know.
func AlgorithmOf(sum string) (Algorithm, bool) {
	if rest, ok := strings.CutPrefix(sum, blake3Label); ok {
		return BLAKE3, isHex(rest, 64)
	}
	if sum == "-" || strings.IndexByte(sum, ':') >= 0 {
		return 0, false
	}
	return SHA256, true
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

// Like returns the algorithms of sums, each once ("-" and unknown ones
// left out): what a file checked against them is hashed with.
func Like(sums ...string) []Algorithm {
	var algs []Algorithm
	for _, s := range sums {
		if a, ok := AlgorithmOf(s); ok && !slices.Contains(algs, a) {
			algs = append(algs, a)
		}
	}
	return algs
}

// Hash takes the sums of the bytes written to it (it is an io.Writer),
// with one or more algorithms at once, and counts them.
type Hash struct {
	hashes [BLAKE3 + 1]hash.Hash
	n      int64
}

// New returns a Hash taking the sums of algs (Default if none).
func New(algs ...Algorithm) *Hash {
	h := &Hash{}
	for _, a := range algs {
		if a == SHA256 || a == BLAKE3 {
			h.hashes[a] = a.New()
		}
	}
	if len(algs) == 0 {
		h.hashes[Default] = Default.New()
	}
	return h
}

// Write hashes p with each algorithm.
func (h *Hash) Write(p []byte) (int, error) {
	for _, x := range h.hashes {
		if x != nil {
			x.Write(p)
		}
	}
	h.n += int64(len(p))
	return len(p), nil
}

// Size is the bytes written.
func (h *Hash) Size() int64 { return h.n }

// Raw returns the sum taken with a, nil if it was not taken.
func (h *Hash) Raw(a Algorithm) []byte {
	if int(a) >= len(h.hashes) || h.hashes[a] == nil {
		return nil
	}
	return h.hashes[a].Sum(nil)
}

// Sum returns the sum taken with a in its text form, or "" if it was not
// taken.
func (h *Hash) Sum(a Algorithm) string {
	raw := h.Raw(a)
	if raw == nil {
		return ""
	}
	return a.Format(raw)
}

// Like returns the sum in the algorithm of want ("" if it was not taken):
// what the bytes have where a record of them says want.
func (h *Hash) Like(want string) string {
	a, ok := AlgorithmOf(want)
	if !ok {
		return ""
	}
	return h.Sum(a)
}

// Matches says whether the bytes written have the sum want, taken with
// its algorithm (false for "-" and for an algorithm not taken).
func (h *Hash) Matches(want string) bool {
	got := h.Like(want)
	return got != "" && got == want
}

// Is says whether the bytes written are size bytes with the sum sum.
func (h *Hash) Is(size int64, sum string) bool {
	return h.n == size && h.Matches(sum)
}

// bufferSize is what a file is read in: the size the rewrite reads in,
// large enough for the hashes' vector code.
const bufferSize = 256 << 10

// HashReader reads r to its end and returns its sums taken with algs
// (Default if none).
func HashReader(r io.Reader, algs ...Algorithm) (*Hash, error) {
	h := New(algs...)
	// Hidden behind a struct, an *os.File's WriteTo cannot take over the
	// copy with a buffer of its own (32 KiB).
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{r}, make([]byte, bufferSize)); err != nil {
		return nil, err
	}
	return h, nil
}

// HashFile reads the file at path once and returns its sums taken with
// algs (Default if none); to check it against sums, HashFile(path,
// Like(sums...)...).
func HashFile(path string, algs ...Algorithm) (*Hash, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return HashReader(f, algs...)
}

// FileSum returns the size and the sum in Default of the file at path.
func FileSum(path string) (int64, string, error) {
	h, err := HashFile(path)
	if err != nil {
		return 0, "", err
	}
	return h.Size(), h.Sum(Default), nil
}
