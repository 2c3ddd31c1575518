package stage

import (
	"crypto/sha256"
	"encoding/hex"
	"os"

	"warcdedup/rewritelog"
	"warcdedup/wacz"
)

// checkedSum is the size, CRC-32 and SHA-256 the rewrite's check took
// of a staged member's new version (info: the file as it was put in
// place), which its package's rebuild stores it with.
type checkedSum struct {
	info os.FileInfo
	sum  wacz.FileSum
}

// WantSums says whether the rewrite's check of the new version of the file
// name is to take its CRC-32 and SHA-256 (refs.Rewriter.WantSums): a member
// staged here, whose package's rebuild then reads it only to copy it
// in (Replaced).
func (pr *PackageRewrite) WantSums(name string) bool {
	if pr.DryRun {
		return false
	}
	_, ok := pr.staged[name]
	return ok
}

// Replaced keeps the sums the rewrite's check took of a staged member's
// new version (rewritelog.Replacement.CRC32 and SHA256, asked for by
// WantSums) for its package's rebuild: given to it (wacz.Replacement.Sum)
// while the staged file is still that version. It is called from the
// rewrite's workers, at once for different files.
func (pr *PackageRewrite) Replaced(rp rewritelog.Replacement) {
	if pr.inPlace && rp.New != nil && pr.staged[rp.Name] != nil {
		pr.mu.Lock()
		if pr.newVersions == nil {
			pr.newVersions = map[string]os.FileInfo{}
		}
		pr.newVersions[rp.Name] = rp.New
		pr.mu.Unlock()
	}
	if !rp.HasCRC32 || rp.New == nil || pr.staged[rp.Name] == nil {
		return
	}
	sum, err := hex.DecodeString(rp.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.checkedSums == nil {
		pr.checkedSums = map[string]checkedSum{}
	}
	pr.checkedSums[rp.Name] = checkedSum{info: rp.New, sum: wacz.FileSum{Size: rp.New.Size(), CRC32: rp.CRC32, SHA256: sum}}
}

// replacementOf is the rebuild's replacement of the member of pkg by its
// staged file at path, as the rebuild found it (staged): with the sums
// the rewrite's check took of it, when it is the version checked.
func (pr *PackageRewrite) replacementOf(pkg, member, path string, staged os.FileInfo) wacz.Replacement {
	r := wacz.Replacement{Path: path}
	pr.mu.Lock()
	c, ok := pr.checkedSums[wacz.JoinName(pkg, member)]
	pr.mu.Unlock()
	if ok && staged != nil && sameVersion(c.info, staged) && c.info.Size() == c.sum.Size {
		s := c.sum
		r.Sum = &s
	}
	return r
}
