#!/usr/bin/env bash
# The scale benchmark (issue 22): each command on inputs of each size, side
# by side in one run, in alternating rounds (every size once per round),
# and for each the median elapsed time, the time per record, and the peak
# resident set of every process it ran (the system sort and its zstd
# included): scripts/procpeak polls /proc every 20 ms for every
# descendant of the command and keeps each one's VmHWM, the kernel's own
# high-water mark, so that a peak between two polls is not missed; with
# the load average of the machine when it began and ended. Targets: no
# process above 150 MB resident at any size; time per record at a part's
# largest size within 15% of that at its smallest.
#
# Parts (BENCH_SCALE_PARTS, in this order by default):
#   warcsumcmp  the verification of a deduplicated collection's manifests
#               (scripts/mangen: 40% duplicates, 2% revisits before)
#   warccdx     a CDXJ index updated with a rewrite log that made 30% of
#               its records revisits (scripts/cdxgen: 1000 files)
#   assess      warcdedup assess --cdx on a CDXJ index (scripts/cdxgen:
#               1000 files, 35% repeated payloads, a crawl's mix of
#               types, statuses, revisits and months)
#   run         warcdedup run on a collection of SIZE responses
#               (scripts/warcgen: small records, mean payload 1 KB, 40%
#               duplicates, .warc.gz, 6,250 responses a file), each round
#               on a fresh copy made before the clock starts; the work
#               directory's size after the run, against the collection's
#               before and after the run, and each of its files in bytes
#               a response, go to scale-run-workdir (printed at the end).
#               Its sizes are its own,
#               BENCH_SCALE_RUN_SIZES (default 1000000; "1000000 10000000"
#               for the issue's pair): its input is slow to make, about
#               1.3 GB and 1.5 minutes per million on a quiet machine, and
#               a run of 1M takes some minutes
#   run8k       the run part on collections of the issue's own shape:
#               mean payload 8K (7.1 kB a response stored, the issue's
#               measured 7.3, where the run part's are 1.3 kB), so that the work directory's
#               share is measured at realistic record sizes as well as its
#               cost a record at small ones; its sizes
#               BENCH_SCALE_RUN8K_SIZES (default 100000: 710 MB)
#   undo        warcdedup undo --cdx (not in the default parts): the run
#               part's collection deduplicated once by warcdedup run --cdx
#               with a CDXJ index of it (its lines made from warcsum's
#               listing, url as urlkey, every mime text/html), each round
#               undoing a fresh copy of the result: the files restored and
#               checked, and the index brought back, reading each restored
#               record's mime and digest from its file. Its sizes are the
#               run part's
# A part is a function bench_PART SIZE that prints its command, with
# input_PART SIZE making its input once, before_PART SIZE preparing a
# round before its clock starts and, if need be, after_PART SIZE
# removing what it left; more parts (the crawl index's commits) are
# added the same way.
#
# A quick check that it works end to end:
#   BENCH_SCALE_SIZES="10000 100000" BENCH_SCALE_RUN_SIZES="10000 100000" \
#   BENCH_SCALE_RUN8K_SIZES=10000 BENCH_SCALE_ROUNDS=1 make bench-scale
#
# Environment: BENCH_SCALE_SIZES (default "1000000 10000000"; the run
# part's BENCH_SCALE_RUN_SIZES, default 1000000; run8k's
# BENCH_SCALE_RUN8K_SIZES, default 100000),
# BENCH_SCALE_ROUNDS (default 3), BENCH_SCALE_PARTS, BENCH_DIR (kept
# between runs: the inputs are generated once), SORT_MEMORY (sort -S of
# the commands, default theirs), WARCDEDUP_HEAPPROFILE (a directory: each
# measure's heap profiles and stages.tsv in DIR/PART-SIZE-ROUND, their
# stages' peaks shown at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
sizes=${BENCH_SCALE_SIZES:-1000000 10000000}
rounds=${BENCH_SCALE_ROUNDS:-3}
run_sizes=${BENCH_SCALE_RUN_SIZES:-1000000}
run8k_sizes=${BENCH_SCALE_RUN8K_SIZES:-100000}
parts=${BENCH_SCALE_PARTS:-warcsumcmp warccdx assess run run8k}
# sizes_of PART prints the sizes the part runs at.
sizes_of() {
	case $1 in
	run | undo) echo "$run_sizes" ;;
	run8k) echo "$run8k_sizes" ;;
	*) echo "$sizes" ;;
	esac
}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/warcsumcmp ./cmd/warccdx ./cmd/warcdedup ./cmd/warcsum ./scripts/mangen ./scripts/cdxgen ./scripts/procpeak ./scripts/warcgen
tmp=$dir/scale-tmp
mkdir -p "$tmp"
sortmem=()
if [ -n "${SORT_MEMORY:-}" ]; then sortmem=(--sort-memory "$SORT_MEMORY"); fi

# input_warcsumcmp N makes the manifests of N records, once.
input_warcsumcmp() {
	if [ ! -f "$dir/scale-man-$1.done" ]; then
		echo "generating manifests of $1 records ..." >&2
		bin/mangen -records "$1" -dup 0.4 -before "$dir/scale-before-$1.manifest" -after "$dir/scale-after-$1.manifest"
		touch "$dir/scale-man-$1.done"
	fi
}
bench_warcsumcmp() {
	echo bin/warcsumcmp -q -T "$tmp" "${sortmem[@]}" "$dir/scale-before-$1.manifest" "$dir/scale-after-$1.manifest"
}

# input_warccdx N makes an index of N lines and its log, once.
input_warccdx() {
	if [ ! -f "$dir/scale-cdx-$1.done" ]; then
		echo "generating a CDXJ index of $1 lines and its rewrite log ..." >&2
		bin/cdxgen -lines "$1" -files 1000 -rewrite 0.3 -index "$dir/scale-$1.cdxj" -log "$dir/scale-$1.log"
		touch "$dir/scale-cdx-$1.done"
	fi
}
bench_warccdx() {
	echo bin/warccdx -q -T "$tmp" "${sortmem[@]}" --log "$dir/scale-$1.log" "$dir/scale-$1.cdxj"
}

# input_assess N makes an index of N lines of a crawl's mix, once.
input_assess() {
	if [ ! -f "$dir/scale-assess-$1.done" ]; then
		echo "generating a CDXJ index of $1 lines of a crawl's mix ..." >&2
		bin/cdxgen -lines "$1" -files 1000 -dup 0.35 -mix -index "$dir/scale-assess-$1.cdxj" -log /dev/null
		touch "$dir/scale-assess-$1.done"
	fi
}
bench_assess() {
	echo bin/warcdedup assess --cdx -q --work-dir "$tmp/assess" "${sortmem[@]}" "$dir/scale-assess-$1.cdxj"
}
# after_assess removes the assessment's files (its work directory), which
# a run of the command keeps for the operator.
after_assess() { rm -rf "$tmp/assess"; }

# coll_of N [MEAN] is the collection of N responses of mean payload MEAN
# (default 1K, the run part's).
coll_of() {
	if [ "${2:-1K}" = 1K ]; then echo "$dir/scale-coll-$1"; else echo "$dir/scale-coll-$2-$1"; fi
}
# input_coll N MEAN makes a collection of N responses, once.
input_coll() {
	local c
	c=$(coll_of "$1" "$2")
	if [ ! -f "$c/.done" ]; then
		echo "generating a collection of $1 responses of mean payload $2 ..." >&2
		rm -rf "$c"
		bin/warcgen -o "$c" -files $(( ($1 + 6249) / 6250 )) -records "$1" -dup 0.4 -mean "$2" \
			-formats warc.gz,warc1.1.gz -seed 9 -collisions "" -noncandidates=false >&2
		touch "$c/.done"
	fi
}
input_run() { input_coll "$1" 1K; }
# before_coll DIR makes the round's copy of a collection.
before_coll() {
	rm -rf "$tmp/run"
	mkdir -p "$tmp/run"
	cp -a "$1" "$tmp/run/coll"
	rm -f "$tmp/run/coll/.done"
}
before_run() { before_coll "$(coll_of "$1")"; }
bench_run() {
	echo bin/warcdedup run -q --work-dir "$tmp/run/work" "${sortmem[@]}" "$tmp/run/coll"
}
# note_workdir LABEL N DIR notes the work directory's size after the run
# against the collection's before (DIR, its source) and after, each of
# its files (the cache and each run's records as one) in bytes a
# response, and removes both.
note_workdir() {
	local before coll work
	before=$(du -sb --exclude=.done "$3" | cut -f1)
	coll=$(du -sb "$tmp/run/coll" | cut -f1)
	work=$(du -sb "$tmp/run/work" | cut -f1)
	echo "$1 $2 $before $coll $work" | awk '{printf "%s %.0f responses: collection %.0f bytes before (%.0f a response), %.0f after; work directory %.0f bytes (%.0f bytes a response): %.2f%% of the collection before, %.2f%% after\n", $1, $2, $3, $3 / $2, $4, $5, $5 / $2, 100 * $5 / $3, 100 * $5 / $4}' >>"$dir/scale-run-workdir"
	{
		du -sb "$tmp/run/work"/* "$tmp/run/work"/.[!.]* 2>/dev/null || true
		for e in lines counts facts; do
			printf '%s\tcache/*.%s\n' "$(cat "$tmp/run/work"/cache/*."$e" 2>/dev/null | wc -c)" "$e"
		done
	} | sort -rn | awk -v n="$2" '{
		name = $2; sub(".*/work/", "", name)
		if ($1 / n >= 0.5) files = files sprintf(" %s %.1f;", name, $1 / n)
		else if (name !~ /^cache/) rest += $1
	} END { printf "  bytes a response:%s the rest %.1f\n", files, rest / n }' >>"$dir/scale-run-workdir"
	rm -rf "$tmp/run"
}
after_run() { note_workdir run "$1" "$(coll_of "$1")"; }

# The run part on the issue's own collections (run8k): records of mean
# payload 8K, 7.1 kB a response stored, where the run part's are 1.3 kB;
# its sizes BENCH_SCALE_RUN8K_SIZES (default 100000, 710 MB).
input_run8k() { input_coll "$1" 8K; }
before_run8k() { before_coll "$(coll_of "$1" 8K)"; }
bench_run8k() { bench_run "$1"; }
after_run8k() { note_workdir run8k "$1" "$(coll_of "$1" 8K)"; }

# input_undo N makes the run part's collection of N responses, a CDXJ
# index of it, and both deduplicated by warcdedup run --cdx, once: made
# where the rounds undo them ($tmp/undo, the paths the work directory
# records), then kept aside.
input_undo() {
	input_run "$1"
	local u=$dir/scale-undo-$1 w=$tmp/undo
	if [ ! -f "$u/.done" ]; then
		echo "deduplicating a collection of $1 responses and its index ..." >&2
		rm -rf "$u" "$w"
		mkdir -p "$w"
		cp -a "$dir/scale-coll-$1" "$w/coll"
		rm -f "$w/coll/.done"
		# file offset length uri date digest: a warcio.js CDXJ line each.
		bin/warcsum -q -r "$w/coll" | awk '{
			ts = $5; gsub(/[-:TZ]/, "", ts); d = $6; sub(/^sha1:/, "", d)
			printf "%s %s {\"url\":\"%s\",\"mime\":\"text/html\",\"status\":\"200\",\"digest\":\"%s\",\"length\":\"%s\",\"offset\":\"%s\",\"filename\":\"%s\"}\n", $4, ts, $4, d, $3, $2, $1
		}' | sort >"$w/index.cdxj"
		bin/warcdedup run -q --work-dir "$w/work" "${sortmem[@]}" --cdx "$w/index.cdxj" "$w/coll" >&2
		mv "$w" "$u"
		touch "$u/.done"
	fi
}
before_undo() {
	rm -rf "$tmp/undo"
	cp -a "$dir/scale-undo-$1" "$tmp/undo"
	rm -f "$tmp/undo/.done"
}
bench_undo() {
	echo bin/warcdedup undo -q --work-dir "$tmp/undo/work" "${sortmem[@]}" --cdx "$tmp/undo/index.cdxj" "$tmp/undo/coll"
}
after_undo() { rm -rf "$tmp/undo"; }

# measure PART SIZE ROUND runs the part once and appends its figures to
# $dir/scale-results: PART SIZE ROUND WALL CPU LOAD (at its start/end) then
# NAME:COUNT:PEAK-MB:CPU for each command name.
measure() {
	local load
	if declare -F before_"$1" >/dev/null; then
		before_"$1" "$2"
	fi
	load=$(cut -d' ' -f1 /proc/loadavg)
	# With WARCDEDUP_HEAPPROFILE=DIR each measure profiles into its own
	# DIR/PART-SIZE-ROUND (the stages' heaps and stages.tsv).
	local profile=()
	if [ -n "${WARCDEDUP_HEAPPROFILE:-}" ]; then
		profile=(env WARCDEDUP_HEAPPROFILE="$WARCDEDUP_HEAPPROFILE/$1-$2-$3")
		rm -rf "${profile[1]#*=}"
		mkdir -p "${profile[1]#*=}"
	fi
	# shellcheck disable=SC2046 # the part's command, split into words
	"${profile[@]}" bin/procpeak -- $(bench_"$1" "$2") >/dev/null 2>"$dir/scale-stderr" || { cat "$dir/scale-stderr" >&2; exit 1; }
	# The load average when it began and when it ended: a long part
	# sees others' work come and go.
	load=$load/$(cut -d' ' -f1 /proc/loadavg)
	awk -v part="$1" -v size="$2" -v round="$3" -v load="$load" '
		$1 == "wall" { wall = $2 }
		$1 == "cpu" { cpu = $2 }
		$1 == "proc" { procs = procs " " $2 ":" $3 ":" $4 ":" $5 }
		END { print part, size, round, wall, cpu, load procs }' "$dir/scale-stderr" >>"$dir/scale-results"
	if declare -F after_"$1" >/dev/null; then
		after_"$1" "$2"
	fi
	if [ -n "$(ls -A "$tmp")" ]; then
		echo "bench-scale: $1 left files in $tmp" >&2
		exit 1
	fi
}

for part in $parts; do
	for n in $(sizes_of "$part"); do
		input_"$part" "$n"
	done
done
rm -f "$dir/scale-results" "$dir/scale-run-workdir"
for round in $(seq "$rounds"); do
	for part in $parts; do
		for n in $(sizes_of "$part"); do
			echo "round $round: $part, $n records (load average $(cut -d' ' -f1 /proc/loadavg)) ..." >&2
			measure "$part" "$n" "$round"
		done
	done
done

echo
echo "$(nproc) cores; medians of $rounds alternating rounds (elapsed, and CPU of every process: on a shared machine"
echo "the CPU seconds tell the work done, the elapsed ones also what others ran); peak resident set per process, the largest of the rounds"
awk '
	function median(list,    a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{
		key = $1 " " $2
		walls[key] = walls[key] " " $4
		cpus[key] = cpus[key] " " $5
		loads[key] = loads[key] " " $6
		if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
		for (i = 7; i <= NF; i++) {
			split($i, p, ":")
			pk = key SUBSEP p[1]
			if (!(pk in peak) || p[3] + 0 > peak[pk] + 0) peak[pk] = p[3]
			if (!(pk in count) || p[2] + 0 > count[pk] + 0) count[pk] = p[2]
			pcpu[pk] = pcpu[pk] " " p[4]
			names[key] = names[key] (index(names[key], " " p[1] " ") ? "" : " " p[1] " ")
			if (p[3] + 0 > top[key] + 0) top[key] = p[3]
		}
	}
	END {
		for (k = 1; k <= keys; k++) {
			key = order[k]
			split(key, kp, " ")
			w = median(walls[key]); c = median(cpus[key])
			per[key] = w / kp[2] * 1e6; cper[key] = c / kp[2] * 1e6
			procs = ""
			n = split(names[key], nm, " ")
			for (i = 1; i <= n; i++) if (nm[i] != "") {
				pk = key SUBSEP nm[i]
				procs = procs sprintf(" %s (x%d) %.1f MB, %.1f s CPU;", nm[i], count[pk], peak[pk], median(pcpu[pk]))
			}
			printf "%-11s %9d records: %8.2f s (%6.2f us/record), %8.2f s CPU (%6.2f us/record); load average%s;%s\n", kp[1], kp[2], w, per[key], c, cper[key], loads[key], procs
		}
		# The targets of each part: the largest process at each size, and the
		# time per record at its largest size against its smallest.
		for (k = 1; k <= keys; k++) {
			split(order[k], kp, " ")
			if (!(kp[1] in small) || kp[2] + 0 < small[kp[1]] + 0) small[kp[1]] = kp[2]
			if (!(kp[1] in large) || kp[2] + 0 > large[kp[1]] + 0) large[kp[1]] = kp[2]
		}
		for (k = 1; k <= keys; k++) {
			split(order[k], kp, " ")
			line = sprintf("%-11s targets at %d: largest process %.1f MB (%s 150 MB)", kp[1], kp[2], top[order[k]], top[order[k]] <= 150 ? "within" : "ABOVE")
			if (kp[2] == large[kp[1]] && kp[2] != small[kp[1]]) {
				sk = kp[1] " " small[kp[1]]
				ratio = per[order[k]] / per[sk]; cratio = cper[order[k]] / cper[sk]
				line = line sprintf("; per record against %d: time %.2fx (%s 1.15x), CPU %.2fx (%s 1.15x)", small[kp[1]], ratio, ratio <= 1.15 ? "within" : "ABOVE", cratio, cratio <= 1.15 ? "within" : "ABOVE")
			}
			print line
		}
	}' "$dir/scale-results"
if [ -f "$dir/scale-run-workdir" ]; then
	echo
	cat "$dir/scale-run-workdir"
fi
# Each profiled measure's stages: warcdedup's peak resident set (VmHWM,
# reset as each stage starts) and largest live heap, in MB.
if [ -n "${WARCDEDUP_HEAPPROFILE:-}" ]; then
	for t in "$WARCDEDUP_HEAPPROFILE"/*/stages.tsv; do
		[ -f "$t" ] || continue
		echo
		echo "$(basename "$(dirname "$t")"): stage, peak resident MB, live heap MB"
		awk -F'\t' '{printf "  %-24s %7s %7s\n", $2, $3, $4}' "$t"
	done
fi
