package undo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"warcdedup/dedup"
	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/refs"
	"warcdedup/source"
	"warcdedup/wacz"
	"warcdedup/workdir"
)

// undoCheckedFile keeps, in the work directory, the stamps of the files
// the rewrite log never replaced that an undo found holding no revisit of
// the form this toolchain writes (or unchanged since the job completed):
// the next undo reads only those that changed since (the job's own stamps
// are gone once an undo starts the job anew).
const undoCheckedFile = "undo-checked.json"

// unloggedRevisits finds, in the files named (escaped, present) that the
// rewrite log never replaced, revisits in the form this toolchain writes
// (refs.InWrittenForm), and names each file that holds some: a run the
// log does not record wrote them (the work directory was restored from a
// copy older than the last run, or is another's), and this undo did not
// restore them, so it must not exit 0. Only files that changed since the
// job last completed (stamps, as it recorded them; every file where it
// recorded none) or since an undo last found it clean (undoCheckedFile)
// are read: a file unchanged since holds what the runs the log records
// left in it. So is one unchanged since the hash stage of the last job
// read it (workdir.HashedFiles), completed or not: it holds what it held
// before that job (a dry run, or a run killed before it replaced it), and
// the log, which names every file a run replaced, does not name it, so no
// run of this work directory wrote it; without that, an undo after a
// dry run or a killed first run exited 1 for ever on a collection holding
// revisits from before the work directory.
func (u *undo) unloggedRevisits(ctx context.Context, files []string, stamps map[string]string) []string {
	checked, _ := workdir.ReadJSON[map[string]string](u.wd.File(undoCheckedFile))
	if checked == nil {
		checked = map[string]string{}
	}
	hashed, err := dedup.HashedStamps(u.wd)
	if err != nil {
		u.show.Note("warcdedup: warning: %v", err)
	}
	defer func() {
		if err := workdir.WriteJSON(u.wd.File(undoCheckedFile), checked); err != nil {
			u.show.Note("warcdedup: warning: %v", err)
		}
	}()
	loc := u.coll.Locator()
	type todo struct{ name, path, member, stamp string }
	var read []todo
	pkgs := &openPackage{opened: &u.packagesOpened}
	defer pkgs.close()
	for _, f := range files {
		name, err := manifest.UnescapeFile(f)
		if err != nil || u.refused[f] {
			continue
		}
		if u.logNames[f] {
			continue // the log names it: check judged it
		}
		path, member, ok := resolveFileOrMember(loc, f, name)
		if !ok {
			continue
		}
		s, ok := stampOf(pkgs, path, member)
		if ok && (stamps[name] == s || checked[name] == s || hashed[name] == s) {
			checked[name] = s
			continue
		}
		delete(checked, name) // until read again and found clean
		read = append(read, todo{name, path, member, s})
	}
	pkgs.close()
	if len(read) == 0 {
		return nil
	}
	show := u.show.Start("unlogged", "files", int64(len(read)))
	found := make([]string, len(read))
	clean := make([]bool, len(read))
	next := make(chan int)
	var wg sync.WaitGroup
	for range u.jobs() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				n, first, err := countWrittenRevisitsOf(read[i].path, read[i].member, read[i].name)
				if n > 0 {
					found[i] = fmt.Sprintf("%s: not restored: %d revisits in the form this toolchain writes (the first at offset %d) that the rewrite log does not name: a run it does not record wrote them (is the work directory a copy older than the last run, or another collection's?); warcdedup undo --all makes them whole records", read[i].name, n, first)
				} else if err != nil {
					u.show.Note("warcdedup: warning: %s: looking for revisits the log does not name: %v", read[i].name, err)
				} else {
					clean[i] = true
				}
				show.Add(1)
			}
		}()
	}
	for i := range read {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var out []string
	for i, f := range found {
		if clean[i] && read[i].stamp != "" {
			checked[read[i].name] = read[i].stamp
		}
		if f != "" {
			out = append(out, f)
			u.show.Print("warcdedup: error: %s", f)
		}
	}
	show.Done(fmt.Sprintf("%d files read, %d with revisits the log does not name", len(read), len(out)))
	return out
}

// resolveFileOrMember is where the file named field (name unescaped) is:
// its path, or for a WACZ member its package's path and its name in the
// package (whose member names no file).
func resolveFileOrMember(loc *source.Locator, field, name string) (path, member string, ok bool) {
	if pkg, m, isMember := wacz.SplitName(name); isMember {
		local, err := loc.Resolve(manifest.EscapeFile(pkg))
		return local.Path(), m, err == nil
	}
	local, err := loc.Resolve(field)
	return local.Path(), "", err == nil
}

// stampOf is the stamp of the file at path, or of its WACZ member named
// member (its package read through pkgs), as the job's state records
// them.
func stampOf(pkgs *openPackage, path, member string) (string, bool) {
	if member == "" {
		return dedup.FileStamp(path)
	}
	p, err := pkgs.at(path)
	if err != nil {
		return "", false
	}
	m := p.Member(member)
	if m == nil {
		return "", false
	}
	return dedup.MemberStamp(m), true
}

// countWrittenRevisits counts the revisits in the form this toolchain
// writes in the file at path, and the offset of the first. A damaged file
// is read as far as it can be; its error is returned with what was found.
func countWrittenRevisits(path, name string) (n int, first int64, err error) {
	return countWrittenRevisitsOf(path, "", name)
}

// countWrittenRevisitsOf is countWrittenRevisits of the file at path, or
// of its WACZ member named member if not "".
func countWrittenRevisitsOf(path, member, name string) (n int, first int64, err error) {
	var r io.Reader
	if member == "" {
		f, err := os.Open(path)
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		r = f
	} else {
		p, err := wacz.Open(path)
		if err != nil {
			return 0, 0, err
		}
		defer p.Close()
		m := p.Member(member)
		if m == nil {
			return 0, 0, fmt.Errorf("%s: no member %s", path, member)
		}
		if r, err = p.Section(m); err != nil {
			return 0, 0, err
		}
	}
	rd, err := record.NewReader(r, name)
	if err != nil {
		return 0, 0, err
	}
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return n, first, nil
		}
		if err != nil {
			return n, first, err
		}
		if rec.Type == "revisit" && refs.InWrittenForm(rec.Header) {
			if n == 0 {
				first = rec.Offset
			}
			n++
		}
	}
}
