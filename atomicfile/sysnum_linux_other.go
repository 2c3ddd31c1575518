//go:build linux && !amd64 && !arm64 && !riscv64 && !loong64

package atomicfile

// sysRenameat2 is not known here: Exchange says ErrExchangeUnsupported
// and the caller renames.
const sysRenameat2 = 0
