package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// urfave/cli v2 reads a command's flags only between its name and its
// first operand or subcommand, and only the flags that command defines.
// Users write flags anywhere: "warcsum -r DIR -o FILE", "warcdedup index
// --index DIR stats", "warcdedup run coll --dry-run". reorder puts each
// flag where urfave/cli reads it: behind the command word that defines it.

// level is one command of a command line: the app, a command of it, a
// subcommand of that.
type level struct {
	flags    []cli.Flag
	commands []*cli.Command
	// takes says, by flag name, whether the flag takes a value.
	takes map[string]bool
}

func newLevel(flags []cli.Flag, commands []*cli.Command, version bool) *level {
	l := &level{flags: flags, commands: commands, takes: valueFlags(flags)}
	// urfave/cli gives every command --help and the app --version.
	l.takes["help"], l.takes["h"] = false, false
	if version {
		l.takes["version"] = false
	}
	return l
}

// defines says whether the flag argument a (-x, --name, --name=value, a
// bundle -qo) is one of the level's, and whether it is followed by its
// value (-o FILE, --output FILE, not --output=FILE; a bundle whose last
// letter takes one: -qo FILE is -q -o FILE, as urfave/cli reads it with
// short option handling).
func (l *level) defines(a string) (ok, takesNext bool) {
	name := strings.TrimLeft(a, "-")
	name, _, joined := strings.Cut(name, "=")
	if name == "" {
		return false, false
	}
	if v, known := l.takes[name]; known {
		return true, v && !joined
	}
	if strings.HasPrefix(a, "--") || joined {
		return false, false
	}
	// A bundle of one-letter flags: each must be known.
	for _, r := range name {
		if _, known := l.takes[string(r)]; !known {
			return false, false
		}
	}
	return true, l.takes[name[len(name)-1:]]
}

func (l *level) command(word string) *cli.Command {
	for _, c := range l.commands {
		if c.HasName(word) {
			return c
		}
	}
	return nil
}

// below returns the levels of every command under l, depth first.
func (l *level) below() []*level {
	var out []*level
	for _, c := range l.commands {
		sub := newLevel(c.Flags, c.Subcommands, false)
		out = append(out, sub)
		out = append(out, sub.below()...)
	}
	return out
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// reorder is the app's command line with every flag behind the command
// word that defines it: the app's own flags after the app's name, a
// command's after the command's name (from before it, "warcdedup index
// --index DIR stats", or after its operands, "warcdedup run coll
// --dry-run"), each flag's value with it. A flag no command on the line
// defines stays at the level it was given at, whose usage error names it.
// "-" and everything after "--" are operands.
func reorder(app *cli.App, args []string) []string {
	if len(args) == 0 {
		return args
	}
	levels := []*level{newLevel(app.Flags, app.Commands, !app.HideVersion)}
	// The command words, found as urfave/cli finds them: the first word
	// that is no flag or flag value names a command of the level, or is
	// the first operand.
	var words []int
	// unknown: the line names a command the level has not.
	unknown := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		cur := levels[len(levels)-1]
		if isFlag(a) {
			if _, next := flagAt(a, cur, append(cur.below(), reversed(levels[:len(levels)-1])...)); next {
				i++
			}
			continue
		}
		c := cur.command(a)
		if c == nil {
			unknown = len(cur.commands) > 0
			break
		}
		words = append(words, i)
		levels = append(levels, newLevel(c.Flags, c.Subcommands, false))
	}
	at := make([][]string, len(levels))
	var operands, stray []string
	k := 0 // the level of the words read so far
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case k < len(words) && i == words[k]:
			k++
		case a == "--":
			operands = append(operands, args[i:]...)
			i = len(args)
		case isFlag(a):
			// The level it was given at, else the nearest below it,
			// else above it.
			order := append([]*level{levels[k]}, levels[k+1:]...)
			order = append(order, reversed(levels[:k])...)
			target := -1
			for j, l := range order {
				if ok, _ := l.defines(a); ok {
					target = slices.Index(levels, order[j])
					break
				}
			}
			if target < 0 {
				if ok, next := flagAt(a, levels[len(levels)-1], levels[len(levels)-1].below()); ok && unknown {
					// A flag of a command the line names wrongly
					// ("warcdedup index sttas --index DIR"): left among
					// the operands, so that the word is what is reported.
					stray = append(stray, a)
					if next && i+1 < len(args) {
						i++
						stray = append(stray, args[i])
					}
					continue
				}
				target = k
			}
			at[target] = append(at[target], a)
			if _, next := levels[target].defines(a); next && i+1 < len(args) {
				i++
				at[target] = append(at[target], args[i])
			}
		default:
			operands = append(operands, a)
		}
	}
	out := append([]string{args[0]}, at[0]...)
	for j, w := range words {
		out = append(out, args[w])
		out = append(out, at[j+1]...)
	}
	return append(append(out, operands...), stray...)
}

// flagAt says whether a is a flag of cur or, failing that, of one of
// others, and whether its value follows it.
func flagAt(a string, cur *level, others []*level) (ok, takesNext bool) {
	if ok, next := cur.defines(a); ok {
		return true, next
	}
	for _, l := range others {
		if ok, next := l.defines(a); ok {
			return true, next
		}
	}
	return false, false
}

func reversed(ls []*level) []*level {
	out := slices.Clone(ls)
	slices.Reverse(out)
	return out
}

// valueFlags says, by name, which of flags take a value.
func valueFlags(flags []cli.Flag) map[string]bool {
	takesValue := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, name := range f.Names() {
			takesValue[name] = !isBool
		}
	}
	return takesValue
}

// didYouMean returns " (did you mean --dry-run?)" for a flag name close
// to one of flags' (--dryrun, --dry, --dyr-run), or "".
func didYouMean(typed string, flags []cli.Flag) string {
	var names []string
	for _, f := range flags {
		if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		names = append(names, f.Names()...)
	}
	names = append(names, "help")
	var dashed []string
	for _, n := range closest(typed, names) {
		if len(n) == 1 {
			dashed = append(dashed, "-"+n)
		} else {
			dashed = append(dashed, "--"+n)
		}
	}
	if len(dashed) == 0 {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", strings.Join(dashed, " or "))
}

// closest returns the candidates nearest to typed (at most two): equal
// but for dashes, underscores and case, within an edit distance of a
// third of its length (one or two typing slips), or begun by it (three
// letters or more).
func closest(typed string, candidates []string) []string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
	}
	t := norm(typed)
	if len(t) < 2 {
		return nil
	}
	limit := max(1, min(2, len(t)/3))
	best, found := limit+1, []string(nil)
	for _, c := range candidates {
		if len(c) < 2 || slices.Contains(found, c) {
			continue
		}
		n := norm(c)
		d := editDistance(t, n)
		if len(t) >= 3 && strings.HasPrefix(n, t) {
			d = min(d, 1)
		}
		switch {
		case d < best:
			best, found = d, []string{c}
		case d == best && len(found) < 2:
			found = append(found, c)
		}
	}
	if best > limit {
		return nil
	}
	return found
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
