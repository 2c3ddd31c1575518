//go:build !amd64

package xinuse

func upperDirty() (bool, bool) { return false, false }
