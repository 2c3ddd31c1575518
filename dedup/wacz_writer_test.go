package dedup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/writertest"
)

// TestRunWACZWriterRefused: a package another process holds open for
// writing (a crawler still appending to it, a copy tool) while the run
// writes it anew is refused and left as it was, as a WARC file is: its
// new version would take the name, and what the writer appends would go
// to the old file, which no name leads to any more.
func TestRunWACZWriterRefused(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	names, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no packages: %v", err)
	}
	appended := []byte("appended by the writer")
	data := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(data, appended, 0o644); err != nil {
		t.Fatal(err)
	}
	var writers []*writertest.Writer
	before := map[string][]byte{}
	opt := Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2}
	opt.afterHash = func() {
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			before[n] = b
			writers = append(writers, writertest.Start(t, n, data))
		}
	}
	r, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(writers) == 0 {
		t.Fatal("the hook did not run: the test proves nothing")
	}
	for _, w := range writers {
		w.AppendNow(t)
	}
	reasons := strings.Join(r.Report.ExitReason, "\n")
	if r.Report.Exit != 1 || !strings.Contains(reasons, "open for writing") {
		t.Errorf("exit %d, want 1 naming the writer; reasons:\n%s", r.Report.Exit, reasons)
	}
	for _, n := range names {
		got, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if want := append(before[n], appended...); !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, want the package as it was with the writer's %d bytes after it (%d): the writer's bytes or the package are lost", filepath.Base(n), len(got), len(appended), len(want))
		}
	}
}
