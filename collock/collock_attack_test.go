package collock

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNetworkFSLocksLocally proves that the file systems whose flock is,
// by default, the client host's alone take the lock file, those named in
// the package comment, AFS through the kernel's own client (kAFS) too,
// whose magic number is another than OpenAFS's.
func TestNetworkFSLocksLocally(t *testing.T) {
	cases := []struct {
		name  string
		magic int64
		want  bool
	}{
		{"NFS", 0x6969, true},
		{"CIFS", 0xff534d42, true},
		{"FUSE", 0x65735546, true},
		{"OpenAFS", 0x5346414f, true},
		{"kAFS", 0x6b414653, true},
		{"ext4", 0xef53, false},
		{"tmpfs", 0x01021994, false},
		{"XFS", 0x58465342, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := networkFS(c.magic); got != c.want {
				t.Errorf("networkFS(%#x) = %v, want %v", c.magic, got, c.want)
			}
		})
	}
}

// TestLockFileNotALockFile proves that a LockFile name that gives another
// file (a hard link to one of the directory's archives, a symbolic link)
// is refused, the file it gives left as it was: taking it for a lock
// truncated the file to the holder's line.
func TestLockFileNotALockFile(t *testing.T) {
	cases := []struct {
		name string
		make func(lockName, data string) error
	}{
		{"a hard link to an archive", func(lockName, data string) error { return os.Link(data, lockName) }},
		{"a symbolic link to an archive", func(lockName, data string) error { return os.Symlink(filepath.Base(data), lockName) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			id, err := idOf(dir)
			if err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, "a.warc")
			content := []byte("WARC/1.1\r\nWARC-Type: warcinfo\r\n\r\n")
			if err := os.WriteFile(data, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := c.make(filepath.Join(dir, LockFile), data); err != nil {
				t.Fatal(err)
			}
			l, err := lockFile(dir, id)
			if err == nil {
				l.release()
				t.Errorf("locked through %s", c.name)
			}
			if got, _ := os.ReadFile(data); string(got) != string(content) {
				t.Errorf("a.warc now holds %q, want it as it was", got)
			}
		})
	}
}
