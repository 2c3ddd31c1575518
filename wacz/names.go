package wacz

import "strings"

// A WARC member of a package is named in manifests, rewrite logs and
// crawl indexes by the package's path, "#", and the member's path in the
// package: "crawls/2024-06.wacz#archive/data.warc.gz". Offsets and
// lengths given with such a name are those of the WARC member (as the
// package's index gives them); the member's DataOffset turns them into
// offsets of the package file.
const MemberSep = "#"

// JoinName names member of the package at pkg.
func JoinName(pkg, member string) string { return pkg + MemberSep + member }

// SplitName splits a name JoinName made: the package is everything up to
// the first ".wacz#" (the extension in any case). ok is false for a name
// that names no member of a package; a collection file whose own name
// holds ".wacz#" cannot be told from one, and is for the lister to refuse.
func SplitName(name string) (pkg, member string, ok bool) {
	lower := strings.ToLower(name)
	i := strings.Index(lower, ".wacz"+MemberSep)
	if i < 0 {
		return "", "", false
	}
	pkg, member = name[:i+len(".wacz")], name[i+len(".wacz")+len(MemberSep):]
	if member == "" || pkg == ".wacz" {
		return "", "", false
	}
	return pkg, member, true
}

// IsWACZ reports whether a file name has the .wacz extension (any case).
func IsWACZ(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".wacz") }
