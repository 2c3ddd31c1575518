package report

import (
	"math"
	"testing"
	"time"
)

func TestHumanBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int64
		want string
	}{
		{"zero", 0, "0 B"},
		{"below a kilobyte", 999, "999 B"},
		{"a kilobyte", 1000, "1.0 kB"},
		{"rounds to one decimal", 1_449, "1.4 kB"},
		{"999.95 kB is a megabyte, not 1000.0 kB", 999_950, "1.0 MB"},
		{"gigabytes with one decimal", 12_345_678_901, "12.3 GB"},
		{"terabytes", 14_213_000_000_000, "14.2 TB"},
		{"the largest int64", math.MaxInt64, "9.2 EB"},
		{"negative", -1_500, "−1.5 kB"},
	} {
		if got := humanBytes(c.n); got != c.want {
			t.Errorf("%s: humanBytes(%d) = %q, want %q", c.name, c.n, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {311_402_118, "311,402,118"},
		{-1234, "−1,234"}, {math.MaxInt64, "9,223,372,036,854,775,807"},
	} {
		if got := count(c.n); got != c.want {
			t.Errorf("count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestBigCount(t *testing.T) {
	for _, c := range []struct {
		name      string
		n         int64
		num, unit string
	}{
		{"six digits stay exact", 999_999, "999,999", ""},
		{"a million", 1_000_000, "1.0", "million"},
		{"millions", 311_402_118, "311.4", "million"},
		{"999.96 million is a billion", 999_960_000, "1.0", "billion"},
		{"the largest int64", math.MaxInt64, "9.2", "quintillion"},
	} {
		num, unit := bigCount(c.n)
		if num != c.num || unit != c.unit {
			t.Errorf("%s: bigCount(%d) = %q %q, want %q %q", c.name, c.n, num, unit, c.num, c.unit)
		}
	}
}

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		name        string
		part, whole int64
		want        string
	}{
		{"no whole", 5, 0, "–"},
		{"nothing", 0, 10, "0.0%"},
		{"a part", 254, 1000, "25.4%"},
		{"too small to show", 1, 1_000_000, "< 0.1%"},
		{"not quite all", 999_999, 1_000_000, "> 99.9%"},
		{"all", 7, 7, "100.0%"},
		{"huge figures", math.MaxInt64 / 2, math.MaxInt64, "50.0%"},
	} {
		if got := percent(c.part, c.whole); got != c.want {
			t.Errorf("%s: percent(%d, %d) = %q, want %q", c.name, c.part, c.whole, got, c.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.0 s"},
		{400 * time.Millisecond, "0.4 s"},
		{12 * time.Second, "12 s"},
		{3*time.Minute + 5*time.Second, "3 min 05 s"},
		{time.Hour + 2*time.Minute + 59*time.Second, "1 h 02 min"},
		{50*time.Hour + 10*time.Minute, "2 d 02 h"},
		{-time.Second, "–"},
	} {
		if got := duration(c.d); got != c.want {
			t.Errorf("duration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestCaptureDate(t *testing.T) {
	for in, want := range map[string]string{
		"20210131123456":       "2021-01-31 12:34:56",
		"2021-01-31T12:34:56Z": "2021-01-31T12:34:56Z", // not a WARC timestamp: as it is
		"2021013112345x":       "2021013112345x",
		"":                     "",
	} {
		if got := captureDate(in); got != want {
			t.Errorf("captureDate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShortDigest(t *testing.T) {
	for in, want := range map[string]string{
		"sha1:5PLJWHYJOPQRSTUVWXYZ234567ABCDEF": "sha1:5PLJWHYJOP…",
		"sha1:SHORT":                            "sha1:SHORT",
		"NOLABELBUTLONGENOUGHTOCUT":             "NOLABELBUT…",
	} {
		if got := shortDigest(in); got != want {
			t.Errorf("shortDigest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEllipsis(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"text/html", 36, "text/html"},
		{"site-10.regional-schools.example.net", 20, "site-10.re…ample.net"},
		{"ééééééééé", 5, "éé…éé"},
	} {
		if got := ellipsis(c.s, c.n); got != c.want {
			t.Errorf("ellipsis(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
