package ctime

import "syscall"

// Of is the file's change time, in nanoseconds.
func Of(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
