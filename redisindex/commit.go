package redisindex

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"warcdedup/internal/redis"
)

// commit makes a staged crawl the crawler's committed crawl, in one
// transaction: its keys renamed into place (an old version's digests
// retired), allcrawls, allcounts, src:d and the owner record. WATCH makes
// the transaction fail if another writer touched the crawl meanwhile.
func (x *exporter) commit(w *crawlWrite) error {
	w.owner.Exported = time.Now().UTC().Truncate(time.Second)
	ownerJSON, err := json.Marshal(w.owner)
	if err != nil {
		return err
	}
	for try := 0; try < 5; try++ {
		vs, err := x.watch(w)
		if err != nil {
			return err
		}
		st, err := x.check(w, vs)
		if err != nil {
			return err
		}
		done, err := x.transact(w, st, ownerJSON)
		if err != nil || done {
			return err
		}
		// A watched key changed: look again.
	}
	return fmt.Errorf("crawl %s: the Redis kept changing under the commit (5 tries)", w.crawl.Name)
}

// watched is what the keys watched said, for the transaction.
type watched struct {
	hasOld bool  // the crawl has committed digests
	old    Owner // its owner record, when the export replaces it
	// Whether the export staged digests, packages and counts.
	stagedHashes, stagedWACZ, stagedCounts bool
}

// watch watches the keys the commit changes and reads them: whether the
// crawl is committed, running, its owner record, whether it has digests
// and which keys the export staged.
func (x *exporter) watch(w *crawlWrite) ([]redis.Value, error) {
	name := w.crawl.Name
	if _, err := x.c.Do("WATCH", hashesKey(name), waczKey(name), countsKey(name), keyAllCrawls, keyUncommitted, keyExported); err != nil {
		return nil, err
	}
	p := x.c.Pipeline()
	p.Send("SISMEMBER", keyAllCrawls, name)
	p.Send("SISMEMBER", keyUncommitted, name)
	p.Send("HGET", keyExported, name)
	p.Send("EXISTS", hashesKey(name))
	p.Send("EXISTS", w.stage("h"))
	p.Send("EXISTS", w.stage("wacz"))
	p.Send("EXISTS", w.stage("counts"))
	return p.Exec()
}

// check refuses, unwatching, a crawl that Browsertrix or another writer
// took during the export, and returns what the transaction needs of vs.
func (x *exporter) check(w *crawlWrite, vs []redis.Value) (watched, error) {
	name := w.crawl.Name
	committed, running := vs[0].Int == 1, vs[1].Int == 1
	st := watched{hasOld: vs[3].Int == 1, stagedHashes: vs[4].Int == 1, stagedWACZ: vs[5].Int == 1, stagedCounts: vs[6].Int == 1}
	var err error
	switch {
	case w.replace && vs[2].IsNil():
		err = fmt.Errorf("crawl %s: its owner record went away during the export", name)
	case w.replace:
		st.old, err = parseOwner(vs[2].Str)
	}
	if err == nil {
		switch {
		case running:
			err = fmt.Errorf("crawl %s started running in Browsertrix during the export: not committed", name)
		case !w.replace && (committed || st.hasOld):
			err = fmt.Errorf("crawl %s was committed to the Redis by another writer during the export: not committed", name)
		case w.replace && (!committed || st.old.Index != x.ix.Dir):
			err = fmt.Errorf("crawl %s changed hands during the export: not committed", name)
		}
	}
	if err != nil {
		x.c.Do("UNWATCH")
		return st, err
	}
	return st, nil
}

// transact sends the commit as one MULTI ... EXEC; done is false if a
// watched key changed (nothing was done).
func (x *exporter) transact(w *crawlWrite, st watched, ownerJSON []byte) (done bool, err error) {
	name := w.crawl.Name
	p := x.c.Pipeline()
	p.Send("MULTI")
	if w.replace {
		if err := x.retireOld(p, name, st); err != nil {
			return false, err
		}
	}
	if st.stagedHashes {
		p.Send("RENAME", w.stage("h"), hashesKey(name))
	}
	if st.stagedWACZ {
		p.Send("RENAME", w.stage("wacz"), waczKey(name))
	}
	if st.stagedCounts {
		p.Send("RENAME", w.stage("counts"), countsKey(name))
	}
	if fields := w.counts.fields(1); len(fields) > 0 {
		hincr(p, keyAllCounts, fields)
	}
	if len(w.owner.Files) > 0 {
		p.Send(append([]string{"SADD", keySourceDone}, w.owner.Files...)...)
	}
	p.Send("SADD", keyAllCrawls, name)
	p.Send("HSET", keyExported, name, string(ownerJSON))
	p.Send("EXEC")
	vs, err := p.Exec()
	if err != nil {
		return false, err
	}
	return execDone(name, vs[len(vs)-1])
}

// retireOld sends, in the transaction, what takes the old version of a
// crawl away: its digests renamed to a retired key, its packages and
// counts deleted, its counts taken off allcounts, its files off src:d.
func (x *exporter) retireOld(p *redis.Pipeline, name string, st watched) error {
	if st.hasOld {
		// A number of its own, taken outside the transaction, for the
		// retired key.
		seq, err := redis.Int64(x.c.Do("INCR", keySeq))
		if err != nil {
			return err
		}
		p.Send("RENAME", hashesKey(name), retiredKey(seq, name))
	}
	p.Send("DEL", waczKey(name), countsKey(name))
	if fields := st.old.Counts.fields(-1); len(fields) > 0 {
		hincr(p, keyAllCounts, fields)
	}
	if len(st.old.Files) > 0 {
		p.Send(append([]string{"SREM", keySourceDone}, st.old.Files...)...)
	}
	return nil
}

// execDone reads EXEC's reply: nil if a watched key changed (false), an
// error if it or a command of the transaction failed.
func execDone(name string, exec redis.Value) (bool, error) {
	if exec.IsNil() {
		return false, nil
	}
	if err := exec.Err(); err != nil {
		return false, fmt.Errorf("crawl %s: committing: %w", name, err)
	}
	for _, v := range exec.Array {
		if err := v.Err(); err != nil {
			return false, fmt.Errorf("crawl %s: committing: %w", name, err)
		}
	}
	return true, nil
}

// hincr sends HINCRBY for each field, value pair.
func hincr(p *redis.Pipeline, key string, fields []string) {
	for i := 0; i+1 < len(fields); i += 2 {
		p.Send("HINCRBY", key, fields[i], fields[i+1])
	}
}

// remove takes a crawl this index exported out of the Redis, as the
// crawler's purge does: out of allcrawls, its keys deleted, its counts
// taken from allcounts, its WACZ names from src:d. Its digests are
// retired: the alldupes entries naming it are re-pointed at the end.
func (x *exporter) remove(name string) error {
	for try := 0; try < 5; try++ {
		if _, err := x.c.Do("WATCH", hashesKey(name), keyAllCrawls, keyExported); err != nil {
			return err
		}
		p := x.c.Pipeline()
		p.Send("HGET", keyExported, name)
		p.Send("EXISTS", hashesKey(name))
		p.Send("SISMEMBER", keyAllCrawls, name)
		vs, err := p.Exec()
		if err != nil {
			return err
		}
		if vs[0].IsNil() {
			x.c.Do("UNWATCH")
			return nil // removed meanwhile
		}
		old, err := parseOwner(vs[0].Str)
		if err != nil {
			x.c.Do("UNWATCH")
			return err
		}
		if old.Index != x.ix.Dir {
			x.c.Do("UNWATCH")
			return fmt.Errorf("crawl %s changed hands during the export: not removed", name)
		}
		p = x.c.Pipeline()
		var seq int64
		if vs[1].Int == 1 {
			if seq, err = redis.Int64(x.c.Do("INCR", keySeq)); err != nil {
				return err
			}
		}
		p.Send("MULTI")
		if vs[1].Int == 1 {
			p.Send("RENAME", hashesKey(name), retiredKey(seq, name))
		}
		p.Send("DEL", waczKey(name), countsKey(name))
		if vs[2].Int == 1 {
			// Counted in allcounts only while committed.
			if fields := old.Counts.fields(-1); len(fields) > 0 {
				hincr(p, keyAllCounts, fields)
			}
		}
		if len(old.Files) > 0 {
			p.Send(append([]string{"SREM", keySourceDone}, old.Files...)...)
		}
		p.Send("SREM", keyAllCrawls, name)
		p.Send("SREM", keyCanceled, name)
		p.Send("HDEL", keyExported, name)
		p.Send("EXEC")
		vs, err = p.Exec()
		if err != nil {
			return err
		}
		exec := vs[len(vs)-1]
		if exec.IsNil() {
			continue
		}
		for _, v := range exec.Array {
			if err := v.Err(); err != nil {
				return fmt.Errorf("crawl %s: removing: %w", name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("crawl %s: the Redis kept changing under the removal (5 tries)", name)
}

// The lock one export holds at a time; it expires if its holder dies
// and is renewed with every batch.
const lockTTL = 10 * 60 * 1000 // milliseconds

func takeLock(c *redis.Conn) (func(), error) {
	host, _ := os.Hostname()
	token := fmt.Sprintf("%s pid %d since %s", host, os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	v, err := c.Do("SET", keyLock, token, "NX", "PX", strconv.Itoa(lockTTL))
	if err != nil {
		return nil, err
	}
	if v.IsNil() {
		holder, _ := c.Do("GET", keyLock)
		return nil, fmt.Errorf("another export is writing to the Redis (%s: %s); it expires %d minutes after its last batch",
			keyLock, holder.Str, lockTTL/60000)
	}
	return func() {
		if v, err := c.Do("GET", keyLock); err == nil && v.Str == token {
			c.Do("DEL", keyLock)
		}
	}, nil
}
