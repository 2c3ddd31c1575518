package lru

import "testing"

// TestEviction proves that the least recently used entries go first when
// the budget is exceeded, that Get refreshes an entry, and that an entry
// over the whole budget is not kept.
func TestEviction(t *testing.T) {
	c := New[string, int](10)
	c.Put("a", 1, 4)
	c.Put("b", 2, 4)
	if _, ok := c.Get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.Put("c", 3, 4) // over budget: b, the least recent, goes
	for key, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok := c.Get(key); ok != want {
			t.Errorf("%s cached %v, want %v", key, ok, want)
		}
	}
	c.Put("huge", 9, 11)
	if _, ok := c.Get("huge"); ok {
		t.Error("an entry over the budget was kept")
	}
	c.Put("a", 5, 2) // replacing keeps the cost right
	if v, _ := c.Get("a"); v != 5 || c.cost != 6 {
		t.Errorf("a = %d, cost %d; want 5 and 6", v, c.cost)
	}
	c.Remove("a")
	if _, ok := c.Get("a"); ok || c.cost != 4 {
		t.Errorf("after Remove: cached %v, cost %d", ok, c.cost)
	}
}
