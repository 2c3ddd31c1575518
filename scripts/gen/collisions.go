package gen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"warcdedup/digest"
)

// Pair is one published hash collision included in a collection: two
// payloads that differ in bytes but have the same digest under Algorithm.
type Pair struct {
	Name      string           // "wang", "fastcoll", "single-ipc", "short", "sha-mbles"
	Algorithm digest.Algorithm // the algorithm the two payloads collide in
	Payloads  [2]Payload       // the two payloads as written (each is also in Result.Payloads)
}

// knownPairs are the pairs of shared/collisions (see its README).
var knownPairs = []struct {
	name, a, b string
	algo       digest.Algorithm
}{
	{"wang", "wang1.bin", "wang2.bin", digest.MD5},
	{"fastcoll", "fastcoll1.bin", "fastcoll2.bin", digest.MD5},
	{"single-ipc", "single-ipc1.bin", "single-ipc2.bin", digest.MD5},
	{"short", "short-1.txt", "short-2.txt", digest.MD5},
	{"sha-mbles", "sha-mbles-1.bin", "sha-mbles-2.bin", digest.SHA1},
}

// pairData is a pair as read from disk.
type pairData struct {
	name   string
	algo   digest.Algorithm
	a, b   []byte
	suffix bool // a common suffix keeps the collision (length a multiple of 64)
}

// loadPairs reads the pairs of dir, skipping those whose files are absent,
// and checks that each one really collides.
func loadPairs(dir string) ([]pairData, error) {
	var out []pairData
	for _, k := range knownPairs {
		a, errA := os.ReadFile(filepath.Join(dir, k.a))
		b, errB := os.ReadFile(filepath.Join(dir, k.b))
		if errors.Is(errA, fs.ErrNotExist) || errors.Is(errB, fs.ErrNotExist) {
			continue
		}
		if err := errors.Join(errA, errB); err != nil {
			return nil, err
		}
		if bytes.Equal(a, b) || len(a) != len(b) {
			return nil, fmt.Errorf("collision pair %s in %s: members are equal or differ in length", k.name, dir)
		}
		ha, hb := k.algo.New(), k.algo.New()
		ha.Write(a)
		hb.Write(b)
		if !bytes.Equal(ha.Sum(nil), hb.Sum(nil)) {
			return nil, fmt.Errorf("collision pair %s in %s: the members do not collide in %s", k.name, dir, k.algo)
		}
		out = append(out, pairData{name: k.name, algo: k.algo, a: a, b: b, suffix: len(a)%64 == 0})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no collision pairs found in %s", dir)
	}
	return out, nil
}
