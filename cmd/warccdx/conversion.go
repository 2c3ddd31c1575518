package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"warcdedup/convmap"
	"warcdedup/reindex"
	"warcdedup/rewritelog"
)

// loadLogs loads the rewrite log (none: an empty one) and the conversion
// map, if named.
func loadLogs(logFile, mapFile string, since time.Time) (*rewritelog.Moves, *reindex.Conversion, error) {
	var moves *rewritelog.Moves
	var err error
	if logFile != "" {
		moves, err = rewritelog.LoadFile(logFile, since)
	} else {
		moves, err = rewritelog.Load(rewritelog.NewReader(strings.NewReader(""), "no log"), since)
	}
	if err != nil || mapFile == "" {
		return moves, nil, err
	}
	m, err := convmap.LoadFile(mapFile)
	if err != nil {
		return nil, nil, err
	}
	return moves, &reindex.Conversion{Map: m}, nil
}

func conversionSummary(w io.Writer, c *reindex.Conversion) {
	if c == nil {
		return
	}
	with := 0
	for _, f := range c.Map.Files() {
		if f.Lines > 0 {
			with++
		}
	}
	fmt.Fprintf(w, "conversion: %d ARC files converted, %d with lines here: %d lines made their WARC files', %d filedesc lines added, %d records without a line\n",
		len(c.Map.Files()), with, c.Stats.Lines, c.Stats.Added, c.Stats.Missing)
}
