package crawlindex

import (
	"fmt"
	"os"

	"warcdedup/fixity"
)

// ChangedSinceCommit says how the file at path is not the one its
// crawl's commit recorded (recorded: another tool wrote it since, and
// the records the index has at offsets in it may have moved), "" if it
// is that file: its stamp and size the recorded ones, else its SHA-256.
// A run or an undo writes a committed crawl's package anew (its
// requires entries) and records it again only when this finds it
// unchanged: one function for both, so that they never disagree on
// what the index may take as its originals' file.
func ChangedSinceCommit(path string, recorded FileInfo) string {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	if fi.Size() != recorded.Size {
		return fmt.Sprintf("has changed since its crawl's commit recorded it (%d bytes, recorded: %d)", fi.Size(), recorded.Size)
	}
	if recorded.Stamp != "" && Stamp(fi) == recorded.Stamp {
		return ""
	}
	if recorded.SHA256 == "" {
		return ""
	}
	h, err := fixity.HashFile(path, contentsAlgorithm)
	if err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	if sum := h.Sum(contentsAlgorithm); sum != recorded.SHA256 {
		return fmt.Sprintf("has changed since its crawl's commit recorded it (SHA-256 %s, recorded: %s)", sum, recorded.SHA256)
	}
	return ""
}
