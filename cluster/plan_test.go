package cluster

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"warcdedup/stage"
)

// TestPlan proves the steps of a job and what each waits for, for a real
// run (each duplicate compared once, or with the comparing resolve) and a
// dry run: hash on every host, the resolve array after them all, each
// host's rewrite after the whole array; comparing once, the collisions
// task after every rewrite and each host's rewrite of the collisions
// after it; each host's hash again after its own last rewrite, verify
// after every hash again, the account last.
func TestPlan(t *testing.T) {
	hosts := []Host{{Name: "a"}, {Name: "b"}}
	tests := []struct {
		dryRun, compareInResolve bool
		want                     []string // "name kind host tasks <- deps"
	}{
		{false, false, []string{
			"hash@a 0 1 <- ", "hash@b 1 1 <- ",
			"resolve -1 5 <- hash@a,hash@b",
			"rewrite@a 0 1 <- resolve", "rewrite@b 1 1 <- resolve",
			"collide -1 1 <- rewrite@a,rewrite@b",
			"recollide@a 0 1 <- collide", "recollide@b 1 1 <- collide",
			"rehash@a 0 1 <- recollide@a", "rehash@b 1 1 <- recollide@b",
			"verify -1 1 <- rehash@a,rehash@b",
			"account -1 1 <- verify",
		}},
		{false, true, []string{
			"hash@a 0 1 <- ", "hash@b 1 1 <- ",
			"resolve -1 5 <- hash@a,hash@b",
			"rewrite@a 0 1 <- resolve", "rewrite@b 1 1 <- resolve",
			"rehash@a 0 1 <- rewrite@a", "rehash@b 1 1 <- rewrite@b",
			"verify -1 1 <- rehash@a,rehash@b",
			"account -1 1 <- verify",
		}},
		{true, false, []string{
			"hash@a 0 1 <- ", "hash@b 1 1 <- ",
			"resolve -1 5 <- hash@a,hash@b",
			"rewrite@a 0 1 <- resolve", "rewrite@b 1 1 <- resolve",
			"account -1 1 <- rewrite@a,rewrite@b",
		}},
	}
	for _, tt := range tests {
		p := NewPlan(&Spec{Params: Params{Hosts: hosts, Ranges: 5, DryRun: tt.dryRun, CompareInResolve: tt.compareInResolve}})
		var got []string
		for _, s := range p.Steps {
			got = append(got, s.Name+" "+itoa(s.Host)+" "+itoa(s.Tasks)+" <- "+strings.Join(s.Deps, ","))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("dry run %v, comparing resolve %v:\n got %q\nwant %q", tt.dryRun, tt.compareInResolve, got, tt.want)
		}
		for i, s := range p.Steps {
			for _, d := range s.Deps {
				if j := slices.IndexFunc(p.Steps, func(x Step) bool { return x.Name == d }); j < 0 || j >= i {
					t.Errorf("%s depends on %s, which is not before it", s.Name, d)
				}
			}
		}
	}
	p := NewPlan(&Spec{Params: Params{Hosts: hosts, Ranges: 2}})
	if got := p.Dependents("resolve"); !slices.Equal(got, []string{"rewrite@a", "rewrite@b"}) {
		t.Errorf("dependents of resolve: %q", got)
	}
	if got := p.Stages(); !slices.Equal(got, []string{stage.HashName, stage.ResolveName, stage.RewriteName, stage.CollideName, stage.RewriteCollisionName,
		stage.HashAgainName, stage.VerifyName, stage.AccountName}) {
		t.Errorf("stages %q", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRangeName proves that ranges are named as warcsumsplit --hash-ranges
// names its parts.
func TestRangeName(t *testing.T) {
	for _, tt := range []struct {
		r, n int
		want string
	}{{0, 1, "000"}, {7, 8, "007"}, {999, 1000, "999"}, {12, 1001, "0012"}} {
		if got := rangeName(tt.r, tt.n); got != tt.want {
			t.Errorf("range %d of %d: %s, want %s", tt.r, tt.n, got, tt.want)
		}
	}
}
