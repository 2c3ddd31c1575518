package redisindex

import (
	"strings"
	"testing"
)

func TestEntry(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Entry
		err  string
	}{
		{in: "0 20240101000001 http://ex.com/a 1234", want: Entry{0, "20240101000001", "http://ex.com/a", 1234}},
		{in: "3 20240605101112123 https://x/y?q=1 7", want: Entry{3, "20240605101112123", "https://x/y?q=1", 7}},
		{in: "0 20240101000001 http://ex.com/a b 12", err: "not \"WACZINDEX"},
		{in: "x 20240101000001 u 1", err: "WACZ index"},
		{in: "-1 20240101000001 u 1", err: "WACZ index"},
		{in: "0 2024-01-01 u 1", err: "14 or more digits"},
		{in: "0 20241301000000 u 1", err: "month out of range"},
		{in: "0 20240101000001 u -5", err: "size"},
		{in: "0 20240101000001  5", err: "no URL"},
	} {
		got, err := ParseEntry(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseEntry(%q): %v, want an error saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || got.String() != c.in {
			t.Errorf("ParseEntry(%q) = %+v (%q), %v", c.in, got, got.String(), err)
		}
	}
}

func TestDates(t *testing.T) {
	for _, c := range []struct{ warc, digits, back string }{
		{"2024-06-05T10:11:12Z", "20240605101112", "2024-06-05T10:11:12Z"},
		// The crawler's own dates have milliseconds: so do its entries.
		{"2024-06-05T10:11:12.123Z", "20240605101112123", "2024-06-05T10:11:12.123Z"},
		{"2024-06-05T10:11:12.1Z", "20240605101112100", "2024-06-05T10:11:12.100Z"},
		{"2024-06-05T10:11:12.123456Z", "20240605101112123", "2024-06-05T10:11:12.123Z"},
		{"2024-06-05T12:11:12+02:00", "20240605101112", "2024-06-05T10:11:12Z"},
	} {
		d, err := DateDigits(c.warc)
		if err != nil || d != c.digits {
			t.Errorf("DateDigits(%q) = %q, %v; want %q", c.warc, d, err, c.digits)
			continue
		}
		back, err := WARCDate(d)
		if err != nil || back != c.back {
			t.Errorf("WARCDate(%q) = %q, %v; want %q", d, back, err, c.back)
		}
	}
	for _, bad := range []string{"", "2024", "yesterday", "0000-01-01T00:00:00Z"} {
		if d, err := DateDigits(bad); err == nil {
			t.Errorf("DateDigits(%q) = %q, want an error", bad, d)
		}
	}
}

func TestDigestKeys(t *testing.T) {
	sha256hex := strings.Repeat("ab", 32)
	for _, c := range []struct {
		manifest, key, err string
	}{
		{manifest: "sha256:" + sha256hex, key: sha256hex},
		{manifest: "sha1:AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH", key: "AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH"},
		{manifest: "md5:" + strings.Repeat("ab", 16), err: "not md5"},
		{manifest: "sha256:" + strings.ToUpper(sha256hex), err: "malformed"},
	} {
		key, err := DigestKey(c.manifest)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("DigestKey(%q) = %q, %v; want an error saying %q", c.manifest, key, err, c.err)
			}
			continue
		}
		if err != nil || key != c.key {
			t.Errorf("DigestKey(%q) = %q, %v; want %q", c.manifest, key, err, c.key)
			continue
		}
		back, _, err := DigestOfKey(key)
		if err != nil || back != c.manifest {
			t.Errorf("DigestOfKey(%q) = %q, %v; want %q", key, back, err, c.manifest)
		}
	}
	// A SHA-1 in hex (some writers) is read as the SHA-1 it is.
	if d, a, err := DigestOfKey(strings.Repeat("00", 20)); err != nil || a.String() != "sha1" || d != "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("DigestOfKey(40 hex zeros) = %q, %v, %v", d, a, err)
	}
	for _, bad := range []string{"", "xyz", strings.Repeat("g", 64), "sha256:" + sha256hex, strings.Repeat("ab", 16)} {
		if d, _, err := DigestOfKey(bad); err == nil {
			t.Errorf("DigestOfKey(%q) = %q, want an error", bad, d)
		}
	}
}

func TestWACZFile(t *testing.T) {
	for _, c := range []struct {
		in   string
		want WACZFile
		err  string
	}{
		// The crawler's form, and the indexer's (its source JSON's hash).
		{in: `{"filename":"a.wacz","hash":"` + strings.Repeat("0f", 32) + `","size":12}`, want: WACZFile{"a.wacz", strings.Repeat("0f", 32), 12}},
		{in: `{"filename":"a.wacz","size":12,"hash":"sha256:` + strings.Repeat("0F", 32) + `"}`, want: WACZFile{"a.wacz", strings.Repeat("0f", 32), 12}},
		// A WACZ the crawler is still writing.
		{in: `{"filename":"a.wacz"}`, want: WACZFile{Filename: "a.wacz"}},
		{in: `{"hash":"x"}`, err: "names no file"},
		{in: `a.wacz`, err: "not a WACZ entry"},
	} {
		got, err := ParseWACZFile(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseWACZFile(%s): %v, want an error saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseWACZFile(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	// Written as the crawler writes it: filename, hash, size.
	if s := (WACZFile{"a.wacz", "00", 3}).String(); s != `{"filename":"a.wacz","hash":"00","size":3}` {
		t.Errorf("WACZFile.String = %s", s)
	}
}
