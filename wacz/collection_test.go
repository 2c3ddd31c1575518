package wacz

import (
	"bytes"
	"strings"
	"testing"
)

// TestUpdateCollection proves that a multi-WACZ JSON gets the new hash
// and size of the resources named in the form each field had (bare hex
// or "sha256:", number or string, "size" or "bytes"), and every other
// byte as it was; a path no resource has is an error.
func TestUpdateCollection(t *testing.T) {
	sum := bytes.Repeat([]byte{0xab}, 32)
	hexSum := strings.Repeat("ab", 32)
	old := strings.Repeat("0", 64)
	cases := []struct {
		name, in, want string
		path           string
		wantErr        bool
	}{
		{name: "Browsertrix's export", path: "a.wacz",
			in:   "{\n  \"resources\": [\n    {\n      \"name\": \"a.wacz\",\n      \"path\": \"a.wacz\",\n      \"hash\": \"" + old + "\",\n      \"size\": 10,\n      \"crawlId\": \"c1\",\n      \"x\": [1, 2]\n    },\n    {\n      \"name\": \"b.wacz\",\n      \"path\": \"b.wacz\",\n      \"hash\": \"" + old + "\",\n      \"size\": 10\n    }\n  ]\n}\n",
			want: "{\n  \"resources\": [\n    {\n      \"name\": \"a.wacz\",\n      \"path\": \"a.wacz\",\n      \"hash\": \"" + hexSum + "\",\n      \"size\": 42,\n      \"crawlId\": \"c1\",\n      \"x\": [\n        1,\n        2\n      ]\n    },\n    {\n      \"name\": \"b.wacz\",\n      \"path\": \"b.wacz\",\n      \"hash\": \"" + old + "\",\n      \"size\": 10\n    }\n  ]\n}\n"},
		{name: "datapackage's forms, compact", path: "sub/a.wacz",
			in:   `{"resources":[{"path":"sub/a.wacz","hash":"sha256:` + old + `","bytes":"10"}],"title":"t"}`,
			want: `{"resources":[{"path":"sub/a.wacz","hash":"sha256:` + hexSum + `","bytes":"42"}],"title":"t"}`},
		{name: "no hash nor size: unchanged", path: "a.wacz",
			in: `{"resources":[{"path":"a.wacz"}]}`, want: `{"resources":[{"path":"a.wacz"}]}`},
		{name: "a path no resource has", path: "c.wacz", in: `{"resources":[{"path":"a.wacz"}]}`, wantErr: true},
		{name: "no resources", path: "a.wacz", in: `{"files":[]}`, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := UpdateCollection([]byte(c.in), map[string]CollectionUpdate{c.path: {SHA256: sum, Size: 42}})
			if c.wantErr {
				if err == nil {
					t.Fatalf("no error; got %s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestCollectionEntrySHA256 reads an entry's hash in either form.
func TestCollectionEntrySHA256(t *testing.T) {
	hexSum := strings.Repeat("ab", 32)
	cases := []struct {
		name, hash, want string
		wantErr          bool
	}{
		{name: "bare hex", hash: hexSum, want: hexSum},
		{name: "upper case", hash: strings.ToUpper(hexSum), want: hexSum},
		{name: "sha256: prefix", hash: "sha256:" + hexSum, want: hexSum},
		{name: "none", hash: "", want: ""},
		{name: "md5", hash: "md5:" + hexSum[:32], wantErr: true},
		{name: "short", hash: hexSum[:10], wantErr: true},
	}
	for _, c := range cases {
		got, err := CollectionEntry{Hash: c.hash}.SHA256()
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
