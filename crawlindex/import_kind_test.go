package crawlindex

import "testing"

// TestHTTPCaptureTakesOnlyURLsOfHTTPResponses proves which capture lines'
// URLs the import takes: http and https in any case, and URLs without a
// scheme (a host and port is none); not the urn:, metadata:, dns:, ftp:
// and other URLs of records that are no HTTP response, to which some
// indexers give status 200.
func TestHTTPCaptureTakesOnlyURLsOfHTTPResponses(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"http://example.com/", true},
		{"https://example.com/a?b=c:d", true},
		{"HTTP://EXAMPLE.COM/", true},
		{"Https://example.com/", true},
		{"example.com/page", true},
		{"localhost:20000/", true},
		{"example.com:8080/x:y", true},
		{"", true},
		{"//example.com/", true},
		{"urn:pageinfo:http://example.com/", false},
		{"urn:text:20240101000000/http://example.com/", false},
		{"urn:view:http://example.com/", false},
		{"metadata://gnu.org/software/wget/warc/wget_arguments.txt", false},
		{"dns:example.com", false},
		{"ftp://ftp.example.com/a", false},
		{"gemini://example.com/", false},
		{"httpx://example.com/", false},
		{"filedesc://crawl.arc", false},
	} {
		if got := httpCapture([]byte(tc.url)); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.url, got, tc.want)
		}
	}
}
