package rewritelog

import (
	"strings"
	"testing"
)

// TestFixityLineSums proves which sums a "# file" line may hold: the
// forms of package fixity and "-" (a dry run's), never an unknown label
// or a malformed BLAKE3 sum.
func TestFixityLineSums(t *testing.T) {
	for _, c := range []struct {
		name string
		sum  string
		read bool // a "# file" line with it is read
	}{
		{"BLAKE3", "blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85", true},
		{"earlier logs' bare SHA-256", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", true},
		{"a dry run's", "-", true},
		{"BLAKE3 too short", "blake3:abc", false},
		{"unknown label", "md5:" + strings.Repeat("0", 32), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseFixity([]byte("# file a.warc 10 " + c.sum + " 5 " + c.sum))
			if (err == nil) != c.read {
				t.Errorf("a \"# file\" line with %q: %v", c.sum, err)
			}
		})
	}
}
