package dedup

import (
	"bytes"
	"fmt"
	"os"

	"warcdedup/crawlindex"
	"warcdedup/report"
	"warcdedup/workdir"
)

func readReport(name string) (*report.Report, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := report.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// writeReport writes the report's figures (stats.json) and its page
// (report.html) into the work directory.
func writeReport(wd *workdir.Dir, rep *report.Report) error {
	var js, page bytes.Buffer
	if err := report.WriteJSON(&js, rep); err != nil {
		return err
	}
	if err := report.WriteHTML(&page, rep); err != nil {
		return err
	}
	if err := workdir.WriteFile(wd.File(workdir.StatsFile), js.Bytes()); err != nil {
		return err
	}
	return workdir.WriteFile(wd.File(workdir.ReportFile), page.Bytes())
}

// fileStamp is a file's identity for "nothing changed": size,
// modification and change times, inode and device.
func fileStamp(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	s := crawlindex.Stamp(fi)
	return s, s != ""
}
