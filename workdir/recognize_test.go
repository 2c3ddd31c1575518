package workdir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRecognize(t *testing.T) {
	for _, c := range []struct {
		name  string
		dir   string   // made under a temporary directory
		files []string // made in dir
		want  bool
	}{
		{"a work directory with its run log", "coll.warcdedup", []string{RunLog}, true},
		{"a work directory with its cache only", "x.wacz.warcdedup", []string{CacheDir}, true},
		{"named like one but empty: a collection's own directory", "site.warcdedup", nil, false},
		{"a run log under another name: not a work directory", "coll.work", []string{RunLog}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), c.dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range c.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := Recognize(dir); got != c.want {
				t.Errorf("Recognize(%s) = %v, want %v", c.dir, got, c.want)
			}
		})
	}
}
