package show

import (
	"fmt"
	"io"
	"strings"

	"warcdedup/internal/progress"
)

// WriteText writes what Inspect found for a person: the record's header
// and HTTP head as stored, then what the toolchain knows of it.
func (r *Record) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s offset %d: %s %s record, %s bytes as stored\n", r.File, r.Offset, r.Version, r.Type, progress.Count(r.Length))
	for _, h := range r.Header {
		fmt.Fprintf(b, "  %s: %s\n", h.Name, h.Value)
	}
	if r.HTTPHead != "" {
		b.WriteString("HTTP head:\n")
		for _, l := range strings.Split(strings.TrimRight(r.HTTPHead, "\r\n"), "\n") {
			fmt.Fprintf(b, "  %s\n", strings.TrimRight(l, "\r"))
		}
	}
	if r.Type != "revisit" {
		fmt.Fprintf(b, "payload: %s bytes, %s\n", progress.Count(r.PayloadLength), r.PayloadDigest)
	}
	if r.Job != nil {
		fmt.Fprintf(b, "job: %s, in it as %s", r.Job.WorkDir, r.Job.Name)
		switch {
		case r.Job.Manifest != "":
		case r.Job.Complete:
			b.WriteString(" (complete: its manifests on digest removed, the rewrite log kept)")
		default:
			// Not hashed yet, or undone since: what points at a
			// response is found through the rewrite log all the same.
			b.WriteString(" (no manifest sorted on digest now)")
		}
		b.WriteString("\n")
	}
	if v := r.Revisit; v != nil {
		fmt.Fprintf(b, "revisit: %s\n", orDash(v.Profile))
		fmt.Fprintf(b, "  refers to: %s at %s", orDash(v.RefersToURI), orDash(v.RefersToDate))
		if v.RefersTo != "" {
			fmt.Fprintf(b, " (%s)", v.RefersTo)
		}
		fmt.Fprintf(b, "\n  payload digest: %s\n", orDash(r.PayloadDigest))
		if v.Written != nil {
			fmt.Fprintf(b, "  written by this toolchain: %s line %d (run of %s)\n", v.Written.Log, v.Written.Line, v.Written.Run)
		} else {
			b.WriteString("  written by another tool (no rewrite log entry for it)\n")
		}
		if o := v.Original; o != nil {
			fmt.Fprintf(b, "original: %s offset %d (%s)\n", o.File, o.Offset, o.Found)
			if o.Now != "" {
				fmt.Fprintf(b, "  there now: %s\n", o.Now)
			}
		}
		if v.Resolves {
			b.WriteString("  resolves: yes, a response whose payload hashes to the revisit's digest\n")
		} else {
			fmt.Fprintf(b, "  resolves: no: %s\n", v.Problem)
		}
		if u := v.Undo; u != nil {
			if u.Problem != "" {
				fmt.Fprintf(b, "%s: %s\n", u.Command, u.Problem)
			} else {
				how := "its header by rule from the revisit's"
				if u.Kept {
					how = "its header as the revisit kept it"
				}
				fmt.Fprintf(b, "%s would give back a response of %s bytes (uncompressed): %s, an HTTP head of %s bytes, the original's payload of %s bytes\n",
					u.Command, progress.Count(u.Length), how, progress.Count(u.HTTPHead), progress.Count(u.PayloadLength))
				for _, h := range u.Header {
					if h.Name == "" {
						fmt.Fprintf(b, "  %s\n", h.Value)
					} else {
						fmt.Fprintf(b, "  %s: %s\n", h.Name, h.Value)
					}
				}
			}
		}
	}
	if p := r.Response; p != nil {
		switch {
		case p.Copy == 1:
			b.WriteString("in the job: copy 1 of its payload, kept as the original\n")
		case p.Copy > 1 && p.Original != nil:
			fmt.Fprintf(b, "in the job: copy %d of its payload, a duplicate of %s at %s\n", p.Copy, p.Original.URI, p.Original.Date)
		}
		fmt.Fprintf(b, "revisits pointing at it: %d\n", len(p.Revisits))
		for _, v := range p.Revisits {
			fmt.Fprintf(b, "  %s offset %d: %s (%s)\n", v.File, v.Offset, orDash(v.Now), v.Found)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
