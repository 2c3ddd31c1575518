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
	name := w.crawl.Name
	w.owner.Exported = time.Now().UTC().Truncate(time.Second)
	ownerJSON, err := json.Marshal(w.owner)
	if err != nil {
		return err
	}
	for try := 0; try < 5; try++ {
		if _, err := x.c.Do("WATCH", hashesKey(name), waczKey(name), countsKey(name), keyAllCrawls, keyUncommitted, keyExported); err != nil {
			return err
		}
		p := x.c.Pipeline()
		p.Send("SISMEMBER", keyAllCrawls, name)
		p.Send("SISMEMBER", keyUncommitted, name)
		p.Send("HGET", keyExported, name)
		p.Send("EXISTS", hashesKey(name))
		p.Send("EXISTS", w.stage("h"))
		p.Send("EXISTS", w.stage("wacz"))
		p.Send("EXISTS", w.stage("counts"))
		vs, err := p.Exec()
		if err != nil {
			return err
		}
		committed, running, hasOld := vs[0].Int == 1, vs[1].Int == 1, vs[3].Int == 1
		var old Owner
		if w.replace {
			if vs[2].IsNil() {
				x.c.Do("UNWATCH")
				return fmt.Errorf("crawl %s: its owner record went away during the export", name)
			}
			if old, err = parseOwner(vs[2].Str); err != nil {
				x.c.Do("UNWATCH")
				return err
			}
		}
		switch {
		case running:
			x.c.Do("UNWATCH")
			return fmt.Errorf("crawl %s started running in Browsertrix during the export: not committed", name)
		case !w.replace && (committed || hasOld):
			x.c.Do("UNWATCH")
			return fmt.Errorf("crawl %s was committed to the Redis by another writer during the export: not committed", name)
		case w.replace && (!committed || old.Index != x.ix.Dir):
			x.c.Do("UNWATCH")
			return fmt.Errorf("crawl %s changed hands during the export: not committed", name)
		}
		var retired string
		p = x.c.Pipeline()
		p.Send("MULTI")
		if w.replace {
			if hasOld {
				seq, err := redis.Int64(x.c.Do("INCR", keySeq))
				if err != nil {
					return err
				}
				retired = retiredKey(seq, name)
				p.Send("RENAME", hashesKey(name), retired)
			}
			p.Send("DEL", waczKey(name), countsKey(name))
			if fields := old.Counts.fields(-1); len(fields) > 0 {
				hincr(p, keyAllCounts, fields)
			}
			if len(old.Files) > 0 {
				p.Send(append([]string{"SREM", keySourceDone}, old.Files...)...)
			}
		}
		if vs[4].Int == 1 {
			p.Send("RENAME", w.stage("h"), hashesKey(name))
		}
		if vs[5].Int == 1 {
			p.Send("RENAME", w.stage("wacz"), waczKey(name))
		}
		if vs[6].Int == 1 {
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
		vs, err = p.Exec()
		if err != nil {
			return err
		}
		exec := vs[len(vs)-1]
		if exec.IsNil() {
			continue // a watched key changed: look again
		}
		if err := exec.Err(); err != nil {
			return fmt.Errorf("crawl %s: committing: %w", name, err)
		}
		for _, v := range exec.Array {
			if err := v.Err(); err != nil {
				return fmt.Errorf("crawl %s: committing: %w", name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("crawl %s: the Redis kept changing under the commit (5 tries)", name)
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
