package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The page shows figures in human units, decimal (1 GB = 10^9 bytes) with
// one decimal, and keeps the exact figures for tooltips and tables.

var byteUnits = []string{"kB", "MB", "GB", "TB", "PB", "EB"}

// humanBytes is n bytes in the largest decimal unit that keeps the figure
// at least 1: "512 B", "1.2 GB".
func humanBytes(n int64) string { return bytesOf(float64(n)) }

// bytesOf is humanBytes of a float, which axis ticks beyond the largest
// int64 need.
func bytesOf(v float64) string {
	if v < 0 {
		return "−" + bytesOf(-v)
	}
	if v < 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " B"
	}
	for i, u := range byteUnits {
		v /= 1000
		// Rounded to one decimal, 999.96 kB reads 1000.0 kB: one unit up.
		if math.Round(v*10) < 10000 || i == len(byteUnits)-1 {
			return strconv.FormatFloat(v, 'f', 1, 64) + " " + u
		}
	}
	panic("unreachable")
}

// exactBytes is n bytes with its digits grouped: "1,234,567 bytes".
func exactBytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return count(n) + " bytes"
}

// count is n with its digits grouped by thousands: "1,234,567".
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if s[0] == '-' {
		sign, s = "−", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// bigCount is n in words when it has more than six digits, as the
// number and its unit: ("1,234", ""), ("311.4", "million"). A figure
// rounded to 1000.0 million reads 1.0 billion.
func bigCount(n int64) (string, string) {
	if n < 1_000_000 && n > -1_000_000 {
		return count(n), ""
	}
	v := float64(n)
	for i, u := range []string{"million", "billion", "trillion", "quadrillion", "quintillion"} {
		v /= 1000
		if i == 0 {
			v /= 1000
		}
		if math.Abs(math.Round(v*10)) < 10000 || u == "quintillion" {
			return strconv.FormatFloat(v, 'f', 1, 64), u
		}
	}
	panic("unreachable")
}

// humanCount is bigCount in one string: "1,234", "311.4 million".
func humanCount(n int64) string {
	v, u := bigCount(n)
	if u == "" {
		return v
	}
	return v + " " + u
}

// percent is part of whole: "41.2%", "< 0.1%" for a part too small to
// show, "–" when whole is not positive.
func percent(part, whole int64) string {
	if whole <= 0 {
		return "–"
	}
	p := 100 * float64(part) / float64(whole)
	switch {
	case part > 0 && p < 0.05:
		return "< 0.1%"
	case part < whole && p >= 99.95:
		return "> 99.9%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

// duration is d as a reader of a log says it: "0.4 s", "12 s",
// "3 min 05 s", "1 h 02 min", "2 d 03 h".
func duration(d time.Duration) string {
	if d < 0 {
		return "–"
	}
	s := int64(d / time.Second)
	switch {
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Minute:
		return fmt.Sprintf("%d s", s)
	case d < time.Hour:
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h %02d min", s/3600, s/60%60)
	}
	return fmt.Sprintf("%d d %02d h", s/86400, s/3600%24)
}

// captureDate is a 14-digit WARC timestamp as a date and time
// ("2024-01-31 12:34:56"); anything else is shown as it is.
func captureDate(s string) string {
	if len(s) != 14 || strings.Trim(s, "0123456789") != "" {
		return s
	}
	return s[0:4] + "-" + s[4:6] + "-" + s[6:8] + " " + s[8:10] + ":" + s[10:12] + ":" + s[12:14]
}

// shortDigest is a digest cut to its label and first 10 characters, which
// tell classes apart on a page; the whole digest goes in a tooltip.
func shortDigest(d string) string {
	const keep = 10
	label, value, ok := strings.Cut(d, ":")
	if !ok {
		label, value = "", d
	} else {
		label += ":"
	}
	if r := []rune(value); len(r) > keep {
		return label + string(r[:keep]) + "…"
	}
	return d
}

// ellipsis cuts s to at most n characters by putting an ellipsis in
// place of its middle: both ends of a host name or a MIME type say what
// it is.
func ellipsis(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := n / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
