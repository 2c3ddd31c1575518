package undo

import (
	"context"
	"fmt"
	"io"

	"warcdedup/fixity"
	"warcdedup/inplace"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/wacz"
)

// checkPackagedMembers is check's part for the WACZ members named that
// this undo did not restore (finishWACZ checked those, from their staged
// copies): each is read from its package, where it must hold no revisit
// the log wrote and be the log's last version of it, as
// restore.CheckRestored reads a file. Without it, an undo that found
// nothing to restore in a package holding its deduplicated members (put
// back from a copy, or left so by a job that lost the staged versions the
// log names) read nothing and exited 0 with their revisits there, where
// a WARC file in that state is named, exit status 1.
func (u *undo) checkPackagedMembers(ctx context.Context, files []string) error {
	b, err := u.after.Open()
	if err != nil {
		return err
	}
	defer b.Close()
	loc := u.coll.Locator()
	pkgs := &openPackage{opened: &u.packagesOpened}
	defer pkgs.close()
	for _, field := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		name, err := manifest.UnescapeFile(field)
		if err != nil {
			return err
		}
		pkg, member, ok := wacz.SplitName(name)
		if !ok || u.memberChecked[field] || u.refused[field] {
			continue
		}
		moves, err := b.For(field, nil)
		if err != nil {
			return err
		}
		if err := u.checkPackagedMember(moves, name, func() (*wacz.Package, error) {
			local, err := loc.Resolve(manifest.EscapeFile(pkg))
			if err != nil {
				return nil, err
			}
			return pkgs.at(local.Path())
		}, member); err != nil {
			u.res.Unrestored = append(u.res.Unrestored, fmt.Sprintf("%s: %v", name, err))
			u.show.Print("warcdedup: error: %s: %v", name, err)
		}
	}
	return nil
}

// checkPackagedMember checks the member (its name in the collection and
// in its package) of the package open gives (it stays open).
func (u *undo) checkPackagedMember(moves *rewritelog.Moves, name string, open func() (*wacz.Package, error), member string) error {
	fx, versioned, err := loggedVersion(moves, name)
	if err != nil || !versioned {
		return err
	}
	p, err := open()
	if err != nil {
		return err
	}
	m := p.Member(member)
	if m == nil {
		return fmt.Errorf("%w (%d bytes, %s): its package has no such member", inplace.ErrNotLogged, fx.NewSize, fx.NewSum)
	}
	sec, err := p.Section(m)
	if err != nil {
		return err
	}
	h := fixity.New(fixity.Like(fx.NewSum)...)
	if _, err := io.Copy(h, sec); err != nil {
		return err
	}
	u.res.Checked++
	u.res.CheckedBytes += h.Size()
	if h.Size() != fx.NewSize || !h.Matches(fx.NewSum) {
		return fmt.Errorf("%w (%d bytes, %s): it has %d bytes, %s", inplace.ErrNotLogged, fx.NewSize, fx.NewSum, h.Size(), h.Like(fx.NewSum))
	}
	return nil
}
