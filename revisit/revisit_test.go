package revisit

import "testing"

func TestProfile(t *testing.T) {
	tests := []struct{ version, want string }{
		{"WARC/1.0", "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"},
		{"WARC/1.1", "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"},
		{"WARC/0.17", "http://netpreserve.org/warc/0.17/revisit/identical-payload-digest"},
		{"WARC/0.18", "http://netpreserve.org/warc/0.18/revisit/identical-payload-digest"},
		{"warc/1.0", "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"},
	}
	for _, tt := range tests {
		if got := Profile(tt.version); got != tt.want {
			t.Errorf("Profile(%q) = %q, want %q", tt.version, got, tt.want)
		}
	}
}
