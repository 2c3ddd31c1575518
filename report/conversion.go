package report

// Conversion is what converting the collection's ARC files to WARC in
// place did before the deduplication (warcdedup run --convert-arc), or
// would do (assess --convert-arc, Estimated: nothing converted, the WARC
// sizes estimated from the ARC records).
type Conversion struct {
	Estimated bool `json:"estimated,omitempty"`
	// ARCFiles are the ARC files found; Converted were converted, proved
	// and put in place (Resumed of them finished after an interruption),
	// Adopted had a WARC of their name already that proved to be their
	// conversion. Earlier counts files converted by an earlier run of the
	// work directory, not found as ARC any more.
	ARCFiles  int64 `json:"arc_files"`
	Converted int64 `json:"converted"`
	Adopted   int64 `json:"adopted"`
	Resumed   int64 `json:"resumed,omitempty"`
	Earlier   int64 `json:"earlier,omitempty"`
	// Left counts the ARC files left as they are, and Why the first of
	// them with why ("FILE: damaged: ..."): the job went on with them as
	// ARC files, their duplicates kept.
	Left int64    `json:"left"`
	Why  []string `json:"why,omitempty"`
	// ARCBytes are the bytes of the files converted or adopted, WARCBytes
	// those of their WARC files; Records the ARC records those hold.
	ARCBytes  int64 `json:"arc_bytes"`
	WARCBytes int64 `json:"warc_bytes"`
	Records   int64 `json:"records"`
	// KeptIn is where the converted ARC files were moved (--keep-arc), ""
	// when they were removed once their WARC was proved.
	KeptIn string `json:"kept_in,omitempty"`
	// Method says how an estimate was made and how exact it is.
	Method string `json:"method,omitempty"`
}

// countGroup is the conversion's table of the page's counts.
func (c *Conversion) countGroup() countGroup {
	verb, warc := "converted", "Bytes of their WARC files"
	if c.Estimated {
		verb, warc = "that would be converted", "Bytes of their WARC files (estimated)"
	}
	kept := "removed once their WARC was proved"
	if c.KeptIn != "" {
		kept = "moved to " + c.KeptIn
	}
	rows := []countRow{
		{Label: "ARC files found", Human: count(c.ARCFiles)},
		{Label: "ARC files " + verb, Human: count(c.Converted)},
		{Label: "Adopted (their WARC was there and proved)", Human: count(c.Adopted)},
		{Label: "Left as ARC, named among the exit reasons", Human: count(c.Left), Warn: c.Left > 0},
		{Label: "Bytes of those ARC files", Human: humanBytes(c.ARCBytes), Exact: exactBytes(c.ARCBytes)},
		{Label: warc, Human: humanBytes(c.WARCBytes), Exact: exactBytes(c.WARCBytes)},
		{Label: "ARC records in them", Human: count(c.Records)},
	}
	if !c.Estimated {
		rows = append(rows, countRow{Label: "The ARC files: " + kept, Human: "–"})
	}
	if c.Earlier > 0 {
		rows = append(rows, countRow{Label: "Converted by an earlier run", Human: count(c.Earlier)})
	}
	return countGroup{Heading: "ARC to WARC conversion", Rows: rows}
}
