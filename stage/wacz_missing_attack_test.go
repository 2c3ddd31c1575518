package stage

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/wacz"
)

// packageOfRecord writes dir/name, a package of one WARC member holding
// the record rec (gzipped), with the requires entries reqs, and returns
// the member as PackageRewrite.Members has it and its manifest name.
func packageOfRecord(t *testing.T, dir, name, rec string, reqs []wacz.Requirement) (PackageMember, string, int64) {
	t.Helper()
	warc := filepath.Join(t.TempDir(), "data.warc.gz")
	data := warctest.Gzip(rec)
	if err := os.WriteFile(warc, data, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wacz.Create(f, wacz.CreateOptions{WARCs: []string{warc}, Software: "test", Requires: reqs, TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p, err := wacz.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := p.WARCs()[0]
	if m.Method != 0 {
		t.Fatalf("%s: member %s compressed in the ZIP", name, m.Name)
	}
	return PackageMember{Path: path, Package: name, Member: m.Name, Offset: m.DataOffset, Size: m.Size}, wacz.JoinName(name, m.Name), int64(len(data))
}

// TestRevisitOriginsAttack attacks the repair of missing requires
// entries (revisitOrigins): a package is written anew for an entry only
// when one of its revisits names the package of its original in
// WARC-Refers-To-Container and the package does not name it yet; a
// crawler's own revisit across packages (Browsertrix writes none of that
// header), a header naming a third package, a package that names the
// original's already, or a revisit beside its original, make nothing
// written.
func TestRevisitOriginsAttack(t *testing.T) {
	const uri, date = "http://example.com/a.js", "2024-01-02T03:04:05Z"
	response := warctest.Record("response", uri, date, "HTTP/1.1 200 OK\r\nContent-Type: text/javascript\r\n\r\nvar a = 1;", "Content-Type: application/http; msgtype=response")
	revisit := func(extra ...string) string {
		h := append([]string{"Content-Type: application/http; msgtype=response", "WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
			"WARC-Refers-To-Target-URI: " + uri, "WARC-Refers-To-Date: " + date}, extra...)
		return warctest.Record("revisit", uri, "2024-02-02T03:04:05Z", "HTTP/1.1 200 OK\r\nContent-Type: text/javascript\r\n\r\n", h...)
	}
	cases := []struct {
		name        string
		revisit     string
		reqs        []wacz.Requirement // the revisit's package's entries
		samePackage bool               // the original in the revisit's own package
		want        bool               // written anew for a missing entry
	}{
		{"Browsertrix's revisit, no container", revisit(), nil, false, false},
		{"container names the original's package", revisit("WARC-Refers-To-Container: file://b.wacz"), nil, false, true},
		{"container names it, the package names it already", revisit("WARC-Refers-To-Container: file://b.wacz"), []wacz.Requirement{{Filename: "b.wacz", Size: -1}}, false, false},
		{"container names a third package", revisit("WARC-Refers-To-Container: file://c.wacz"), nil, false, false},
		{"container names it, another crawl's entry only", revisit("WARC-Refers-To-Container: file://b.wacz"), []wacz.Requirement{{Filename: "x.wacz", Size: 5, CrawlID: "crawl-0"}}, false, true},
		{"the original beside it in its own package", revisit("WARC-Refers-To-Container: file://a.wacz"), nil, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ma, na, la := packageOfRecord(t, dir, "a.wacz", c.revisit, c.reqs)
			mb, nb, _ := packageOfRecord(t, dir, "b.wacz", response, nil)
			if c.samePackage {
				mb, nb = ma, na
			}
			pr := &PackageRewrite{Members: map[string]PackageMember{na: ma, nb: mb}, deps: map[[2]string]bool{}, paths: map[string]string{}, externals: map[string]ExternalPackage{}}
			o := pr.newRevisitOrigins(context.Background())
			o.revisit(&manifest.Line{Fields: 10, File: manifest.EscapeFile(na), Offset: 0, Length: la, Class: manifest.RevisitClass, RefURI: uri, RefDate: date}, ma)
			if err := o.kept(&manifest.Line{Fields: 10, File: manifest.EscapeFile(nb), URI: uri, Date: date, Copy: 1}, mb.Package, mb.Path); err != nil {
				t.Fatal(err)
			}
			o.endDigest()
			if got := pr.missing["a.wacz"]; got != c.want {
				t.Errorf("a.wacz written anew for a missing entry: %v, want %v (deps %v)", got, c.want, pr.deps)
			}
		})
	}
}
