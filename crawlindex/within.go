package crawlindex

import (
	"path/filepath"
	"strings"
)

// Within reports whether the path a is b or beneath it: whether a crawl's
// location (or a collection) holds a path, both cleaned and absolute.
func Within(a, b string) bool {
	return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, string(filepath.Separator))+string(filepath.Separator))
}
