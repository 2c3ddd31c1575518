package cluster

import (
	"slices"
	"testing"
)

// TestParseSqueue proves how squeue's lines (squeueFormat, as Slurm 22.05
// prints them) are read: the task's ID, its state without a suffix, the
// exit status and signal out of the wait status, the restarts.
func TestParseSqueue(t *testing.T) {
	text := "1_0|COMPLETED|None|store1|0|0|\n" +
		"1_1|FAILED|NonZeroExitCode|store1|768|0|\n" +
		"1_2|PENDING|BeginTime||768|1|\n" +
		"2|PENDING|DependencyNeverSatisfied||0|0|\n" +
		"3|CANCELLED by 0|None|store2|15|0|\n"
	got, err := parseSqueue(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]JobState{
		"1_0": {ID: "1_0", State: "COMPLETED", Reason: "None", Node: "store1"},
		"1_1": {ID: "1_1", State: "FAILED", Reason: "NonZeroExitCode", Node: "store1", Exit: 3},
		"1_2": {ID: "1_2", State: "PENDING", Reason: "BeginTime", Exit: 3, Restarts: 1},
		"2":   {ID: "2", State: "PENDING", Reason: "DependencyNeverSatisfied"},
		"3":   {ID: "3", State: "CANCELLED", Reason: "None", Node: "store2", Signal: 15},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %+v, want %+v", id, got[id], w)
		}
	}
	if _, err := parseSqueue("1_0 COMPLETED\n"); err == nil {
		t.Error("a line of another format was read")
	}
}

// TestSubmissionArgs proves sbatch's arguments: pinned to a node, an
// array of some tasks, the dependency, output appended across requeues,
// requeueable, and the user's options before the script.
func TestSubmissionArgs(t *testing.T) {
	s := &Submission{Name: "wd-x-resolve", Script: "/w/slurm/resolve.sh", Chdir: "/w", Output: "/w/slurm/resolve-%A_%a.out",
		Node: "store2", Array: []int{1, 3}, Dependency: "afterok:5:6_0", Extra: []string{"--partition=storage"}}
	want := []string{"--parsable", "--job-name=wd-x-resolve", "--chdir=/w", "--output=/w/slurm/resolve-%A_%a.out",
		"--open-mode=append", "--requeue", "--kill-on-invalid-dep=no", "--nodelist=store2", "--array=1,3",
		"--dependency=afterok:5:6_0", "--partition=storage", "/w/slurm/resolve.sh"}
	if got := s.Args(); !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
