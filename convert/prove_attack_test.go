package convert

import (
	"bytes"
	"testing"

	"warcdedup/verify"
)

// FuzzConvertProves: a conversion that reports no damage, truncation or
// warning must prove against its ARC as migrate proves it before an ARC is
// removed (verify.Conversion). An ARC record with no date is damage
// (TestMissingDateRefused): no made-up date can prove.
func FuzzConvertProves(f *testing.F) {
	f.Add([]byte(arcV1()))
	f.Add([]byte(arcV2()))
	f.Fuzz(func(t *testing.T, arc []byte) {
		var w bytes.Buffer
		opt := fixed()
		st, err := Convert(bytes.NewReader(arc), "f.arc", "f.warc", &w, opt)
		if err != nil || st.Damaged > 0 || st.Truncated > 0 || st.Dropped > 0 {
			return
		}
		var problems []string
		vs, err := verify.Conversion(verify.File{Name: "f.arc", R: bytes.NewReader(arc), Size: int64(len(arc))},
			verify.File{Name: "f.warc", R: bytes.NewReader(w.Bytes()), Size: int64(w.Len())}, func(v string) { problems = append(problems, v) })
		if err != nil || vs.Violations > 0 || vs.ARCDamage > 0 {
			t.Fatalf("clean conversion does not prove: %v %+v %v", err, vs, problems)
		}
	})
}
