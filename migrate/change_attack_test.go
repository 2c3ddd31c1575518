package migrate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/convert"
)

// TestARCChangedBeforeRetireStays proves an ARC that changes after its
// proof and before it is removed is not removed, whether its WARC was
// written by this run or was there already and adopted: the adopted
// case had no check, and the bytes added to the ARC were lost.
func TestARCChangedBeforeRetireStays(t *testing.T) {
	const arc = "gen-00000.arc.gz"
	for _, tc := range []struct {
		name  string
		adopt bool // an earlier conversion's WARC is at the ARC's WARC name
	}{
		{"converted", false},
		{"adopted", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll := filepath.Join(dir, "coll")
			genCollection(t, coll, 11)
			arcPath := filepath.Join(coll, arc)
			if tc.adopt {
				var w bytes.Buffer
				if _, err := convert.Convert(bytes.NewReader(read(t, arcPath)), arc, convert.OutputName(arc, false), &w, convert.Options{}); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(coll, convert.OutputName(arc, false)), w.Bytes())
			}
			added := []byte("bytes written to the ARC after its proof\n")
			c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), Hook: func(step, name string) {
				if step != "proved" || name != arc {
					return
				}
				f, err := os.OpenFile(arcPath, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close()
				if _, err := f.Write(added); err != nil {
					t.Error(err)
				}
			}}}
			res, err := c.Run(context.Background(), coll, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(arcPath)
			if err != nil {
				t.Fatalf("the ARC changed after its proof was removed: %v", err)
			}
			if !bytes.HasSuffix(b, added) {
				t.Errorf("the ARC does not end in the bytes added to it")
			}
			for _, o := range res.Files {
				if o.ARC == arc && !o.Status.Left() {
					t.Errorf("%s: %s, want it left", o.ARC, o.Status)
				}
			}
		})
	}
}
