package stage

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"warcdedup/manifest"
	"warcdedup/record"
	"warcdedup/wacz"
)

// A package whose revisits (written by an earlier job) have originals in
// another package must name it in relation.requires: ReplayWeb.page
// loads the packages named there. Earlier versions of this tool lost
// those entries (a package finished by Recover after a kill was written
// with none, and no later job added them back: its revisits made no
// dependency). A run therefore finds, from the numbered manifest, the
// packages whose revisits point at another package they do not name,
// and writes each anew with the entries (its members copied as they
// are), as it does a package it rewrites.
//
// Where the truth comes from: the numbered manifest lists every revisit
// with the URI and date of its original (fields 9 and 10), and the
// original's kept line, in the same digest, has them as fields 4 and 5:
// a streaming pass that the job makes anyway, holding one digest's
// revisits and one entry per pair of packages, never a map of the
// collection's records. It cannot tell the revisits this tool wrote from
// a crawler's own (Browsertrix writes revisits across the WACZ files of
// a crawl without requiring them): before a package is written anew for
// a missing entry, one of its revisits pointing there is read, and must
// name the package in WARC-Refers-To-Container, which this tool writes
// on every revisit whose original is in another package (Container).
// The rewrite log would need every job's log, and names the members'
// versions, not the packages their revisits point at.

// revisitOrigins pairs the revisits of the collection's packages with
// the packages holding their originals, digest by digest, and makes each
// package require those its revisits point at with
// WARC-Refers-To-Container while it does not name them
// (PackageRewrite.needs).
type revisitOrigins struct {
	pr  *PackageRewrite
	ctx context.Context
	// waiting are this digest's revisits, by the URI and date of their
	// original, one per package (revisit lines sort before the digest's
	// responses).
	waiting map[[2]string]map[string]revisitAt
	// settled are the pairs requirer, required package known to need
	// nothing more: named already, or found missing (pr.missing).
	settled map[[2]string]bool
	// named are the file names each requirer's relation.requires names.
	named  map[string]map[string]bool
	opener *PackageOpener
	rec    *record.Reader
	// unchecked counts the revisit lines not held because their digest's
	// revisits already wait for maxWaitingOrigins originals: a payload
	// served at a million URLs (a tracking pixel) would otherwise hold
	// one entry per URL (about 750 B each). Their packages keep the
	// entries they have; the run says how many went unchecked.
	unchecked int64
}

// maxWaitingOrigins bounds the originals (URI and date) one digest's
// revisits wait for: about 3 MB.
const maxWaitingOrigins = 4096

// revisitAt is a revisit line of a package's member.
type revisitAt struct {
	path, field    string // the package's path; manifest field 1
	offset, length int64
}

func (pr *PackageRewrite) newRevisitOrigins(ctx context.Context) *revisitOrigins {
	return &revisitOrigins{pr: pr, ctx: ctx, waiting: map[[2]string]map[string]revisitAt{}, settled: map[[2]string]bool{},
		named: map[string]map[string]bool{}, opener: &PackageOpener{Members: pr.Members}}
}

// revisit notes a revisit line of the member m.
func (o *revisitOrigins) revisit(l *manifest.Line, m PackageMember) {
	key := [2]string{l.RefURI, l.RefDate}
	byPkg := o.waiting[key]
	if byPkg == nil && len(o.waiting) >= maxWaitingOrigins {
		o.unchecked++
		return
	}
	if byPkg == nil {
		byPkg = map[string]revisitAt{}
		o.waiting[key] = byPkg
	}
	if _, ok := byPkg[m.Package]; !ok {
		byPkg[m.Package] = revisitAt{path: m.Path, field: l.File, offset: l.Offset, length: l.Length}
	}
}

// kept takes a kept line (an original) of the package pkg at path: each
// revisit waiting for its URI and date, in a package that does not
// require pkg yet, is read for its WARC-Refers-To-Container (one read
// of a record's header, until one names pkg).
func (o *revisitOrigins) kept(l *manifest.Line, pkg, path string) error {
	for _, requirer := range slices.Sorted(maps.Keys(o.waiting[[2]string{l.URI, l.Date}])) {
		at := o.waiting[[2]string{l.URI, l.Date}][requirer]
		k := [2]string{requirer, pkg}
		if requirer == pkg || o.settled[k] {
			continue
		}
		if err := o.ctx.Err(); err != nil {
			return err
		}
		done, err := o.check(k, at, path)
		if err != nil {
			return err
		}
		o.settled[k] = done
	}
	return nil
}

// check reports whether the requirer of k needs nothing more for the
// package k[1] at requiredPath, given its revisit at pointing there:
// named already, or named in that revisit's WARC-Refers-To-Container
// (then noted missing).
func (o *revisitOrigins) check(k [2]string, at revisitAt, requiredPath string) (bool, error) {
	// A dependency this job's duplicates make (pr.deps) is no reason to
	// skip it: a duplicate left a response makes one, and its package
	// is written anew only if one of its members is.
	pr := o.pr
	names, ok := o.named[k[0]]
	if !ok {
		var err error
		if names, err = requiredNames(at.path); err != nil {
			return false, fmt.Errorf("%s: %w", at.path, err)
		}
		o.named[k[0]] = names
	}
	base := filepath.Base(requiredPath)
	if names[base] {
		return true, nil // named (RefreshRequirers keeps its hash up to date)
	}
	container, err := o.refersToContainer(at)
	if err != nil || container != base {
		return false, err
	}
	pr.deps[k] = true
	pr.paths[k[0]] = at.path
	if _, external := pr.externals[k[1]]; !external {
		// Never an external package: RefreshRequirers writes anew the
		// packages of pr.paths, and a committed crawl's stays as it is.
		pr.paths[k[1]] = requiredPath
	}
	if pr.missing == nil {
		pr.missing = map[string]bool{}
	}
	pr.missing[k[0]] = true
	return true, nil
}

// endDigest forgets the digest's revisits.
func (o *revisitOrigins) endDigest() { clear(o.waiting) }

// requiredNames are the file names the package at path names in
// relation.requires.
func requiredNames(path string) (map[string]bool, error) {
	p, err := wacz.Open(path)
	if err != nil {
		return nil, err
	}
	reqs, err := p.Datapackage.Requires()
	p.Close()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, r := range reqs {
		names[r.Filename] = true
	}
	return names, nil
}

// refersToContainer is the package (file name) the revisit at names in
// WARC-Refers-To-Container, "" for none.
func (o *revisitOrigins) refersToContainer(at revisitAt) (string, error) {
	name, _ := manifest.UnescapeFile(at.field)
	offset, opener := at.offset, o.opener
	if o.pr.Moves != nil {
		var err error
		if offset, err = o.pr.Moves.Move(name, at.offset); err != nil {
			return "", fmt.Errorf("%s: offset %d: the revisit the manifest lists, followed through the rewrite log: %w", name, at.offset, err)
		}
		// The member's logged version is at its staged name while its
		// package was left as it was (Finish refused it): read there.
		if m, ok := o.pr.Members[name]; ok {
			opener = &PackageOpener{Next: o.opener, Members: o.pr.Members, Staged: map[string]string{name: filepath.Join(filepath.Dir(m.Path), stageName(m))}, InPlace: true}
		}
	}
	rc, err := opener.Open(o.ctx, at.field, offset, at.length)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	if o.rec, err = record.Reuse(o.rec, rc, name); err != nil {
		return "", err
	}
	o.rec.SetBase(offset)
	r, err := o.rec.Next()
	if err != nil {
		return "", fmt.Errorf("%s: offset %d: the revisit the manifest lists: %w", name, at.offset, err)
	}
	c, _ := wacz.ParseContainerURI(r.Header.Get("WARC-Refers-To-Container"))
	return c, nil
}
