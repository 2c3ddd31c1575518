package cluster

import (
	"fmt"
	"strings"

	"warcdedup/stage"
)

// The kinds of steps; a step's name is its kind, and for the steps pinned
// to a host "@" and the host's name.
const (
	kindHash      = "hash"
	kindResolve   = "resolve"
	kindRewrite   = "rewrite"
	kindHashAgain = "rehash"
	// Where each duplicate is compared once (Spec.compareOnce).
	kindCollide           = "collide"
	kindRewriteCollisions = "recollide"
	kindVerify            = "verify"
	kindAccount           = "account"
)

// Step is one Slurm job of a plan: a single task, or an array of Tasks
// tasks (the hash ranges), run once every task of the steps it depends on
// has succeeded.
type Step struct {
	Name  string   // "hash@store1", "resolve", ...
	Kind  string   // kindHash, ...
	Stage string   // stage.HashName, ...
	Host  int      // index of the host it is pinned to, -1 for any node
	Tasks int      // 1, or the array's size
	Deps  []string // names of the steps it waits for
	// IfApart marks the collisions steps (collide, recollide@HOST): they
	// have work only when a rewrite kept a duplicate apart, which is
	// known once every rewrite is done. Until then the monitor submits
	// neither them nor the steps after them; then it submits them, or
	// records them as not needed without Slurm (monitor.decideCollisions),
	// so that a job whose rewrites kept nothing apart pays no Slurm
	// scheduling for them.
	IfApart bool
}

// Array reports whether the step is submitted as a job array.
func (s *Step) Array() bool { return s.Kind == kindResolve }

// Plan is a job's steps in an order that respects their dependencies.
type Plan struct {
	Steps  []Step
	byName map[string]int
}

// NewPlan returns the steps of a job, numbered by the stages they run
// (see package stage):
//
//   - 1: hash@HOST, pinned to each host: warcsum over its root, the
//     manifest sorted on digest and cut into the hash ranges;
//   - 2 and 3: resolve, an array of one task per hash range on any node:
//     the hosts' parts of the range merged (sort -m), numbered from the
//     manifests alone (or, with --compare-in-resolve, a crawl index or a
//     dry run, resolved byte for byte reading records over HTTP), and
//     split by host;
//   - 4: rewrite@HOST, pinned: warcrefs in place over the host's lines,
//     each duplicate compared with its original;
//   - where each duplicate is compared once (Spec.compareOnce), and only
//     when the rewrites kept a duplicate apart (Step.IfApart): collide,
//     once, the digests of the duplicates the rewrites kept apart
//     resolved byte for byte over HTTP, then recollide@HOST, pinned: what
//     the new numbering allows rewritten;
//   - 5: rehash@HOST, pinned: warcsum again (of the files replaced, only
//     the revisits written are read), then verify: nothing was lost, over
//     the whole collection;
//   - account: the merged manifests, fixity list, report and figures.
//
// A dry run has no rehash and no verify, and its rewrite writes nothing.
func NewPlan(spec *Spec) *Plan {
	p := &Plan{byName: map[string]int{}}
	var hashes, rewrites, afters []string
	for i, h := range spec.Hosts {
		hashes = append(hashes, p.add(Step{Name: kindHash + "@" + h.Name, Kind: kindHash, Stage: stage.HashName, Host: i, Tasks: 1}))
	}
	resolve := p.add(Step{Name: kindResolve, Kind: kindResolve, Stage: stage.ResolveName, Host: -1, Tasks: spec.Ranges, Deps: hashes})
	for i, h := range spec.Hosts {
		rewrites = append(rewrites, p.add(Step{Name: kindRewrite + "@" + h.Name, Kind: kindRewrite, Stage: stage.RewriteName, Host: i, Tasks: 1,
			Deps: []string{resolve}}))
	}
	last := rewrites
	if spec.compareOnce() {
		collide := p.add(Step{Name: kindCollide, Kind: kindCollide, Stage: stage.CollideName, Host: -1, Tasks: 1, Deps: rewrites, IfApart: true})
		rewrites = nil
		for i, h := range spec.Hosts {
			rewrites = append(rewrites, p.add(Step{Name: kindRewriteCollisions + "@" + h.Name, Kind: kindRewriteCollisions, Stage: stage.RewriteCollisionName,
				Host: i, Tasks: 1, Deps: []string{collide}, IfApart: true}))
		}
		last = rewrites
	}
	if !spec.DryRun {
		for i, h := range spec.Hosts {
			afters = append(afters, p.add(Step{Name: kindHashAgain + "@" + h.Name, Kind: kindHashAgain, Stage: stage.HashAgainName, Host: i, Tasks: 1,
				Deps: []string{rewrites[i]}}))
		}
		last = []string{p.add(Step{Name: kindVerify, Kind: kindVerify, Stage: stage.VerifyName, Host: -1, Tasks: 1, Deps: afters})}
	}
	p.add(Step{Name: kindAccount, Kind: kindAccount, Stage: stage.AccountName, Host: -1, Tasks: 1, Deps: last})
	return p
}

func (p *Plan) add(s Step) string {
	p.byName[s.Name] = len(p.Steps)
	p.Steps = append(p.Steps, s)
	return s.Name
}

// Step returns the step of that name, or nil.
func (p *Plan) Step(name string) *Step {
	i, ok := p.byName[name]
	if !ok {
		return nil
	}
	return &p.Steps[i]
}

// Stages lists the stages of the plan in order.
func (p *Plan) Stages() []string {
	var stages []string
	for _, s := range p.Steps {
		if len(stages) == 0 || stages[len(stages)-1] != s.Stage {
			stages = append(stages, s.Stage)
		}
	}
	return stages
}

// Dependents lists the steps that wait for step name.
func (p *Plan) Dependents(name string) []string {
	var out []string
	for _, s := range p.Steps {
		for _, d := range s.Deps {
			if d == name {
				out = append(out, s.Name)
			}
		}
	}
	return out
}

// String shows the plan, a step a line, for --plan.
func (p *Plan) String() string {
	var b strings.Builder
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "%-24s %-20s", s.Name, s.Stage)
		if s.Array() {
			fmt.Fprintf(&b, " array of %d", s.Tasks)
		}
		if len(s.Deps) > 0 {
			fmt.Fprintf(&b, " after %s", strings.Join(s.Deps, ", "))
		}
		if s.IfApart {
			b.WriteString(", if the rewrites kept duplicates apart")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
