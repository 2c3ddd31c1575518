package stage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"warcdedup/inplace"
	"warcdedup/wacz"
)

// TestRebuildCloseAgainstReopenAttack attacks the close of a rebuilt
// package on another goroutine (packageRebuild.close) where the same
// name is opened again before that close: a rebuild refused, then the
// same package rebuilt at once (as FinishUndo does after ErrHash, and
// RefreshRequirers after a refusal in Finish), then rebuilt again over
// the version just put. Each rebuild must see the package as it is, its
// guard must hold whatever the earlier closes do (a writer that opens
// the package while the last one waits still refuses it), and once
// RefreshRequirers or Discard returns, no file of the package's, old or
// new, is open.
func TestRebuildCloseAgainstReopenAttack(t *testing.T) {
	for _, tc := range []struct {
		name string
		// steps: "refuse" (Requires fails), "put", "writer" (a process
		// opens the package for writing while Requires waits: refused).
		steps []string
		// wait: "refresh" (RefreshRequirers, nothing changed, its
		// context done) or "discard".
		wait string
	}{
		{"refused, then put at once", []string{"refuse", "put"}, "discard"},
		{"put, then put again over it", []string{"put", "put"}, "discard"},
		{"refused, put, refused, put", []string{"refuse", "put", "refuse", "put"}, "refresh"},
		{"refused, then a writer against the next", []string{"refuse", "writer"}, "discard"},
		{"put, then a writer against the next", []string{"put", "writer"}, "refresh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, _, old, m, data := generatedPackage(t, dir, 3)
			old.Close()
			replacement := filepath.Join(dir, ".p.wacz#member"+stagedSuffix)
			if err := os.WriteFile(replacement, data, 0o644); err != nil {
				t.Fatal(err)
			}
			pr := &PackageRewrite{paths: map[string]string{"p.wacz": path}, TempDir: t.TempDir(), Messages: &collected{}}
			refused := errors.New("refused by the test")
			for i, step := range tc.steps {
				before, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var child *exec.Cmd
				_, err = pr.rebuild("p.wacz", map[string]string{m.Name: replacement}, time.Now(), func(b *wacz.Rebuild) {
					b.NoPackageSHA256 = true
					switch step {
					case "refuse":
						b.Requires = func() ([]wacz.Requirement, error) { return nil, refused }
					case "writer":
						b.Requires = func() ([]wacz.Requirement, error) {
							child = openForWritingElsewhere(t, path)
							return nil, nil
						}
					}
				})
				if child != nil {
					child.Process.Kill()
					child.Wait()
				}
				after, rerr := os.ReadFile(path)
				if rerr != nil {
					t.Fatal(rerr)
				}
				switch step {
				case "put":
					if err != nil {
						t.Fatalf("step %d (%s): %v", i, step, err)
					}
					p, err := wacz.Open(path)
					if err != nil {
						t.Fatalf("step %d: the package put does not open: %v", i, err)
					}
					p.Close()
				case "refuse":
					if !errors.Is(err, refused) {
						t.Fatalf("step %d (%s): %v, want the test's refusal", i, step, err)
					}
				case "writer":
					if !errors.Is(err, inplace.ErrOpenForWriting) {
						t.Fatalf("step %d (%s): %v, want refused for the writer", i, step, err)
					}
				}
				if step != "put" && !bytes.Equal(before, after) {
					t.Fatalf("step %d (%s): the package changed although refused", i, step)
				}
			}
			switch tc.wait {
			case "refresh":
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if _, err := pr.RefreshRequirers(ctx, []string{"p.wacz"}, time.Now()); !errors.Is(err, context.Canceled) {
					t.Fatalf("RefreshRequirers: %v, want its context's end", err)
				}
			case "discard":
				pr.Discard()
			}
			if open := openFilesOf(t, path); len(open) > 0 {
				t.Fatalf("open after %s: %v", tc.wait, open)
			}
			if open := openFilesOf(t, dir); len(open) > 0 {
				t.Fatalf("files of the collection open after %s: %v", tc.wait, open)
			}
		})
	}
}

// openForWritingElsewhere starts a process that opens path for writing
// (appending nothing) and holds it open until killed; it returns once
// the file is open (the open waits for a lease on it to be given up).
func openForWritingElsewhere(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `exec 3>>"$1"; echo opened; exec sleep 60`, "sh", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "opened\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the writer did not open %s: %q, %v", path, line, err)
	}
	return cmd
}
