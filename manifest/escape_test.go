package manifest_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/quick"

	"warcdedup/manifest"
)

func TestEscapeField(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"plain URI unchanged", "http://example.com/a?b=c&d#e", "http://example.com/a?b=c&d#e"},
		{"percent kept verbatim", "http://x/a%20b%zz%", "http://x/a%20b%zz%"},
		{"space", "http://x/a b", "http://x/a%20b"},
		{"NUL", "\x00", "%00"},
		{"tab, CR, LF", "a\tb\rc\nd", "a%09b%0Dc%0Ad"},
		{"0x1F", "\x1f", "%1F"},
		{"0x21 kept", "!", "!"},
		{"DEL", "a\x7f", "a%7F"},
		{"0x80 and above kept", "\x80\xc3\xa9\xff", "\x80\xc3\xa9\xff"},
		{"only escapes", " \x7f ", "%20%7F%20"},
		{"angle brackets kept", "<http://x/>", "<http://x/>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := manifest.EscapeField(tt.in); got != tt.want {
				t.Errorf("EscapeField(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEscapeFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"plain path unchanged", "dir/crawl-a.warc.gz", "dir/crawl-a.warc.gz"},
		{"percent", "a%b", "a%25b"},
		{"percent that looks like an escape", "a%20b", "a%2520b"},
		{"space", "my file.warc", "my%20file.warc"},
		{"LF", "a\nb", "a%0Ab"},
		{"DEL", "\x7f", "%7F"},
		{"non-ASCII kept", "caf\xc3\xa9.warc", "caf\xc3\xa9.warc"},
		{"invalid UTF-8 kept", "\xff\xfe", "\xff\xfe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := manifest.EscapeFile(tt.in); got != tt.want {
				t.Errorf("EscapeFile(%q) = %q, want %q", tt.in, got, tt.want)
			}
			got, err := manifest.UnescapeFile(tt.want)
			if err != nil || got != tt.in {
				t.Errorf("UnescapeFile(%q) = %q, %v; want %q, nil", tt.want, got, err, tt.in)
			}
		})
	}
}

// TestEscapeEveryByte checks the escaping rule of the spec for each of the
// 256 byte values: 0x00-0x20 and 0x7F become upper-case %XX, '%' too in file
// names, everything else is kept.
func TestEscapeEveryByte(t *testing.T) {
	for c := 0; c < 256; c++ {
		s := string([]byte{byte(c)})
		wantField, wantFile := s, s
		if c <= 0x20 || c == 0x7F {
			wantField = fmt.Sprintf("%%%02X", c)
			wantFile = wantField
		}
		if c == '%' {
			wantFile = "%25"
		}
		if got := manifest.EscapeField(s); got != wantField {
			t.Errorf("EscapeField(%q) = %q, want %q", s, got, wantField)
		}
		if got := manifest.EscapeFile(s); got != wantFile {
			t.Errorf("EscapeFile(%q) = %q, want %q", s, got, wantFile)
		}
		if got, err := manifest.UnescapeFile(wantFile); err != nil || got != s {
			t.Errorf("UnescapeFile(%q) = %q, %v; want %q, nil", wantFile, got, err, s)
		}
	}
}

func TestUnescapeFile(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{"no escapes", "a/b.warc", "a/b.warc", false},
		{"lower-case hex", "a%2fb%7f", "a/b\x7f", false},
		{"escape at end", "a%20", "a ", false},
		{"escape at start", "%20a", " a", false},
		{"escaped percent", "%25%25", "%%", false},
		{"lone percent", "%", "", true},
		{"percent at end", "a%", "", true},
		{"one digit at end", "a%2", "", true},
		{"non-hex first digit", "%G0", "", true},
		{"non-hex second digit", "%0G", "", true},
		{"sign in escape", "%+1", "", true},
		{"space in escape", "% 1", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := manifest.UnescapeFile(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("UnescapeFile(%q) = %q, nil; want error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("UnescapeFile(%q) = %q, %v; want %q, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

// isFieldSafe reports whether s can stand in a manifest field unchanged.
func isFieldSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] == 0x7F {
			return false
		}
	}
	return true
}

// TestEscapeProperties checks, for arbitrary byte strings, that both
// escapes produce a string without whitespace or control bytes, that
// EscapeFile round-trips through UnescapeFile, that already-safe strings are
// kept, and that an escaped non-empty string stands in a line that Parse
// reads back.
func TestEscapeProperties(t *testing.T) {
	check := func(b []byte) bool {
		s := string(b)
		field, file := manifest.EscapeField(s), manifest.EscapeFile(s)
		if !isFieldSafe(field) || !isFieldSafe(file) {
			t.Logf("EscapeField(%q) = %q, EscapeFile = %q: unsafe byte left", s, field, file)
			return false
		}
		if isFieldSafe(s) && field != s {
			t.Logf("EscapeField(%q) = %q, want it unchanged", s, field)
			return false
		}
		if isFieldSafe(s) && !strings.Contains(s, "%") && file != s {
			t.Logf("EscapeFile(%q) = %q, want it unchanged", s, file)
			return false
		}
		if got, err := manifest.UnescapeFile(file); err != nil || got != s {
			t.Logf("UnescapeFile(EscapeFile(%q)) = %q, %v", s, got, err)
			return false
		}
		if s == "" {
			return true
		}
		text := file + " 1 2 " + field + " " + field + " " + sha1Empty
		l, err := manifest.Parse([]byte(text))
		if err != nil || l.File != file || l.URI != field || l.Date != field {
			t.Logf("Parse(%q) = %+v, %v", text, l, err)
			return false
		}
		return true
	}
	// Bias the bytes towards the interesting ones: controls, space, '%',
	// DEL, hex digits and high bytes.
	alphabet := []byte("\x00\x01\t\n\r\x1f %%%%%7FAaf09\x7f\x80\xc3\xa9\xff/.")
	for _, s := range []string{"", "%", "%%", "%2", "%25", " ", "\x7f", "a b\tc"} {
		if !check([]byte(s)) {
			t.Errorf("seed %q failed", s)
		}
	}
	cfg := &quick.Config{MaxCount: 5000}
	if err := quick.Check(check, cfg); err != nil {
		t.Error(err)
	}
	biased := func(b []byte) bool {
		for i := range b {
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		return check(b)
	}
	if err := quick.Check(biased, cfg); err != nil {
		t.Error(err)
	}
}
