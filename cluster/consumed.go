package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"warcdedup/workdir"
)

// removeConsumed removes, once the task's success is claimed, the work
// copies no task of the job reads any more (unless Settings.KeepWork):
//
//   - hash@HOST: the host's manifest sorted on digest, cut into its range
//     parts by the same task (the parts hold every line of it);
//   - account: what it merged into the job's outputs under run's names
//     (by-file.manifest, numbered.manifest, facts-by-file.manifest), and
//     what the steps before it consumed: each host's range parts (read by
//     resolve), by-file.manifest (its rewrite's merge) and
//     facts-by-file.manifest, and each range's numbered.manifest,
//     by-file-HOST and originals-HOST parts.
//
// Each manifest is then kept once: the hosts' listings before and after,
// their facts, caches, rewrite logs, saved.tsv and fixity.tsv, and the
// merged outputs. A task is never run again once claimed (Task.Run finds
// its marker), and the account is the job's last: a file removed here is
// read by no attempt to come. One that cannot be removed is a warning.
func (k *task) removeConsumed() {
	if k.spec.KeepWork {
		return
	}
	var gone []string
	switch k.step.Kind {
	case kindHash:
		gone = append(gone, k.wd.host(k.host, workdir.ByDigestFile))
	case kindAccount:
		for i := range k.spec.Hosts {
			h := &k.spec.Hosts[i]
			parts, _ := filepath.Glob(k.wd.host(h, rangePrefix+"-*"))
			gone = append(gone, parts...)
			gone = append(gone, k.wd.host(h, workdir.ByDigestFile), k.wd.host(h, workdir.ByFileFile), k.wd.host(h, workdir.FactsByFile))
		}
		for r := range k.spec.Ranges {
			dir := k.wd.rangeDir(r, k.spec.Ranges)
			gone = append(gone, filepath.Join(dir, workdir.NumberedFile))
			for _, h := range k.spec.Hosts {
				gone = append(gone, filepath.Join(dir, byFilePrefix+h.Name), filepath.Join(dir, originalsPrefix+h.Name))
			}
		}
	}
	for _, name := range gone {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(k.Log, "warcdedup: warning: %s %d: a consumed work copy stays: %v\n", k.Step, k.Index, err)
		}
	}
}
