package undo

import (
	"slices"

	"warcdedup/collock"
	"warcdedup/crawlindex"
)

// lockCollection locks the directories the undo may rewrite files in
// (package collock), before it touches any: the job's collections'
// trees, its CDX indexes' directories and those of the packages outside
// the job a stopped undo was refreshing (its refile note). The packages
// outside found later are locked before any is written anew
// (refreshOutside).
func (u *undo) lockCollection(collections []string) (*collock.Set, error) {
	noted, err := crawlindex.NotedPaths(u.wd.File(waczRefileFile))
	if err != nil {
		return nil, err
	}
	return collock.LockJob(collections, append(slices.Clone(u.opt.CDX), noted...))
}
