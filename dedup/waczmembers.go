package dedup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// The comparison of packages' WARC members with their datapackage.json
// (see wacz.go): from the SHA-256 the hash stage takes of the bytes it
// reads, a verdict per package version, kept in the work directory.

// memberAt is a WARC member by its package's path and its data's offset.
type memberAt struct {
	path   string
	offset int64
}

// expectedSum is what datapackage.json gives of a WARC member.
type expectedSum struct {
	member string
	size   int64
	sha256 []byte
	hash   string // as written there
}

// pendingPackage is a package listed whose members' SHA-256 the hash
// stage takes: its name and stamp at the listing.
type pendingPackage struct {
	name, stamp string
}

// savedVerdict is a verdict as waczCheckedFile keeps it.
type savedVerdict struct {
	Stamp   string `json:"stamp"`
	Problem string `json:"problem,omitempty"`
}

// load reads the verdicts kept, once; a store unreadable is none (the
// hash stage compares the members again).
func (w *waczPackages) load() {
	if w.store == "" || w.loaded {
		return
	}
	w.loaded = true
	saved, err := workdir.ReadJSON[map[string]savedVerdict](w.store)
	if err != nil {
		return
	}
	for path, v := range saved {
		if _, ok := w.checked[path]; ok || v.Stamp == "" {
			continue
		}
		var err error
		if v.Problem != "" {
			err = errors.New(v.Problem)
		}
		w.checked[path] = waczVerdict{stamp: v.Stamp, err: err, members: true}
	}
}

// save keeps the verdicts of the members' comparison (store).
func (w *waczPackages) save() error {
	if w.store == "" {
		return nil
	}
	saved := map[string]savedVerdict{}
	for path, v := range w.checked {
		if !v.members {
			continue
		}
		sv := savedVerdict{Stamp: v.stamp}
		if v.err != nil {
			sv.Problem = v.err.Error()
		}
		saved[path] = sv
	}
	return workdir.WriteJSON(w.store, saved)
}

// expectSums notes the SHA-256 datapackage.json gives of each WARC member
// of p, for the hash stage to compare.
func (w *waczPackages) expectSums(in warcsum.Input, p *wacz.Package, stamp string) error {
	rs, err := p.Datapackage.Resources()
	if err != nil {
		return err
	}
	byPath := map[string]wacz.Resource{}
	for _, r := range rs {
		byPath[r.Path] = r
	}
	for _, m := range p.WARCs() {
		r, ok := byPath[m.Name]
		if !ok || r.SHA256 == nil {
			return fmt.Errorf("%s: datapackage.json gives no SHA-256 of it", m.Name)
		}
		w.expect[memberAt{in.Path, m.DataOffset}] = expectedSum{member: m.Name, size: m.Size, sha256: r.SHA256, hash: r.Hash}
	}
	w.pending[in.Path] = pendingPackage{name: in.Name, stamp: stamp}
	return nil
}

// wantsSum reports whether the hash stage takes the SHA-256 of the input
// (a WARC member of a package whose members are not compared yet).
func (w *waczPackages) wantsSum(in warcsum.Input) bool {
	_, ok := w.expect[memberAt{in.Path, in.Offset}]
	return ok
}

// compareMembers compares the SHA-256 the hash stage took of each
// member expected (sums, by member; "" where it was not read whole in
// order: read again here) with datapackage.json's, and records the
// verdict on each package pending for the version listed. It returns the
// messages of the packages found not to be what their datapackage.json
// says, which are then left out of the job.
func (w *waczPackages) compareMembers(sums map[memberAt]string) ([]string, error) {
	problems := map[string]error{}
	for at, want := range w.expect {
		if problems[at.path] != nil {
			continue
		}
		got := sums[at]
		if got == "" {
			sum, err := memberSHA256(at, want.size)
			if err != nil {
				problems[at.path] = fmt.Errorf("%s: %w", want.member, err)
				continue
			}
			got = sum
		}
		if !strings.EqualFold(got, hex.EncodeToString(want.sha256)) {
			problems[at.path] = &wacz.Error{Package: w.pending[at.path].name, Member: want.member, Offset: -1,
				Err: fmt.Errorf("%w: SHA-256 %s, datapackage.json says %s", wacz.ErrHash, got, want.hash)}
		}
	}
	var refused []string
	for _, path := range slices.Sorted(maps.Keys(w.pending)) {
		pm := w.pending[path]
		if now, _ := fileStamp(path); now != pm.stamp || now == "" {
			// Changed since it was listed: no verdict for any version;
			// the rewrite refuses it, the next listing takes it anew.
			delete(w.checked, path)
			continue
		}
		err := problems[path]
		w.checked[path] = waczVerdict{stamp: pm.stamp, err: err, members: true}
		if err != nil {
			refused = append(refused, fmt.Sprintf("%s: not read, never rewritten: the package is not what its datapackage.json says: %v", pm.name, err))
		}
	}
	clear(w.expect)
	clear(w.pending)
	return refused, w.save()
}

// memberSHA256 is the hex SHA-256 of size bytes at the member's offset.
func memberSHA256(at memberAt, size int64) (string, error) {
	f, err := os.Open(at.path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.Copy(h, io.NewSectionReader(f, at.offset, size)); err != nil {
		return "", err
	} else if n != size {
		return "", fmt.Errorf("%d bytes of %d: %w", n, size, io.ErrUnexpectedEOF)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hash runs the Hash stage h over the inputs of a listing, the WARC
// members of packages not compared yet read with their SHA-256, which is
// then compared with datapackage.json: a package found otherwise is
// named (show) and left out, the collection listed again (relist) and
// the stage run again, the cache replaying what it read.
func (w *waczPackages) hash(ctx context.Context, show *progress.Display, name string, h stage.Hash, relist func() ([]warcsum.Input, error)) (stage.HashResult, error) {
	var notMembers func(warcsum.Input) bool
	if w != nil && h.OnFile != nil && h.WantSum == nil {
		// Every file's SHA-256 is wanted (a crawl's, for its commit),
		// but a WARC member's only to compare it with datapackage.json:
		// the commit records its package's, and a member's would cost a
		// read of each one the rewrite wrote.
		notMembers = func(in warcsum.Input) bool {
			_, _, member := wacz.SplitName(in.Name)
			return !member || w.wantsSum(in)
		}
		h.WantSum = notMembers
	}
	if w == nil || len(w.expect) == 0 {
		return hash(ctx, show, name, h)
	}
	sums := map[memberAt]string{}
	onFile := h.OnFile
	if onFile == nil {
		h.WantSum = w.wantsSum
	}
	h.OnFile = func(in warcsum.Input, sum string) {
		if w.wantsSum(in) {
			sums[memberAt{in.Path, in.Offset}] = sum
		}
		if onFile != nil {
			onFile(in, sum)
		}
	}
	res, err := hash(ctx, show, name, h)
	if err != nil {
		return res, err
	}
	refused, err := w.compareMembers(sums)
	if err != nil || len(refused) == 0 {
		return res, err
	}
	for _, m := range refused {
		show.Print("warcdedup: error: %s", m)
	}
	inputs, err := relist()
	if err != nil {
		return res, err
	}
	h.Inputs, h.OnFile, h.WantSum = inputs, onFile, notMembers
	return hash(ctx, show, name, h)
}

// verified is stage.PackageRewrite.Verified: nil when the package at
// path, as fi describes it, is the version whose members were compared
// with its datapackage.json and found what it says.
func (w *waczPackages) verified(path string, fi os.FileInfo) error {
	v, ok := w.checked[path]
	switch {
	case !ok || !v.members:
		return errors.New("its WARC members were not compared with its datapackage.json by this job's hash stage: run again")
	case v.stamp != crawlindex.Stamp(fi):
		return errors.New("the package changed since the hash stage compared its members with its datapackage.json: run again")
	case v.err != nil:
		return v.err
	}
	return nil
}
