package dedup

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"warcdedup/report"
)

func writeJSON(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(name, append(data, '\n'))
}

func readJSON[T any](name string) (T, error) {
	var v T
	data, err := os.ReadFile(name)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

func readReport(name string) (*report.Report, error) {
	r, err := readJSON[report.Report](name)
	return &r, err
}

// fileStamp is a file's identity for "nothing changed": size,
// modification and change times, inode and device.
func fileStamp(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d %d %d %d %d", fi.Size(), fi.ModTime().UnixNano(), st.Ctim.Nano(), st.Ino, st.Dev), true
}
