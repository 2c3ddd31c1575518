package replica

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"warcdedup/workdir"
)

// JobVerified refuses a work directory whose job did not finish and
// verify a real run (state.json: complete, not a dry run), or whose
// verification found records lost (violations.txt not empty).
func JobVerified(wd string) error {
	data, err := os.ReadFile(filepath.Join(wd, workdir.StateFile))
	if err != nil {
		return fmt.Errorf("no finished job in %s (%v): run warcdedup run first", wd, err)
	}
	var st struct {
		Complete bool `json:"complete"`
		Params   struct {
			DryRun bool `json:"dry_run"`
		} `json:"params"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(wd, workdir.StateFile), err)
	}
	if !st.Complete || st.Params.DryRun {
		return fmt.Errorf("the job in %s is not finished and verified (a dry run, interrupted, or undone since): run warcdedup run to its end first", wd)
	}
	// A job whose verification found records lost is complete too (its
	// exit status said so): its files must not replace the second copy's.
	lost, err := os.Stat(filepath.Join(wd, workdir.Violations))
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("the job's verification (%s): %w", filepath.Join(wd, workdir.Violations), err)
	case err == nil && lost.Size() > 0:
		return fmt.Errorf("the job in %s lost records (its verification lists them in %s): the second copy keeps its files", wd, filepath.Join(wd, workdir.Violations))
	}
	return nil
}
