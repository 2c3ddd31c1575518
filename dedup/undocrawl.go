package dedup

import (
	"strings"
	"time"

	"warcdedup/crawlindex"
	"warcdedup/restore"
	"warcdedup/rewritelog"
	"warcdedup/workdir"
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
	written, err := rewritelog.LoadFile(u.wd.File(workdir.LogFile), time.Time{})
	if err != nil {
		return
	}
	left, err := restore.Files(written)
	if err != nil {
		return
	}
	for _, f := range left {
		if strings.HasPrefix(f, u.crawl.name+"/") {
			return // revisits of the crawl are left (in files not named): its join still holds
		}
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
