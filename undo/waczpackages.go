package undo

import "warcdedup/wacz"

// openPackage keeps the WACZ package read last open while the members
// named, in byte order (so a package's one after another), are read from
// their packages: one open of each package, where one per member parsed
// its directory and datapackage.json (which lists every member) once per
// member, a package of M members costing M*M (1,200 members: 8 s where
// the undo had taken 0.06 s). Close it before anything may write the
// packages anew.
type openPackage struct {
	path string
	pkg  *wacz.Package
	err  error
	// opened counts the packages opened (u.packagesOpened).
	opened *int
}

// at is the package at path, opened unless it is the one open.
func (o *openPackage) at(path string) (*wacz.Package, error) {
	if o.path == path && (o.pkg != nil || o.err != nil) {
		return o.pkg, o.err
	}
	o.close()
	o.path = path
	o.pkg, o.err = wacz.Open(path)
	if o.opened != nil {
		*o.opened++
	}
	return o.pkg, o.err
}

// close closes the package open, if any.
func (o *openPackage) close() {
	if o.pkg != nil {
		o.pkg.Close()
	}
	o.path, o.pkg, o.err = "", nil, nil
}
