package redisindex

import (
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/redis"
	"warcdedup/internal/redistest"
)

// TestCommitRefusesACrawlTakenDuringExport gives the commit's check what
// the watched keys may say when Browsertrix or another writer took the
// crawl during the export (no test reaches these by an export): each is
// refused with its message and the connection unwatched, so that the
// next transaction on it is not failed by the keys of this one.
func TestCommitRefusesACrawlTakenDuringExport(t *testing.T) {
	srv := redistest.Start(t)
	c, other := dial(t, srv), dial(t, srv)
	x := &exporter{c: c, ix: &crawlindex.Index{Dir: "/ix"}}
	owner := func(dir string) redis.Value {
		return redis.Value{Kind: redis.Bulk, Str: `{"index":"` + dir + `"}`}
	}
	nothing := redis.Value{Kind: redis.Nil}
	for _, tc := range []struct {
		name                      string
		replace                   bool
		committed, running, exist int64
		owner                     redis.Value
		err                       string // "" for none
	}{
		{name: "a new crawl nobody took", owner: nothing},
		{name: "a new crawl Browsertrix started running", running: 1, owner: nothing, err: "crawl c0 started running in Browsertrix during the export: not committed"},
		{name: "a new crawl another writer committed", committed: 1, owner: nothing, err: "crawl c0 was committed to the Redis by another writer during the export: not committed"},
		{name: "a new crawl whose digests another writer wrote", exist: 1, owner: nothing, err: "crawl c0 was committed to the Redis by another writer during the export: not committed"},
		{name: "a replaced crawl still ours", replace: true, committed: 1, exist: 1, owner: owner("/ix")},
		{name: "a replaced crawl whose owner record went away", replace: true, committed: 1, owner: nothing, err: "crawl c0: its owner record went away during the export"},
		{name: "a replaced crawl whose owner record is damaged", replace: true, committed: 1, owner: redis.Value{Kind: redis.Bulk, Str: "{"}, err: keyExported + ` holds "{"`},
		{name: "a replaced crawl no longer committed", replace: true, owner: owner("/ix"), err: "crawl c0 changed hands during the export: not committed"},
		{name: "a replaced crawl of another index", replace: true, committed: 1, owner: owner("/other"), err: "crawl c0 changed hands during the export: not committed"},
		{name: "a replaced crawl Browsertrix started running", replace: true, committed: 1, running: 1, owner: owner("/ix"), err: "crawl c0 started running in Browsertrix during the export: not committed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Do("WATCH", "k"); err != nil {
				t.Fatal(err)
			}
			w := &crawlWrite{crawl: &crawlindex.Crawl{Name: "c0"}, replace: tc.replace}
			one := func(n int64) redis.Value { return redis.Value{Kind: redis.Int, Int: n} }
			vs := []redis.Value{one(tc.committed), one(tc.running), tc.owner, one(tc.exist), one(1), one(0), one(1)}
			st, err := x.check(w, vs)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !st.stagedHashes || st.stagedWACZ || !st.stagedCounts || st.hasOld != (tc.exist == 1) || tc.replace && st.old.Index != "/ix" {
					t.Errorf("watched %+v", st)
				}
				c.Do("UNWATCH")
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			// Unwatched: a change of the key watched fails no transaction.
			if _, err := other.Do("SET", "k", tc.name); err != nil {
				t.Fatal(err)
			}
			p := c.Pipeline()
			p.Send("MULTI")
			p.Send("SET", "k2", "x")
			p.Send("EXEC")
			got, err := p.Exec()
			if err != nil {
				t.Fatal(err)
			}
			if got[len(got)-1].IsNil() {
				t.Error("the transaction after the refusal failed: the key is still watched")
			}
		})
	}
}
