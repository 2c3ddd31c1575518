package replaytest

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/cdxj"
)

// Archive is a WARC file to index or package: Name is how the index
// and the WACZ call it (unique, no slashes), Path where it is.
type Archive struct {
	Name, Path string
}

// WarcioCLI returns the warcio.js command (npm package warcio) that .ci/run
// installs into .cache/node ($WARCDEDUP_NODE_DIR), or skips the test
// (fails it under WARCDEDUP_REQUIRE_WARCIO=1).
func WarcioCLI(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("WARCDEDUP_NODE_DIR")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "node")
	}
	cli := filepath.Join(dir, "node_modules", ".bin", "warcio")
	_, err := os.Stat(cli)
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := fmt.Sprintf("warcio.js not installed (npm install --prefix %s warcio): %v", dir, err)
		if os.Getenv("WARCDEDUP_REQUIRE_WARCIO") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return cli
}

// Index indexes the archives with `warcio cdx-index` (CDXJ, the records
// replay tools index: responses, revisits, resources, metadata), names
// each line's file by its Archive.Name, and returns the lines in CDXJ
// order. A file warcio cannot read fails the index, naming the file.
func Index(cli string, archives []Archive) ([]cdxj.Line, error) {
	if len(archives) == 0 {
		return nil, nil
	}
	// warcio writes each file's base name as the line's filename: one run
	// for all files when those are unique, else a run per file.
	byBase := map[string]string{}
	args := []string{"cdx-index"}
	for _, a := range archives {
		if strings.Contains(a.Name, "/") {
			return nil, fmt.Errorf("archive name %q has a slash", a.Name)
		}
		base := filepath.Base(a.Path)
		if _, dup := byBase[base]; dup {
			var all []cdxj.Line
			for _, a := range archives {
				lines, err := Index(cli, []Archive{a})
				if err != nil {
					return nil, err
				}
				all = append(all, lines...)
			}
			cdxj.Sort(all)
			return all, nil
		}
		byBase[base] = a.Name
		args = append(args, a.Path)
	}
	args = append(args, "--format", "cdxj")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil && strings.Contains(stderr.String(), "Skipping") {
		err = errors.New("a file was skipped")
	}
	if err != nil {
		if len(archives) == 1 {
			return nil, fmt.Errorf("warcio cdx-index %s: %v\n%s", archives[0].Path, err, stderr.String())
		}
		for _, a := range archives {
			if _, err := Index(cli, []Archive{a}); err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("warcio cdx-index of %d files: %v\n%s", len(archives), err, stderr.String())
	}
	lines, err := cdxj.Read(&stdout, "warcio cdx-index")
	if err != nil {
		return nil, err
	}
	for i, l := range lines {
		name, ok := byBase[l.Filename]
		if !ok {
			return nil, fmt.Errorf("warcio cdx-index names the file %q, not one of those given", l.Filename)
		}
		if lines[i], err = l.WithFilename(name); err != nil {
			return nil, err
		}
	}
	cdxj.Sort(lines)
	return lines, nil
}

// Page is an entry of a WACZ's pages/pages.jsonl.
type Page struct {
	URL   string `json:"url"`
	TS    string `json:"ts"` // RFC 3339
	Title string `json:"title,omitempty"`
}

// WriteWACZ packages the archives with their index as a WACZ 1.1.1 file
// at dst: archive/NAME (stored, not deflated, so that they can be read by
// range), indexes/index.cdxj, pages/pages.jsonl and datapackage.json with
// every file's size and SHA-256.
func WriteWACZ(dst string, archives []Archive, index []cdxj.Line, pages []Page) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	type resource struct {
		Name  string `json:"name"`
		Path  string `json:"path"`
		Hash  string `json:"hash"`
		Bytes int64  `json:"bytes"`
	}
	var resources []resource
	add := func(path string, r io.Reader) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: path, Method: zip.Store, Modified: time.Unix(0, 0).UTC()})
		if err != nil {
			return err
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, h), r)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		resources = append(resources, resource{filepath.Base(path), path, "sha256:" + hex.EncodeToString(h.Sum(nil)), n})
		return nil
	}
	err = func() error {
		for _, a := range archives {
			if strings.Contains(a.Name, "/") {
				return fmt.Errorf("archive name %q has a slash", a.Name)
			}
			src, err := os.Open(a.Path)
			if err != nil {
				return err
			}
			err = add("archive/"+a.Name, src)
			src.Close()
			if err != nil {
				return err
			}
		}
		var idx bytes.Buffer
		if err := cdxj.Write(&idx, index); err != nil {
			return err
		}
		if err := add("indexes/index.cdxj", &idx); err != nil {
			return err
		}
		var pj bytes.Buffer
		pj.WriteString(`{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}` + "\n")
		for _, p := range pages {
			b, err := json.Marshal(p)
			if err != nil {
				return err
			}
			pj.Write(append(b, '\n'))
		}
		if err := add("pages/pages.jsonl", &pj); err != nil {
			return err
		}
		pkg, err := json.MarshalIndent(map[string]any{
			"profile":      "data-package",
			"wacz_version": "1.1.1",
			"title":        filepath.Base(dst),
			"software":     "warcdedup replaytest",
			"created":      time.Unix(0, 0).UTC().Format(time.RFC3339),
			"resources":    resources,
		}, "", "  ")
		if err != nil {
			return err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "datapackage.json", Method: zip.Store, Modified: time.Unix(0, 0).UTC()})
		if err != nil {
			return err
		}
		_, err = w.Write(pkg)
		return err
	}()
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	return nil
}
