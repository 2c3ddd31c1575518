package crawlindex

// siftDown restores the order of the binary min-heap h (by less) below
// position i, whose element may have grown: the one step both mergers of
// a partition's runs (merger over parsed lines, rawMerger over raw
// keys) take after they advance the run at the top.
func siftDown[T any](h []T, i int, less func(a, b T) bool) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		j := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			j = r
		}
		if !less(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
