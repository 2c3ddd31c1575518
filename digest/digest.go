// Package digest names the payload digest algorithms of the hash manifest and
// converts between their manifest form ("sha1:BASE32", "md5:hex") and the many
// spellings found in WARC-Payload-Digest headers.
package digest

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// Algorithm is a payload digest algorithm.
type Algorithm int

// The algorithms the manifest knows. The zero value is not an algorithm.
const (
	MD5 Algorithm = iota + 1
	SHA1
	SHA256
	SHA512
)

// Algorithms lists every algorithm, for help texts and tests.
var Algorithms = []Algorithm{MD5, SHA1, SHA256, SHA512}

var names = [...]string{MD5: "md5", SHA1: "sha1", SHA256: "sha256", SHA512: "sha512"}
var sizes = [...]int{MD5: md5.Size, SHA1: sha1.Size, SHA256: sha256.Size, SHA512: sha512.Size}

// String returns the manifest label: "md5", "sha1", "sha256" or "sha512".
func (a Algorithm) String() string {
	if a.Valid() {
		return names[a]
	}
	return fmt.Sprintf("digest.Algorithm(%d)", int(a))
}

// Valid reports whether a is one of the known algorithms.
func (a Algorithm) Valid() bool { return a >= MD5 && a <= SHA512 }

// Size is the length of a's sum in bytes.
func (a Algorithm) Size() int { return sizes[a] }

// New returns a new hash.Hash computing a.
func (a Algorithm) New() hash.Hash {
	switch a {
	case MD5:
		return md5.New()
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	case SHA512:
		return sha512.New()
	}
	panic("digest: New of invalid algorithm " + a.String())
}

// EncodedLen is the length of the manifest value (after "label:") for a.
func (a Algorithm) EncodedLen() int {
	if a == SHA1 {
		return base32.StdEncoding.EncodedLen(sha1.Size)
	}
	return 2 * a.Size()
}

// Format returns the manifest form of sum: "sha1:" and upper-case base32 for
// sha1 (the WARC convention, so a value can be copied into a revisit record),
// the label and lower-case hex for the others.
func (a Algorithm) Format(sum []byte) string {
	return string(a.AppendFormat(nil, sum))
}

// AppendFormat appends the manifest form of sum to dst.
func (a Algorithm) AppendFormat(dst, sum []byte) []byte {
	dst = append(dst, names[a]...)
	dst = append(dst, ':')
	if a == SHA1 {
		return base32.StdEncoding.AppendEncode(dst, sum)
	}
	return hex.AppendEncode(dst, sum)
}

// ParseLabel accepts the manifest labels and the spellings seen in WARC
// headers: any case, with or without a dash ("SHA-1", "sha-256", "MD5").
func ParseLabel(label string) (Algorithm, error) {
	l := strings.ToLower(strings.ReplaceAll(label, "-", ""))
	for _, a := range Algorithms {
		if names[a] == l {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown digest algorithm %q", label)
}

// ErrValue reports a digest value that is not a valid encoding of a sum.
var ErrValue = errors.New("malformed digest value")

// Parse reads a manifest digest field ("sha1:BASE32", "md5:hex", ...),
// strictly: the label as the manifest writes it and the canonical encoding.
func Parse(field string) (Algorithm, []byte, error) {
	label, value, ok := strings.Cut(field, ":")
	if !ok {
		return 0, nil, fmt.Errorf("digest %q has no algorithm label", field)
	}
	a, err := ParseLabel(label)
	if err != nil || names[a] != label {
		return 0, nil, fmt.Errorf("unknown digest algorithm %q", label)
	}
	if len(value) != a.EncodedLen() {
		return 0, nil, fmt.Errorf("%s digest %q: %w: want %d characters", a, value, ErrValue, a.EncodedLen())
	}
	var sum []byte
	if a == SHA1 {
		sum, err = base32.StdEncoding.DecodeString(value)
	} else {
		sum, err = hex.DecodeString(value)
	}
	// The decoders accept more than the manifest form: base32 padding, line
	// breaks (both skipped by encoding/base32) and upper-case hex. Only the
	// canonical encoding of a full-size sum is a manifest digest, so that
	// equal sums are always equal fields.
	var buf [160]byte
	if err != nil || len(sum) != a.Size() || string(a.AppendFormat(buf[:0], sum)) != field {
		return 0, nil, fmt.Errorf("%s digest %q: %w", a, value, ErrValue)
	}
	return a, sum, nil
}

// Canonical reports whether field is a manifest digest field as Parse
// takes one, without decoding it or allocating: for a reader of every
// line of a manifest that needs the digest as bytes only. Every value
// of the right length in the algorithm's alphabet is canonical (a sha1
// sum is 160 bits, 32 base32 characters without padding; hex is lower
// case).
func Canonical(field []byte) bool {
	i := bytes.IndexByte(field, ':')
	if i < 0 {
		return false
	}
	label, value := field[:i], field[i+1:]
	for _, a := range Algorithms {
		if string(label) != names[a] {
			continue
		}
		if len(value) != a.EncodedLen() {
			return false
		}
		in := &hexDigits
		if a == SHA1 {
			in = &base32Digits
		}
		for _, c := range value {
			if !in[c] {
				return false
			}
		}
		return true
	}
	return false
}

// hexDigits and base32Digits are the bytes of the manifest's values.
var hexDigits, base32Digits = alphabet("0123456789abcdef"), alphabet("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

func alphabet(digits string) (in [256]bool) {
	for _, c := range []byte(digits) {
		in[c] = true
	}
	return in
}

// ParseHeader reads a WARC-Payload-Digest or WARC-Block-Digest value, which
// real writers spell many ways: "sha1:BASE32", "SHA-1:base32 in lower case",
// "sha256:hex", "sha1:base64", "md5:base64url". The value is decoded by its
// length for the algorithm, so every encoding of a correct sum is accepted.
func ParseHeader(value string) (Algorithm, []byte, error) {
	label, v, ok := strings.Cut(strings.TrimSpace(value), ":")
	if !ok {
		return 0, nil, fmt.Errorf("digest %q has no algorithm label", value)
	}
	a, err := ParseLabel(strings.TrimSpace(label))
	if err != nil {
		return 0, nil, err
	}
	v = strings.TrimSpace(v)
	// Every encoding below is printable ASCII. The base32 and base64 decoders
	// skip CR and LF, and strings.ToUpper maps some non-ASCII letters to ASCII
	// ones ('ſ' to 'S'), so such bytes must be refused here.
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] >= 0x7F {
			return 0, nil, fmt.Errorf("%s digest %q: %w", a, v, ErrValue)
		}
	}
	for _, decode := range headerDecoders {
		if sum, ok := decode(v, a.Size()); ok {
			return a, sum, nil
		}
	}
	return 0, nil, fmt.Errorf("%s digest %q: %w", a, v, ErrValue)
}

// headerDecoders try, in order, the encodings writers use for digest values.
// Lengths overlap (an md5 is 32 characters in hex and in padded base32), so
// each decoder checks that it yields exactly n bytes.
var headerDecoders = []func(v string, n int) ([]byte, bool){
	func(v string, n int) ([]byte, bool) { // base16, either case
		if len(v) != 2*n {
			return nil, false
		}
		sum, err := hex.DecodeString(v)
		return sum, err == nil && len(sum) == n
	},
	func(v string, n int) ([]byte, bool) { // base32, either case, padding optional
		sum, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.TrimRight(strings.ToUpper(v), "="))
		return sum, err == nil && len(sum) == n
	},
	func(v string, n int) ([]byte, bool) { // base64, standard or URL alphabet, padding optional
		raw := strings.TrimRight(v, "=")
		enc := base64.RawStdEncoding
		if strings.ContainsAny(raw, "-_") {
			enc = base64.RawURLEncoding
		}
		sum, err := enc.DecodeString(raw)
		return sum, err == nil && len(sum) == n
	},
}
