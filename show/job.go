package show

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"warcdedup/dedup"
	"warcdedup/internal/fspath"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/workdir"
)

// Job is the work directory a file was found in, and the file's name there.
type Job struct {
	WorkDir    string `json:"work_dir"`
	Collection string `json:"collection"`
	Name       string `json:"name"` // relative to the collection
	// Manifest is the job's manifest sorted on digest that was read
	// ("" when the job has none: not yet, or no longer once complete).
	Manifest string `json:"manifest,omitempty"`
	// Complete says the job is complete: its intermediates, the
	// manifests on digest among them, are removed (unless kept with
	// --keep-work), and what points at a response is found through the
	// rewrite log.
	Complete bool `json:"complete"`

	logSize int64 // of the rewrite log when the job hashed the collection
	// log is the job's rewrite log, "" if it has none. It is read for the
	// few files looked up, never held whole (rewritelog.LoadFileOf):
	// since holds the entries appended since the job hashed the
	// collection, of the files in sinceOf (they move the manifest's
	// offsets to where the records are now).
	log     string
	since   *rewritelog.Moves
	sinceOf map[string]bool
	table   *manifest.Table
}

// openJob finds the work directory of the job on the collection holding
// file (as warcdedup undo does, or workDir) and opens what it keeps.
func openJob(file, workDir string) (*Job, error) {
	abs, err := fspath.Abs(file)
	if err != nil {
		return nil, err
	}
	if workDir == "" {
		if workDir, err = dedup.FindWorkDir(abs); err != nil {
			return nil, err
		}
	}
	data, err := os.ReadFile(filepath.Join(workDir, workdir.StateFile))
	if err != nil {
		return nil, fmt.Errorf("%s: no job's work directory: %w", workDir, err)
	}
	var st struct {
		Params struct {
			Collections []string `json:"collections"`
			Index       string   `json:"index"`
		} `json:"params"`
		LogSizeAtHash int64 `json:"log_size_at_hash"`
		Complete      bool  `json:"complete"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(workDir, workdir.StateFile), err)
	}
	if st.Params.Index != "" {
		return nil, fmt.Errorf("%s is a crawl index's job (its files are named CRAWL/PATH): give --cdx INDEX instead", workDir)
	}
	j := &Job{WorkDir: workDir, logSize: st.LogSizeAtHash, Complete: st.Complete}
	for _, c := range st.Params.Collections {
		if abs == c || strings.HasPrefix(abs, c+string(filepath.Separator)) {
			j.Collection = c
		}
	}
	if j.Collection == "" {
		return nil, fmt.Errorf("%s is in none of the collections of the job in %s (%s)", file, workDir, strings.Join(st.Params.Collections, ", "))
	}
	rel, _ := filepath.Rel(j.Collection, abs)
	j.Name = filepath.ToSlash(rel)
	logName := filepath.Join(workDir, workdir.LogFile)
	if _, err := os.Stat(logName); err == nil {
		j.log = logName
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, name := range []string{workdir.NumberedFile, workdir.ByDigestFile} {
		p := filepath.Join(workDir, name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if j.table, err = manifest.OpenTable(p); err != nil {
			return nil, err
		}
		j.Manifest = p
		break
	}
	return j, nil
}

func (j *Job) close() {
	if j != nil && j.table != nil {
		j.table.Close()
	}
}

// escapedName is the file's name as manifests write it (field 1).
func (j *Job) escapedName() string { return manifest.EscapeFile(j.Name) }

// path is where a manifest's file name is on disk.
func (j *Job) path(field string) (string, error) {
	name, err := manifest.UnescapeFile(field)
	if err != nil {
		return "", err
	}
	return filepath.Join(j.Collection, filepath.FromSlash(name)), nil
}

// follow reads the log entries appended since the job hashed the
// collection of the files of lines (and no other), for now to follow them:
// the log read once for all of them.
func (j *Job) follow(lines []manifest.Line) error {
	if j.log == "" {
		return nil
	}
	of := map[string]bool{}
	var names []string
	for i := range lines {
		name, err := manifest.UnescapeFile(lines[i].File)
		if err != nil {
			return err
		}
		if !of[name] {
			of[name] = true
			names = append(names, name)
		}
	}
	m, err := rewritelog.LoadFileOf(j.log, j.logSize, names)
	if err != nil {
		return err
	}
	j.since, j.sinceOf = m, of
	return nil
}

// now follows a manifest line's record through the log entries appended
// since the job hashed the collection: where it starts now, its length,
// and the last entry that rewrote it (nil for none). The entries of its
// file are read unless follow read them.
func (j *Job) now(l *manifest.Line) (int64, int64, *rewritelog.Move, error) {
	if j.log == "" {
		return l.Offset, l.Length, nil, nil
	}
	name, err := manifest.UnescapeFile(l.File)
	if err != nil {
		return 0, 0, nil, err
	}
	if !j.sinceOf[name] {
		if err := j.follow([]manifest.Line{*l}); err != nil {
			return 0, 0, nil, err
		}
	}
	f := j.since.Lookup(name)
	if f == nil {
		return l.Offset, l.Length, nil, nil
	}
	var last *rewritelog.Move
	off, length, err := j.since.Follow(f, l.Offset, l.Length, func(mv rewritelog.Move, _, _ int64) error {
		last = &mv
		return nil
	})
	return off, length, last, err
}

// written returns the log's entry that wrote the revisit now at offset of
// the job's file, and when its run started; nil if the log wrote none there.
func (j *Job) written(offset int64) (*Written, error) {
	if j.log == "" {
		return nil, nil
	}
	all, err := rewritelog.LoadFileOf(j.log, 0, []string{j.Name})
	if err != nil {
		return nil, err
	}
	f := all.Lookup(j.Name)
	if f == nil {
		return nil, nil
	}
	var w *Written
	err = all.Live(f, func(mv rewritelog.Move, off int64) error {
		if off == offset {
			w = &Written{Log: j.log, Line: mv.Line, Run: all.Runs[mv.Run].UTC().Format(time.RFC3339)}
		}
		return nil
	})
	return w, err
}

// Written is the rewrite log's entry of a revisit the toolchain wrote.
type Written struct {
	Log  string `json:"log"`
	Line int64  `json:"line"`
	Run  string `json:"run"` // when the run that wrote it started
}

// revisitsOf lists the revisits that point at the response r when the
// job has no manifest on digest (a complete job removed them): those its
// rewrite log wrote, in every file of the collection, that no later run
// restored, where they are now (the log read once, keeping the matches:
// see revisitScan); then other tools' revisits in the response's own
// file, which the log does not know.
func (j *Job) revisitsOf(r *Record, resp *Response) error {
	listed := map[int64]bool{}
	if j.log != "" {
		found, legacy, err := revisitsInLog(j.log, r.URI, r.Date, r.PayloadDigest)
		if err != nil {
			return fmt.Errorf("the revisits of it the rewrite log wrote: %w", err)
		}
		if legacy {
			r.Notes = append(r.Notes, fmt.Sprintf("%s has entries of an older format, without the digest and references of the revisits they wrote: those are not listed", j.log))
		}
		for _, v := range found {
			p := &Place{File: filepath.Join(j.Collection, filepath.FromSlash(v.File)), Offset: v.Offset, Length: v.Length,
				Found: filepath.Base(j.log) + ", followed to where it is now"}
			if v.err != nil {
				p.Now = "cannot be followed to where it is now: " + v.err.Error()
			} else if f, _, rec, err := openAt(p.File, p.Offset); err != nil {
				p.Now = err.Error()
			} else {
				f.Close()
				p.URI, p.Date = rec.TargetURI(), rec.Date
				p.Now = fmt.Sprintf("a %s (written by rewrite log line %d)", rec.Type, v.Line)
				if v.File == j.Name {
					listed[v.Offset] = true
				}
			}
			resp.Revisits = append(resp.Revisits, p)
		}
	}
	return revisitsInFile(filepath.Join(j.Collection, filepath.FromSlash(j.Name)), r, resp, listed,
		"in the response's own file, not in the rewrite log (another tool's)")
}
