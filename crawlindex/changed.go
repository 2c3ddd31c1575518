package crawlindex

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"warcdedup/fixity"
)

// ChangedSinceCommit says how the file at path is not the one its
// crawl's commit recorded (recorded: another tool wrote it since, and
// the records the index has at offsets in it may have moved), "" if it
// is that file: its stamp and size the recorded ones, else its SHA-256;
// a file of another stamp whose SHA-256 the index does not record is
// not known to be that file, and the answer says what to do.
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
		// Nothing to compare its bytes with: its size alone would pass
		// a package rewritten by another tool with its records moved.
		// Read whole, the package would tell nothing more; only the
		// records the index has in it, read at their offsets, would,
		// which a run cannot afford for each package (a scan of the
		// whole index), and the operator can ask for.
		return "is not known to be the file its crawl's commit recorded: its stamp (times, inode, device) is not the recorded one, and the index records no SHA-256 of it to compare its bytes with (its crawl was imported, or committed by an older version). " +
			"`warcdedup index verify --deep` reads the records the index has in it at their offsets; if they are right, take its crawl out of the index and import it again (`warcdedup index remove`, `warcdedup index import`), which records the file as it is"
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

// requiredFileChanged says how the committed file f of a crawl at
// location, which a crawl being committed requires, is not the file the
// index records, "" if it is or cannot be told: its size, else (its
// stamp changed) its SHA-256 when the index records one. The run read
// the originals it needs in it at their places and compared their bytes;
// this tells whether the file the index records stays what it says
// (index verify --deep), which a stamp alone does not (a mode or a hard
// link changed), and is read only when the stamp changed.
func requiredFileChanged(location string, f FileInfo) string {
	if strings.Contains(location, "://") {
		return "" // served over HTTP: not checked from here
	}
	path := filepath.Join(location, filepath.FromSlash(f.Name))
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	if fi.Size() != f.Size {
		return fmt.Sprintf("has changed since its crawl's commit recorded it (%d bytes, recorded: %d)", fi.Size(), f.Size)
	}
	if f.SHA256 == "" || f.Stamp != "" && Stamp(fi) == f.Stamp {
		return ""
	}
	return ChangedSinceCommit(path, f)
}
