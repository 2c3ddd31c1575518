package digest_test

import (
	"testing"

	"warcdedup/digest"
)

// FuzzCanonicalAsParse: Canonical takes a field exactly when Parse does.
func FuzzCanonicalAsParse(f *testing.F) {
	for _, a := range digest.Algorithms {
		f.Add([]byte(a.Format(make([]byte, a.Size()))))
	}
	f.Add([]byte("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"))
	f.Add([]byte("SHA1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBY="))
	f.Fuzz(func(t *testing.T, field []byte) {
		_, _, err := digest.Parse(string(field))
		if got := digest.Canonical(field); got != (err == nil) {
			t.Fatalf("Canonical(%q) = %v, Parse error %v", field, got, err)
		}
	})
}
