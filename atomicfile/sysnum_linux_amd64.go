package atomicfile

// sysRenameat2 is renameat2's number (not in package syscall for amd64).
const sysRenameat2 = 316
