package undo

import (
	"strings"

	"warcdedup/crawlindex"
	"warcdedup/restore"
)

// letGoOfJoin drops the registration of an interrupted run of the crawl
// undone (crawlindex.Registration.Hold: the committed crawls its join read,
// which no index remove may remove or rewrite while revisits of the crawl
// may need them), once the undo is verified and the rewrite log has no
// revisit of the crawl left in any of its files: nothing needs them any
// more, and remove --restore of them would otherwise be refused for ever
// (the only way out a --force that ignores what they hold). A run of the
// crawl in progress keeps its registration.
func (u *undo) letGoOfJoin() {
	if u.crawl == nil || u.res.Exit != 0 || !u.res.Verified {
		return
	}
	if u.after == nil {
		return
	}
	// The log as the undo left it, sorted on file (check's): the crawl's
	// files are a run of it.
	b, err := u.after.Open()
	if err != nil {
		return
	}
	defer b.Close()
	for b.Next() {
		if !strings.HasPrefix(b.File(), u.crawl.name+"/") {
			continue
		}
		if left, err := restore.Files(b.Moves()); err != nil || len(left) > 0 {
			return // revisits of the crawl are left (in files not named): its join still holds
		}
	}
	if b.Err() != nil {
		return
	}
	reg, err := crawlindex.RegisterRun(u.crawl.index.Dir, u.crawl.name)
	if err != nil {
		u.show.Note("warcdedup: note: the index's record of what crawl %s joined stays: %v", u.crawl.name, err)
		return
	}
	defer reg.Release()
	if err := reg.Drop(); err != nil {
		u.show.Note("warcdedup: warning: the index's record of what crawl %s joined could not be dropped: %v", u.crawl.name, err)
		return
	}
	u.show.Log("undo: crawl %s has no revisit left: the index no longer holds the crawls its interrupted run joined", u.crawl.name)
}
