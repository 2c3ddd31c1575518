// Package ctime gives a file's change time (ctime) from its stat, whose
// field is named differently on each system: the part of a file's stamp
// (size, times, inode, device) that no user can set back, so that a file
// with the stamp it had is unchanged.
package ctime
