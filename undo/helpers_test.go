package undo

import (
	"bytes"
	"context"
	"testing"

	"warcdedup/dedup"
	"warcdedup/stage"
	"warcdedup/warcsum"
)

// runOn runs the job on dir with the work directory wd and fails the test
// if it stopped.
func runOn(t *testing.T, dir, wd string) *stage.Result {
	t.Helper()
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r
}

// waczListing is the manifest warcsum gives of the files and WACZ
// members under dir, read now (the members listed as undo names them:
// packageMembers).
func waczListing(t *testing.T, dir string) []byte {
	t.Helper()
	inputs, err := warcsum.Collector{Recursive: true, Packages: packageMembers}.Collect([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := (&warcsum.Runner{Jobs: 2}).Run(inputs, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
