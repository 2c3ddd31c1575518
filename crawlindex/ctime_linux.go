package crawlindex

import "syscall"

// changeTime is the file's change time (ctime), in nanoseconds.
func changeTime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
