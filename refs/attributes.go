package refs

import (
	"fmt"
	"os"
	"syscall"
)

// keepAttributes gives the new version of a file what the old one had
// besides its bytes: owner and group (a rewrite run as root must not hand
// an archive's files to root), permission bits with setuid, setgid and
// sticky, and extended attributes (ACLs and SELinux labels among them). The
// modification time is not kept: the content changed, and tools that copy
// by size and time (rsync) must see it.
func keepAttributes(dst, src *os.File, info os.FileInfo) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		now, err := dst.Stat()
		if err != nil {
			return err
		}
		if cur, ok := now.Sys().(*syscall.Stat_t); !ok || cur.Uid != st.Uid || cur.Gid != st.Gid {
			if err := dst.Chown(int(st.Uid), int(st.Gid)); err != nil {
				return fmt.Errorf("owner %d, group %d: %w", st.Uid, st.Gid, err)
			}
		}
	}
	mode := info.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
	if err := dst.Chmod(mode); err != nil {
		return fmt.Errorf("mode %v: %w", mode, err)
	}
	return copyXattrs(dst, src)
}
