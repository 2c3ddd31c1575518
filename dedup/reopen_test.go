package dedup

import (
	"path/filepath"
	"slices"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
	"warcdedup/workdir"
)

// TestOpenCollectionNamesNoCollection proves that opening again the
// collection of a job whose state names none (a damaged or hand-written
// state.json) is an error, not a panic (a crawl's job indexed the first
// collection) nor a collection of nothing.
func TestOpenCollectionNamesNoCollection(t *testing.T) {
	wd := &workdir.Dir{Path: t.TempDir()}
	for _, tc := range []struct {
		name   string
		params Params
		index  *crawlindex.Index
	}{
		{name: "a collection's job", params: Params{}},
		{name: "a crawl's job", params: Params{Crawl: "crawl-0", Index: "index"}, index: &crawlindex.Index{}},
		{name: "a job on packages named", params: Params{Source: filepath.Join(wd.Path, "x.json")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("OpenCollection with params %+v panicked: %v", tc.params, p)
				}
			}()
			if c, err := OpenCollection(wd, tc.params, tc.index); err == nil {
				t.Errorf("OpenCollection with params %+v: %+v, no error", tc.params, c)
			}
		})
	}
}

// TestCollectionGivesCopies proves that what Collection gives the undo
// is its own: changing the roots returned, or the members of a package
// rewrite, leaves the collection's unchanged for the next caller.
func TestCollectionGivesCopies(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	wd := &workdir.Dir{Path: t.TempDir()}
	c, err := OpenCollection(wd, Params{Collections: []string{dir}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Collect(); err != nil {
		t.Fatal(err)
	}
	pr := c.PackageRewrite(nil)
	if pr == nil || len(pr.Members) == 0 {
		t.Fatal("no WACZ member listed: the test proves nothing")
	}
	n := len(pr.Members)
	clear(pr.Members)
	if again := c.PackageRewrite(nil); again == nil || len(again.Members) != n {
		t.Errorf("the collection's members after clearing a rewrite's: %v, were %d", again, n)
	}
	roots := c.Roots()
	roots[0] = "elsewhere"
	if got := c.Roots(); !slices.Equal(got, []string{dir}) {
		t.Errorf("roots after changing the copy: %v", got)
	}
}

// TestResetStateKeepsParamsAlone proves that the state an undo leaves
// has the job's parameters and nothing else: no stage done, not
// complete, no stamps, so that a later run starts from the first stage.
func TestResetStateKeepsParamsAlone(t *testing.T) {
	wd := &workdir.Dir{Path: t.TempDir()}
	params := Params{Collections: []string{"/coll"}, Algorithm: "sha1", Policy: "first"}
	s := &State{Params: params, Done: []string{"hash", "resolve"}, By: map[string]string{"hash": "the run of x"}, Complete: true, LogSizeAtHash: 12, Stamps: map[string]string{"a": "b"}}
	if err := ResetState(wd, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadState(wd)
	if err != nil {
		t.Fatal(err)
	}
	for what, st := range map[string]*State{"in memory": s, "as written": got} {
		if !st.Params.equal(params) || st.Done != nil || st.By != nil || st.Complete || st.LogSizeAtHash != 0 || st.Stamps != nil {
			t.Errorf("state %s after ResetState: %+v", what, st)
		}
	}
}
