package dedup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"warcdedup/convmap"
	"warcdedup/internal/fspath"
	"warcdedup/internal/progress"
	"warcdedup/internal/within"
	"warcdedup/migrate"
	"warcdedup/stage"
	"warcdedup/workdir"
)

// convertStats keeps the convert stage's figures (stage.ConvertResult),
// for a resumed run's report and exit status.
const convertStats = "convert.json"

// ConvertOptions are the options of a job that converts the collection's
// ARC files to WARC first.
type ConvertOptions struct {
	// ConvertARC converts the collection's ARC files to WARC in place
	// first (the convert stage), moving each converted ARC to KeepARC if
	// set; a dry run estimates what that would do instead. Software names
	// this software in the WARC files' warcinfo records; ConvertHook, if
	// set, is called between each file's conversion steps (tests).
	ConvertARC  bool
	KeepARC     string
	Software    string
	ConvertHook func(step, arc string)
	// ConvertEvery: a dry run's estimate of the conversion measures one
	// in ConvertEvery of the records besides every duplicate
	// (stage.EstimateConversion.Every; 0 for its default).
	ConvertEvery int
}

// checkConvert checks the options of a job that converts ARC files first.
func (opt *Options) checkConvert() error {
	switch {
	case opt.KeepARC != "" && !opt.ConvertARC:
		return errors.New("--keep-arc keeps the ARC files --convert-arc converts: give --convert-arc")
	case !opt.ConvertARC:
		return nil
	case len(opt.Collections) > 1:
		// The proofs are named by their path in the collection: one
		// work directory holds one collection's.
		return fmt.Errorf("--convert-arc converts one collection per work directory (its proofs are named by their path in the collection); %d collections given: run each with its own", len(opt.Collections))
	case opt.Digests != nil:
		return errors.New("--convert-arc with a slice of the digests: assess a sample of the files instead")
	}
	if opt.KeepARC != "" {
		abs, err := fspath.Abs(opt.KeepARC)
		if err != nil {
			return fmt.Errorf("--keep-arc %s: %w", opt.KeepARC, err)
		}
		if in, err := within.Dir(abs, opt.Collections[0]); err != nil {
			return fmt.Errorf("--keep-arc %s: %w", opt.KeepARC, err)
		} else if in {
			return fmt.Errorf("--keep-arc %s is inside the collection %s: the ARC files kept there would be listed again: give --keep-arc a directory outside it", opt.KeepARC, opt.Collections[0])
		}
		opt.KeepARC = abs
	}
	return nil
}

// checkKeepARC holds a job to the keep directory it recorded: an ARC
// file an archivist asked to keep must never be removed because a rerun
// forgot --keep-arc or named another directory. A run that would convert
// the ARC files without keeping them there is refused (the ARC files kept
// so far are there, the rest would be elsewhere or gone); a dry run, or a
// run that converts nothing, removes no ARC and carries the recorded
// directory on, so that a later run still finds it.
func (r *run) checkKeepARC() error {
	was := r.state.Params.KeepARC
	switch {
	case was == "" || r.opt.KeepARC == was:
		return nil
	case !r.opt.ConvertARC || r.opt.DryRun && r.opt.KeepARC == "":
		r.opt.KeepARC = was
		return nil
	}
	now := "no --keep-arc"
	if r.opt.KeepARC != "" {
		now = "--keep-arc " + r.opt.KeepARC
	}
	return fmt.Errorf("the job in %s converts the ARC files with --keep-arc %s, and this run has %s: the ARC files left would not be kept there; give --keep-arc %s again (or another --work-dir for another job)",
		r.wd.Path, was, now, was)
}

// convert is the convert stage (with --convert-arc, before the hash):
// the collection's ARC files become WARC files in place, each proved
// before its ARC is retired; those that cannot are named and left, and
// the job goes on with them as ARC files.
func (r *run) convert(ctx context.Context) (string, error) {
	// Whatever a dry run (assess --convert-arc) did of this job was done
	// on the ARC files: the stages after this one start anew.
	r.state.Done = nil
	// The job's parameters (--keep-arc among them) are recorded before an
	// ARC is retired: a run stopped in this stage is resumed with them.
	r.state.Complete = false
	if err := writeState(r.wd, r.state); err != nil {
		return "", err
	}
	show := r.show.Start(stage.ConvertName, "", 0)
	c := stage.Convert{Collection: r.opt.Collections[0], WorkDir: r.wd.Path, KeepARC: r.opt.KeepARC, Locks: r.locks, Jobs: r.opt.Jobs,
		Software: r.opt.Software, Messages: messages{r.show}, Meter: show, Hook: r.opt.ConvertHook}
	res, err := c.Run(ctx)
	show.Done("")
	if err != nil {
		return "", err
	}
	r.rep.Conversion = &res.Conversion
	if err := workdir.WriteJSON(r.wd.File(convertStats), res); err != nil {
		return "", err
	}
	// What the job lists from here is the collection as converted.
	if r.inputs, err = r.collect(); err != nil {
		return "", err
	}
	return stage.ConvertNote(&res.Conversion), nil
}

// convertToRetry is how many ARC files the complete job's convert stage
// left because their conversion failed (stage.ConvertResult.Retry): a
// rerun of it converts them again rather than having nothing to do.
func (r *run) convertToRetry() int64 {
	if !r.opt.ConvertARC || r.opt.DryRun {
		return 0
	}
	res, err := workdir.ReadJSON[stage.ConvertResult](r.wd.File(convertStats))
	if err != nil {
		return 0
	}
	return res.Retry
}

// reloadConvert recovers the figures of a convert stage an earlier run
// of the job did.
func (r *run) reloadConvert() error {
	res, err := workdir.ReadJSON[stage.ConvertResult](r.wd.File(convertStats))
	if err != nil {
		return err
	}
	r.rep.Conversion = &res.Conversion
	return nil
}

// UndoConversionNote says what an undo gives back of the files a job of
// workDir converted from ARC (run --convert-arc), "" when it converted
// none. Undo restores revisits as the WARC records they replaced; it does
// not convert back: the WARC holds every ARC record's bytes (the
// conversion was proved record for record), and an ARC rebuilt from it
// would be another file than the one retired, whose bytes only
// --keep-arc keeps.
func UndoConversionNote(workDir string) (string, error) {
	f, err := os.Open(filepath.Join(workDir, migrate.MapFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	files := 0
	cr := convmap.NewReader(bufio.NewReader(f), f.Name())
	for {
		file, rec, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if file != nil && rec == nil {
			files++
		}
	}
	if files == 0 {
		return "", nil
	}
	note := fmt.Sprintf("converted from ARC (run --convert-arc): %s files: undo gives back their WARC records, not the ARC files (a conversion is not undone)", progress.Count(int64(files)))
	if res, err := workdir.ReadJSON[stage.ConvertResult](filepath.Join(workDir, convertStats)); err == nil && res.Conversion.KeptIn != "" {
		note += "; the ARC files are in " + res.Conversion.KeptIn + ", byte for byte, as --keep-arc kept them"
	} else {
		note += "; the ARC files were removed once their WARC was proved (conversion.map lists each, with its size and SHA-256)"
	}
	return note, nil
}
