package xinuse

// cpuid and xgetbv1 are in xinuse_amd64.s.
func cpuid(eax, ecx uint32) (a, b, c, d uint32)
func xgetbv1() uint32

// The XSAVE state components whose bit in XINUSE says the upper halves
// of YMM0-15 (AVX) or ZMM0-15 (ZMM_Hi256) are in use.
const (
	stateAVX      = 1 << 2
	stateZMMHi256 = 1 << 6
)

func upperDirty() (bool, bool) {
	_, _, c, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if c&osxsave == 0 || c&avx == 0 {
		return false, false
	}
	if max, _, _, _ := cpuid(0, 0); max < 0xD {
		return false, false
	}
	// CPUID.(EAX=0DH,ECX=1):EAX bit 2: XGETBV with ECX=1 (XINUSE).
	if a, _, _, _ := cpuid(0xD, 1); a&(1<<2) == 0 {
		return false, false
	}
	return xgetbv1()&(stateAVX|stateZMMHi256) != 0, true
}
