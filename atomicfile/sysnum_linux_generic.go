//go:build linux && (arm64 || riscv64 || loong64)

package atomicfile

// sysRenameat2 is renameat2's number in the generic table of these
// architectures.
const sysRenameat2 = 276
