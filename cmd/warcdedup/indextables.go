package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
)

// jsonUsage is the usage of --json of the commands that print figures.
const jsonUsage = "print the figures as JSON (the fields of the tables, exact) instead of tables"

// writeIndexStats writes index stats as tables: a crawl a line, in the
// order committed, the total under them, and the crawls removed.
func writeIndexStats(w io.Writer, dir string, r *crawlindex.Registry) error {
	fmt.Fprintf(w, "index %s, generation %d, digests %s: %s committed", dir, r.Generation, r.Algorithm, progress.Plural(int64(len(r.Crawls)), "crawl", ""))
	if n := len(r.Removed); n > 0 {
		fmt.Fprintf(w, ", %s removed", progress.Plural(int64(n), "crawl", ""))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "crawl\tcommitted\tfiles\tsize\trecords\trevisits\twritten by its run\tbytes conserved\toriginals\t")
	line := func(k *crawlindex.Crawl, name, when string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, when, progress.Count(k.Files), progress.Bytes(k.Size),
			progress.Count(k.Records), progress.Count(k.Revisits), progress.Count(k.RevisitsWritten), progress.Bytes(k.BytesConserved), progress.Count(k.Originals))
	}
	for _, k := range r.Crawls {
		name := k.Name
		if k.Imported {
			name += " (imported)"
		}
		line(k, name, k.Committed.UTC().Format("2006-01-02 15:04"))
	}
	t := r.Totals()
	line(&t, "total", "")
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Removed) > 0 {
		var names []string
		for _, k := range r.Removed {
			names = append(names, fmt.Sprintf("%s (%s, %s, removed %s)", k.Name, progress.Plural(k.Files, "file", ""), progress.Bytes(k.Size), k.Removed.UTC().Format("2006-01-02 15:04")))
		}
		fmt.Fprintf(w, "removed: %s\n", strings.Join(names, ", "))
	}
	return nil
}

// writeDeps writes what a crawl's revisits need: the crawls, with their
// revisits and the files of each needed.
func writeDeps(w io.Writer, name string, needs []crawlindex.Need) error {
	if len(needs) == 0 {
		_, err := fmt.Fprintf(w, "crawl %s: its revisits need no other crawl\n", name)
		return err
	}
	fmt.Fprintf(w, "crawl %s: its revisits need %s:\n", name, progress.Plural(int64(len(needs)), "crawl", ""))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  crawl\trevisits\tfiles needed")
	for _, n := range needs {
		var files []string
		for _, f := range n.Files {
			files = append(files, f.Name)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", n.Crawl, progress.Count(n.Revisits), strings.Join(files, " "))
	}
	return tw.Flush()
}

// dependent is a crawl whose revisits need another, and how many.
type dependent struct {
	Crawl    string `json:"crawl"`
	Revisits int64  `json:"revisits"`
}

// writeDependents writes which crawls' revisits need a crawl.
func writeDependents(w io.Writer, name string, by []dependent) error {
	if len(by) == 0 {
		_, err := fmt.Fprintf(w, "crawl %s: no other crawl's revisits need it (index remove takes it out)\n", name)
		return err
	}
	fmt.Fprintf(w, "crawl %s: the revisits of %s need it:\n", name, progress.Plural(int64(len(by)), "crawl", ""))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  crawl\trevisits")
	for _, d := range by {
		fmt.Fprintf(tw, "  %s\t%s\n", d.Crawl, progress.Count(d.Revisits))
	}
	return tw.Flush()
}
