package redisindex

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"warcdedup/internal/redis"
)

// retireStaged turns the staged keys an interrupted export left into
// retired digest sets (their crawl never committed: the alldupes entries
// they took are re-pointed or dropped at the end) and deletes the rest.
func (x *exporter) retireStaged() error {
	s := x.c.Scan("SCAN", "", "MATCH", stagePrefix+"*", "COUNT", "1000")
	var keys []string
	for {
		batch, err := s.Next()
		if err != nil {
			return err
		}
		if batch == nil {
			break
		}
		keys = append(keys, batch...)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, key := range keys {
		rest := strings.TrimPrefix(key, stagePrefix)
		_, rest, _ = strings.Cut(rest, ":")
		kind, crawl, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if kind == "h" {
			if err := x.retire(key, crawl); err != nil {
				return err
			}
		} else if _, err := x.c.Do("DEL", key); err != nil {
			return err
		}
		x.st.Finished++
	}
	return nil
}

// retire renames a digest set to a retired one of crawl.
func (x *exporter) retire(key, crawl string) error {
	seq, err := redis.Int64(x.c.Do("INCR", keySeq))
	if err != nil {
		return err
	}
	_, err = x.c.Do("RENAME", key, retiredKey(seq, crawl))
	return err
}

func retiredKey(seq int64, crawl string) string {
	return retiredPrefix + strconv.FormatInt(seq, 10) + ":" + crawl
}

// repointRetired re-points the alldupes entries of every retired digest
// set and deletes the set.
func (x *exporter) repointRetired(ctx context.Context) error {
	s := x.c.Scan("SCAN", "", "MATCH", retiredPrefix+"*", "COUNT", "1000")
	var keys []string
	for {
		batch, err := s.Next()
		if err != nil {
			return err
		}
		if batch == nil {
			break
		}
		keys = append(keys, batch...)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, key := range keys {
		rest := strings.TrimPrefix(key, retiredPrefix)
		_, crawl, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		rp := repointer{c: x.c, batch: x.opt.Batch, refresh: x.refresh}
		if err := rp.run(ctx, key, crawl); err != nil {
			return err
		}
		x.st.Repointed += rp.repointed
		x.st.Dropped += rp.dropped
	}
	return nil
}

// repointer moves the alldupes entries naming a crawl, for the digests of
// a retired set, to another committed crawl that holds the digest (the
// first by name), or deletes them; the crawl keeps those its keys still
// hold (it was replaced, not removed).
type repointer struct {
	c         *redis.Conn
	batch     int
	refresh   func(*redis.Pipeline)
	repointed int64
	dropped   int64
}

func (r *repointer) run(ctx context.Context, key, crawl string) error {
	crawls, err := redis.Strings(r.c.Do("SMEMBERS", keyAllCrawls))
	if err != nil {
		return err
	}
	sort.Strings(crawls)
	stillCommitted := slices.Contains(crawls, crawl)
	others := slices.DeleteFunc(crawls, func(s string) bool { return s == crawl })
	s := r.c.Scan("HSCAN", key, "COUNT", strconv.Itoa(r.batch))
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		kv, err := s.Next()
		if err != nil {
			return err
		}
		if kv == nil {
			break
		}
		var digests []string
		for i := 0; i < len(kv); i += 2 {
			digests = append(digests, kv[i])
		}
		if err := r.batchOf(digests, crawl, stillCommitted, others); err != nil {
			return err
		}
	}
	_, err = r.c.Do("DEL", key)
	return err
}

// batchOf re-points one batch of digests.
func (r *repointer) batchOf(digests []string, crawl string, stillCommitted bool, others []string) error {
	hmget := func(key string, fields []string) ([]redis.Value, error) {
		v, err := r.c.Do(append([]string{"HMGET", key}, fields...)...)
		if err != nil {
			return nil, err
		}
		if v.Kind != redis.Array || len(v.Array) != len(fields) {
			return nil, fmt.Errorf("HMGET %s: %d replies for %d fields", key, len(v.Array), len(fields))
		}
		return v.Array, nil
	}
	vals, err := hmget(keyAllDupes, digests)
	if err != nil {
		return err
	}
	var pending []string
	for i, v := range vals {
		if v.Kind == redis.Bulk && v.Str == crawl {
			pending = append(pending, digests[i])
		}
	}
	keep := func(key string) ([]string, []string, error) {
		if len(pending) == 0 {
			return nil, nil, nil
		}
		vals, err := hmget(key, pending)
		if err != nil {
			return nil, nil, err
		}
		var held, rest []string
		for i, v := range vals {
			if v.IsNil() {
				rest = append(rest, pending[i])
			} else {
				held = append(held, pending[i])
			}
		}
		return held, rest, nil
	}
	if stillCommitted {
		if _, pending, err = keep(hashesKey(crawl)); err != nil {
			return err
		}
	}
	p := r.c.Pipeline()
	for _, other := range others {
		if len(pending) == 0 {
			break
		}
		held, rest, err := keep(hashesKey(other))
		if err != nil {
			return err
		}
		for _, d := range held {
			p.Send("HSET", keyAllDupes, d, other)
			r.repointed++
		}
		pending = rest
	}
	if len(pending) > 0 {
		p.Send(append([]string{"HDEL", keyAllDupes}, pending...)...)
		r.dropped += int64(len(pending))
	}
	r.refresh(p)
	vs, err := p.Exec()
	if err != nil {
		return err
	}
	for _, v := range vs {
		if err := v.Err(); err != nil {
			return err
		}
	}
	return nil
}
