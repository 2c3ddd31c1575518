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

// loadLogs reads the rewrite log's catalog, to follow it on disk (none:
// an empty log in memory), and loads the conversion map, if named.
func loadLogs(u *reindex.Updater, logFile, mapFile string, since time.Time) (*reindex.Conversion, error) {
	var err error
	if logFile != "" {
		u.Log, err = rewritelog.OpenCatalog(logFile, 0, since)
	} else {
		u.Moves, err = rewritelog.Load(rewritelog.NewReader(strings.NewReader(""), "no log"), since)
	}
	if err != nil || mapFile == "" {
		return nil, err
	}
	m, err := convmap.LoadFile(mapFile)
	if err != nil {
		return nil, err
	}
	return &reindex.Conversion{Map: m}, nil
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
