package collock

import "testing"

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
