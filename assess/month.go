package assess

// monthOf is the YYYY-MM of a CDX timestamp (YYYYMMDDhhmmss).
func monthOf(ts string) string {
	if len(ts) >= 6 && allDigits(ts[:6]) {
		return ts[:4] + "-" + ts[4:6]
	}
	return "(unknown)"
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}
