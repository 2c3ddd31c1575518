package gen

import (
	"fmt"
	"strings"
)

// ARC record lines (shared/spec/records.md section 3): v1 "URL IP-address
// Archive-date Content-type Archive-length", v2 (Alexa's) with Result-code,
// Checksum, Location, Offset and Filename before the length. With
// Config.ARCQuirks, ARC files get what real ones have and readers must cope
// with: a filedesc whose declared length leaves its last line feed out
// (declared 76 for 77 bytes), records followed by no line feed or by two,
// and in v2 dashes for a missing IP address and result code.

// arcV2 reports whether f is an ARC v2 format.
func (f Format) arcV2() bool { return f == ARC2 || f == ARC2Gz }

// arcFiledescRecord writes the filedesc record begun at start.
func (w *writer) arcFiledescRecord(start int64) {
	name := w.arcName()
	body := "1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
	if w.fp.format.arcV2() {
		body = "2 0 Alexa Internet\nURL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n"
	}
	declared := int64(len(body))
	if w.p.cfg.ARCQuirks && w.fi%2 == 1 {
		// The last line feed of the header counted as the record's end.
		declared--
	}
	w.arcRecordLine(start, "filedesc://"+name, "0.0.0.0", arcDate(w.fp.start), "text/plain", "200", declared)
	fmt.Fprintf(&w.out, "%s\n", body)
}

// arcRecordLine writes a record line; start is the record's offset (the
// v2 Offset field), code the HTTP status ("-" for none).
func (w *writer) arcRecordLine(start int64, url, ip, date, mime, code string, length int64) {
	if !w.fp.format.arcV2() {
		fmt.Fprintf(&w.out, "%s %s %s %s %d\n", url, ip, date, mime, length)
		return
	}
	if w.p.cfg.ARCQuirks && strings.HasPrefix(url, "dns:") {
		ip, code = "-", "-"
	}
	fmt.Fprintf(&w.out, "%s %s %s %s %s - - %d %s %d\n", url, ip, date, mime, code, start, w.arcName(), length)
}

// arcResultCode is the v2 Result-code of the HTTP record whose head
// httpHeader just made.
func (w *writer) arcResultCode() string {
	if code, _, ok := strings.Cut(strings.TrimPrefix(string(w.httpHdr), "HTTP/1.1 "), " "); ok {
		return code
	}
	return "-"
}

// arcRecordEnd ends a record with its line feed: with ARCQuirks, now and
// then none or two.
func (w *writer) arcRecordEnd(it *item) {
	switch {
	case w.p.cfg.ARCQuirks && it.date%7 == 0:
	case w.p.cfg.ARCQuirks && it.date%7 == 1:
		w.out.Write([]byte("\n\n"))
	default:
		w.out.Write([]byte("\n"))
	}
}
