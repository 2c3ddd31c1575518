package wacz

import (
	"encoding/hex"
	"path"
	"sort"
	"strings"
)

// RefersToContainer is the WARC header the Browsertrix crawler writes on
// a revisit whose original is in another WACZ file: "file://NAME.wacz".
// wabac.js (2.26 and later) looks the original up in that WACZ first.
const RefersToContainer = "WARC-Refers-To-Container"

// ContainerURI is the WARC-Refers-To-Container value for a revisit whose
// original is in the package at pkg: its file name, as Browsertrix names
// it (wabac.js finds the package by file name within a collection).
func ContainerURI(pkg string) string { return "file://" + path.Base(pkg) }

// ParseContainerURI returns the file name a WARC-Refers-To-Container
// value names.
func ParseContainerURI(v string) (string, bool) {
	name, ok := strings.CutPrefix(v, "file://")
	if !ok || name == "" || strings.ContainsAny(name, "/\\") {
		return "", false
	}
	return name, true
}

// RequirementOf is the relation.requires entry for the package at pkg,
// whose whole file has that SHA-256 and size (a Check of it gives both),
// in crawl crawlID ("" if none).
func RequirementOf(pkg string, sha256 []byte, size int64, crawlID string) Requirement {
	r := Requirement{Filename: path.Base(pkg), Size: size, CrawlID: crawlID}
	if sha256 != nil {
		r.Hash = hex.EncodeToString(sha256)
	} else {
		r.Size = -1
	}
	return r
}

// Dependency is one package's need of another: Requirer's revisits have
// originals in Required.
type Dependency struct{ Requirer, Required string }

// Order orders the rewrite of packages so that each requires entry can
// name the current hash of the package it names: a package comes after
// every package it requires, which is then written already. A cycle (a
// and b each hold originals of the other's revisits, or a package's own
// revisits point at itself through others) has no such order: its
// packages are returned in Cycles, for their entries of one another to
// go without hash and size (filename and crawlId only, as Browsertrix
// writes a requirement whose WACZ it has not hashed), or for the caller
// to choose originals that break it. Packages in a cycle are in Order
// too, together, after what they require.
func Order(packages []string, deps []Dependency) (order []string, cycles [][]string) {
	edges := map[string][]string{}
	nodes := append([]string(nil), packages...)
	known := map[string]bool{}
	for _, p := range packages {
		known[p] = true
	}
	for _, d := range deps {
		edges[d.Requirer] = append(edges[d.Requirer], d.Required)
		for _, n := range []string{d.Requirer, d.Required} {
			if !known[n] {
				known[n] = true
				nodes = append(nodes, n)
			}
		}
	}
	for _, e := range edges {
		sort.Strings(e)
	}
	sort.Strings(nodes)
	// Tarjan's algorithm: it finishes a component after every component
	// it reaches, so components come out required-first.
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var comp []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		sort.Strings(comp)
		order = append(order, comp...)
		selfLoop := false
		for _, w := range edges[v] {
			if w == v {
				selfLoop = true
			}
		}
		if len(comp) > 1 || selfLoop {
			cycles = append(cycles, comp)
		}
	}
	for _, n := range nodes {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}
	return order, cycles
}
