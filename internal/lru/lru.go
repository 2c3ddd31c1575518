// Package lru is a least-recently-used cache bounded by a total cost, for
// look-ups that repeat (the same original named by many duplicates) in
// stages whose memory must stay bounded.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values, evicting the least recently used entries when
// the sum of their costs exceeds its budget. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64
	cost   int64
	order  *list.List // front: most recent
	items  map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key   K
	value V
	cost  int64
}

// New returns a Cache holding entries whose costs sum to at most budget.
func New[K comparable, V any](budget int64) *Cache[K, V] {
	return &Cache[K, V]{budget: budget, order: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value of key and whether it is cached.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[K, V]).value, true
}

// Put caches value under key at a cost; an entry costing more than the
// whole budget is not cached.
func (c *Cache[K, V]) Put(key K, value V, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.cost -= e.Value.(*entry[K, V]).cost
		c.order.Remove(e)
		delete(c.items, key)
	}
	if cost > c.budget {
		return
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key: key, value: value, cost: cost})
	c.cost += cost
	for c.cost > c.budget {
		last := c.order.Back()
		old := last.Value.(*entry[K, V])
		c.order.Remove(last)
		delete(c.items, old.key)
		c.cost -= old.cost
	}
}

// Remove drops key.
func (c *Cache[K, V]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.cost -= e.Value.(*entry[K, V]).cost
		c.order.Remove(e)
		delete(c.items, key)
	}
}
