package warcindex

import (
	"math/rand"
	"strings"
	"testing"
)

// replacerTimestamp is the timestamp as 28ff934 made it (a
// strings.Replacer per record): the reference timestamp must match.
func replacerTimestamp(date string) string {
	d := strings.NewReplacer("-", "", ":", "", "T", "").Replace(date)
	return d[:min(len(d), 14)]
}

// TestTimestampAttack proves that timestamp gives what the Replacer it
// replaced gave for WARC-Date values a crawler or a damaged file may
// hold: fractional seconds, no zone, short and long dates, separators
// only, bytes not UTF-8 (cut inside a rune at 14 bytes), NUL, spaces,
// lower-case separators, and random bytes drawn from the separators
// and digits.
func TestTimestampAttack(t *testing.T) {
	for _, tc := range []struct{ name, date string }{
		{"fractional seconds", "2024-05-06T07:08:09.123456789Z"},
		{"no Z", "2024-05-06T07:08:09"},
		{"offset zone", "2024-05-06T07:08:09-05:00"},
		{"year and month", "2024-05"},
		{"year only", "2024"},
		{"exactly 14 digits after removal", "2024-05-06T07:08:09"},
		{"15 characters after removal", "2024-05-06T07:08:09Z"},
		{"separators only, long", strings.Repeat("-:T", 20)},
		{"separators then digits", "---:::TTT20240506070809123"},
		{"spaces", " 2024-05-06 07:08:09 "},
		{"NUL bytes", "2024\x00-05\x00-06T07"},
		{"multi-byte rune cut at 14 bytes", "2024-05-06T07:08:0é9"},
		{"invalid UTF-8", "\xff\xfe2024-05-06T07:08:09"},
		{"lower-case t kept", "2024-05-06t07:08:09"},
		{"garbage", "not a date at all, really"},
		{"empty", ""},
		{"only T", "TTTTTTTTTTTTTTTTTTTTTTT1"},
		{"unicode dashes kept", "2024‐05‐06"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := timestamp(tc.date), replacerTimestamp(tc.date); got != want {
				t.Fatalf("%q: %q, the Replacer gave %q", tc.date, got, want)
			}
		})
	}
	t.Run("random dates", func(t *testing.T) {
		rng := rand.New(rand.NewSource(1))
		const alphabet = "-:T0123456789Zz.+ \xff\xc3\xa9"
		for i := 0; i < 20000; i++ {
			b := make([]byte, rng.Intn(40))
			for j := range b {
				b[j] = alphabet[rng.Intn(len(alphabet))]
			}
			if got, want := timestamp(string(b)), replacerTimestamp(string(b)); got != want {
				t.Fatalf("%q: %q, the Replacer gave %q", b, got, want)
			}
		}
	})
}

// FuzzTimestamp compares timestamp with the Replacer on any input
// (go test -fuzz FuzzTimestamp ./warcindex/).
func FuzzTimestamp(f *testing.F) {
	for _, s := range []string{"2024-05-06T07:08:09Z", "", "\xff-T:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, date string) {
		if got, want := timestamp(date), replacerTimestamp(date); got != want {
			t.Fatalf("%q: %q, the Replacer gave %q", date, got, want)
		}
	})
}
