package syssort

import (
	"os/exec"
	"strings"
	"testing"
)

// TestShareEverySpellingSortTakes: each spelling of a buffer size that GNU
// sort takes (lower-case k, m, g, t; P and E; a sign or blanks before the
// number) is shared too, where Share left it whole and two sorts at once
// each took all of --sort-memory, twice what the operator allowed.
func TestShareEverySpellingSortTakes(t *testing.T) {
	for _, c := range []struct {
		name, memory, want string
	}{
		{"lower-case k is KiB", "1000k", "512000b"},
		{"lower-case m is MiB", "500m", "262144000b"},
		{"lower-case g is GiB", "1g", "536870912b"},
		{"lower-case t is TiB", "1t", "549755813888b"},
		{"P is PiB", "1P", "562949953421312b"},
		{"E is EiB", "1E", "576460752303423488b"},
		{"a plus sign", "+1G", "536870912b"},
		{"blanks before the number", " 1G", "536870912b"},
		{"a leading zero is decimal", "010", "5120b"},
		{"Z is past 64 bits: left for sort to name", "1Z", "1Z"},
		{"lower-case e is no suffix: left for sort to name", "1e", "1e"},
		{"a minus sign: left for sort to name", "-1G", "-1G"},
		{"a decimal point: left for sort to name", "1.5G", "1.5G"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := (Sorter{Memory: c.memory}).Share(2).Memory; got != c.want {
				t.Errorf("Share(2) of %q: %q, want %q", c.memory, got, c.want)
			}
		})
	}
}

// TestShareSortTakesWhatItTook: where this machine's sort takes a buffer
// size, it takes the share of it too, and where it refuses one, Share
// leaves it for sort to name.
func TestShareSortTakesWhatItTook(t *testing.T) {
	if _, err := exec.LookPath("sort"); err != nil {
		t.Skip("no sort")
	}
	takes := func(mem string) bool {
		cmd := exec.Command("sort", "-S", mem)
		cmd.Stdin = strings.NewReader("b\na\n")
		return cmd.Run() == nil
	}
	for _, mem := range []string{"1", "0", "1b", "1k", "1K", "1m", "1M", "1g", "1G", "1t", "1T", "1P", "1E", "1Z",
		"+1G", " 1G", "010", "50%", "1%", "0%", "1.5G", "1KiB", "1e", "-1", "16777215T", "16777216T", "18014398509481983"} {
		shared := (Sorter{Memory: mem}).Share(2).Memory
		took := takes(mem)
		if took && !takes(shared) {
			t.Errorf("sort takes -S %q but not its share %q", mem, shared)
		}
		if !took && shared != mem {
			t.Errorf("sort refuses -S %q, Share made it %q", mem, shared)
		}
	}
}
