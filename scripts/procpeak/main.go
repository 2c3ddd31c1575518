// Command procpeak runs a command and reports its elapsed time and the
// peak resident set of every process of it (the command and every process
// it starts, sort included), read from /proc while they run: the figures
// of the scale benchmark (scripts/bench-scale.sh). Linux only.
//
//	procpeak [-interval 20ms] -- COMMAND ARGS...
//
// It prints to stderr, after the command's own output:
//
//	wall SECONDS
//	cpu SECONDS                  (user and system, of the command and the processes it waited for)
//	proc NAME COUNT PEAK-MB CPU  (one line per command name: how many ran, the largest peak,
//	                              their CPU seconds as last read)
//	peak PEAK-MB NAME            (the largest of all)
//
// and exits with the command's status.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ticksPerSecond is the unit of /proc/PID/stat's times (sysconf
// _SC_CLK_TCK, 100 on every Linux this runs on).
const ticksPerSecond = 100

func main() {
	interval := flag.Duration("interval", 20*time.Millisecond, "how often /proc is read")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "procpeak: give a command")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "procpeak:", err)
		os.Exit(2)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	w := &watch{root: cmd.Process.Pid, procs: map[int]*proc{}}
	tick := time.NewTicker(*interval)
	var err error
loop:
	for {
		w.poll()
		select {
		case err = <-done:
			break loop
		case <-tick.C:
		}
	}
	wall := time.Since(start)
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	w.report(wall, cpu)
	if ee, ok := err.(*exec.ExitError); ok {
		os.Exit(ee.ExitCode())
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "procpeak:", err)
		os.Exit(2)
	}
}

// proc is a process seen: its command name, largest VmHWM and CPU time,
// as last read.
type proc struct {
	name string
	peak int64 // kB
	cpu  int64 // clock ticks
}

type watch struct {
	root  int
	procs map[int]*proc
}

// poll reads the peak resident set of the root and its descendants.
func (w *watch) poll() {
	parents := map[int]int{}
	ticks := map[int]int64{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime (14th field) stime (15th)
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:open])))
		f := strings.Fields(string(b[close+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		parents[pid], ticks[pid] = ppid, utime+stime
	}
	for pid := range parents {
		if !w.descends(pid, parents) {
			continue
		}
		// The name and the peak read together: a process between fork
		// and exec has its parent's name, and after exec its own peak.
		name, hwm, ok := status(pid)
		if !ok {
			continue
		}
		p := w.procs[pid]
		if p == nil {
			p = &proc{}
			w.procs[pid] = p
		}
		if name != p.name {
			p.name, p.peak = name, 0
		}
		p.peak = max(p.peak, hwm)
		p.cpu = ticks[pid]
	}
}

func (w *watch) descends(pid int, parents map[int]int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == w.root {
			return true
		}
		pid = parents[pid]
	}
	return false
}

// status reads a process's name and peak resident set (kB).
func status(pid int) (string, int64, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	name := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Name:"); ok {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return name, n, name != ""
		}
	}
	return name, 0, name != ""
}

func (w *watch) report(wall, cpu time.Duration) {
	type agg struct {
		count     int
		peak, cpu int64
	}
	byName := map[string]*agg{}
	var top string
	var topPeak int64
	for _, p := range w.procs {
		a := byName[p.name]
		if a == nil {
			a = &agg{}
			byName[p.name] = a
		}
		a.count++
		a.peak = max(a.peak, p.peak)
		a.cpu += p.cpu
		if p.peak > topPeak {
			top, topPeak = p.name, p.peak
		}
	}
	var names []string
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "wall %.3f\n", wall.Seconds())
	fmt.Fprintf(os.Stderr, "cpu %.3f\n", cpu.Seconds())
	for _, n := range names {
		a := byName[n]
		fmt.Fprintf(os.Stderr, "proc %s %d %.1f %.2f\n", n, a.count, float64(a.peak)/1024, float64(a.cpu)/ticksPerSecond)
	}
	fmt.Fprintf(os.Stderr, "peak %.1f %s\n", float64(topPeak)/1024, top)
}
