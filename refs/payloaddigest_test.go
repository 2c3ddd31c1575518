package refs

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/rewritetest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/scripts/gen"
)

// TestPayloadKeptInMemoryStale proves what protects a duplicate compared
// with an original kept in memory, which the rewrite does not hash while
// it equals the original (comparePayload): the original's payload must be
// known to have the line's digest, as a duplicate equal to it and hashed
// whole had (Original.PayloadHasDigest). When the original and its duplicates were all changed alike
// since the manifest was made, each duplicate equals the original byte
// for byte, yet no longer has the digest its revisit would carry: its
// file is refused, untouched, as when the duplicate itself was hashed.
// When only the duplicates changed, they are refused for their digest
// too (a stale manifest), not as collisions, which a run keeps apart and
// resolves again under the stale digest (deferredSum). Unchanged, the
// same duplicates become revisits (the path is the one taken).
func TestPayloadKeptInMemoryStale(t *testing.T) {
	c := generate(t, gen.Config{Files: 2, Records: 80, DupRate: 0.6, Seed: 5, MeanPayload: 2 << 10,
		Formats: []gen.Format{gen.WARC10}})
	kept, dups := sharedOriginal(t, c)
	tests := []struct {
		name    string
		changed []manifest.Line // records whose payload byte is flipped, alike
		want    error
	}{
		{"unchanged: the duplicates become revisits", nil, nil},
		{"the original and its duplicates changed alike: refused", append([]manifest.Line{kept}, dups...), manifest.ErrDigestMismatch},
		{"the duplicates changed, not the original: refused for their digest", dups, manifest.ErrDigestMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rewritetest.CopyDir(t, c.dir, dir)
			for _, l := range tt.changed {
				flipPayloadByte(t, filepath.Join(dir, l.File), l)
			}
			before := rewritetest.Snapshot(t, dir)
			o := run(t, Rewriter{Roots: []string{dir}, InPlace: true}, c.lines)
			after := rewritetest.Snapshot(t, dir)
			for _, l := range dups {
				re := o.refusedFor(l.File)
				switch {
				case tt.want == nil && re != nil:
					t.Errorf("%s refused: %v", l.File, re)
				case tt.want == nil && string(before[l.File]) == string(after[l.File]):
					t.Errorf("%s was not rewritten", l.File)
				case tt.want != nil && (re == nil || !errors.Is(re, tt.want)):
					t.Errorf("%s: refusal %v, want %v", l.File, re, tt.want)
				case tt.want != nil && string(before[l.File]) != string(after[l.File]):
					t.Errorf("%s was changed although refused", l.File)
				}
			}
		})
	}
}

// sharedOriginal returns a kept line of a plain WARC file and the
// duplicate lines naming it, at least two: its payload is then kept in
// memory for them (OpenPlanned).
func sharedOriginal(t *testing.T, c *coll) (manifest.Line, []manifest.Line) {
	t.Helper()
	type ref struct{ digest, uri, date string }
	named := map[ref][]manifest.Line{}
	for _, l := range c.dups {
		r := ref{l.Digest, l.RefURI, l.RefDate}
		named[r] = append(named[r], l)
	}
	for _, k := range c.all {
		if d := named[ref{k.Digest, k.URI, k.Date}]; k.Copy == 1 && len(d) >= 2 && k.Length > 64 {
			return k, d
		}
	}
	t.Fatal("no original named by two duplicates")
	return manifest.Line{}, nil
}

// TestDeferredSum proves that the deferred hash of a payload compared with
// an original's in memory is the payload's digest whatever it holds: the
// original's digest, known, when equal; the digest of the bytes written
// when they differ anywhere, run longer or end early, whatever the writes'
// sizes.
func TestDeferredSum(t *testing.T) {
	orig := []byte(strings.Repeat("the original's payload, ", 300))
	known := sha1.Sum(orig)
	changed := func(at int) []byte {
		b := bytes.Clone(orig)
		b[at] ^= 1
		return b
	}
	tests := []struct {
		name    string
		payload []byte
	}{
		{"equal", orig},
		{"differs at the first byte", changed(0)},
		{"differs in the middle", changed(len(orig) / 2)},
		{"differs at the last byte", changed(len(orig) - 1)},
		{"longer", append(bytes.Clone(orig), "more"...)},
		{"ends early", orig[:len(orig)-7]},
		{"empty", []byte{}},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 100, 4096} {
			t.Run(fmt.Sprintf("%s, writes of %d", tt.name, chunk), func(t *testing.T) {
				cmp := originals.NewComparer(&originals.Original{Payload: orig}, nil, nil)
				d := deferredSum{h: sha1.New(), cmp: cmp, orig: orig, known: known[:]}
				w := io.MultiWriter(cmp, &d)
				for p := tt.payload; len(p) > 0; p = p[min(chunk, len(p)):] {
					w.Write(p[:min(chunk, len(p))])
				}
				if got, want := d.sum(), sha1.Sum(tt.payload); !bytes.Equal(got, want[:]) {
					t.Errorf("sum %x, want %x", got, want)
				}
			})
		}
	}
}

// flipPayloadByte changes the byte 10 bytes before the end of l's
// payload (a plain file's record ends with its block and CRLF CRLF), the
// same byte of every copy of one payload.
func flipPayloadByte(t *testing.T, path string, l manifest.Line) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[l.Offset+l.Length-4-10] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
