#!/usr/bin/env bash
# Measures warcdedup assess --sample as an estimator, across seeds: on a
# generated collection of about 1 GB (16 .warc.gz files, 40% duplicates,
# mean payload 30 KB, as bench-run.sh's), the dry run of the whole
# collection gives the truth; then, for each method (--sample-by digests,
# files) and each seed 1 to BENCH_SEEDS, the estimate of the bytes saved
# and of the duplicates with its 90% range, from BENCH_PERCENT of the
# digests or files. One line per seed: estimate, range, the range's half
# width relative to the estimate, the estimate's error, whether the range
# holds the truth, seconds, CPU seconds (with the sorts) and peak MB (a
# fresh work directory each time: nothing cached); then per method how
# many ranges held the truth, the widest half width and the median CPU
# seconds.
#
# Environment: BENCH_SEEDS (10), BENCH_PERCENT (25), BENCH_METHODS
# ("digests files"), BENCH_ASSESS_RECORDS (43000: about 1 GB),
# BENCH_ASSESS_MIX=1 for a harder mix (every format, ARC files among them,
# 10% of the duplicates served another way: status, type or encoding),
# BENCH_DIR (the collection kept between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/warcdedup ./scripts/warcgen
PATH=$PWD/bin:$PATH
seeds=${BENCH_SEEDS:-10}
percent=${BENCH_PERCENT:-25}
methods=${BENCH_METHODS:-digests files}
records=${BENCH_ASSESS_RECORDS:-43000}
mix=${BENCH_ASSESS_MIX:-0}

src=$dir/assess-sample-$records-$mix
if [ ! -f "$src/.done" ]; then
	rm -rf "$src"
	echo "generating a collection of $records responses (mix $mix) ..." >&2
	if [ "$mix" = 1 ]; then
		warcgen -o "$src" -files 16 -records "$records" -dup 0.4 -mean 30000 -formats all -variants 0.1 -seed 9 -collisions "" >&2
	else
		warcgen -o "$src" -files 16 -records "$records" -dup 0.4 -mean 30000 -formats warc.gz,warc1.1.gz -seed 9 -collisions "" >&2
	fi
	touch "$src/.done"
fi
bytes=$(du -sb --exclude=.done "$src" | cut -f1)

# measure COMMAND... runs COMMAND and prints "seconds CPU-seconds peak-MB"
# (CPU: user and system, of it and the processes it waited for).
measure() {
	/usr/bin/time -f "%e %U %S %M" -o "$dir/time" "$@" >/dev/null 2>"$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
	awk '{printf "%s %.1f %.1f\n", $1, $2 + $3, $4/1024}' "$dir/time"
}

# figures STATS: the estimate's (or the totals') bytes saved and
# duplicates, with their ranges.
figures() {
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
e = r.get("estimate") or {}
t = r["totals"]
if e:
    print(e["bytes_saved"], e["bytes_saved_low"], e["bytes_saved_high"], e["duplicates"], e["duplicates_low"], e["duplicates_high"])
else:
    print(t["bytes_saved"], t["bytes_saved"], t["bytes_saved"], t["duplicates"], t["duplicates"], t["duplicates"])
' "$1"
}

work=$dir/assess-sample-work
rm -rf "$work"
echo
echo "collection: $src, $((bytes / 1000000)) MB in 16 files; $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
read -r t c m < <(measure warcdedup assess -q --work-dir "$work" "$src")
read -r truth _ _ dups _ _ < <(figures "$work/stats.json")
printf "truth (dry run of every file): %d bytes saved, %d duplicates; %s s, %s s CPU, %s MB peak\n" "$truth" "$dups" "$t" "$c" "$m"
rm -rf "$work"

for method in $methods; do
	echo
	echo "--sample $percent --sample-by $method --confidence 0.9"
	printf "%4s  %-29s %7s %7s %4s  %-20s %7s %7s %4s %7s %7s %7s\n" seed "bytes saved [90% range]" "half" "error" "in" \
		"duplicates [range]" "half" "error" "in" "s" "CPU s" "MB"
	for seed in $(seq 1 "$seeds"); do
		read -r t c m < <(measure warcdedup assess -q --sample "$percent" --sample-by "$method" --seed "$seed" --confidence 0.9 --work-dir "$work" "$src")
		read -r v lo hi dv dlo dhi < <(figures "$work/assess-sample/stats.json")
		rm -rf "$work"
		awk -v s="$seed" -v v="$v" -v lo="$lo" -v hi="$hi" -v tr="$truth" -v dv="$dv" -v dlo="$dlo" -v dhi="$dhi" -v dt="$dups" -v t="$t" -v c="$c" -v m="$m" 'BEGIN {
			hw = (hi - lo) / 2 / v * 100; err = (v - tr) / tr * 100; ok = (lo <= tr && tr <= hi) ? "yes" : "NO"
			dhw = (dhi - dlo) / 2 / dv * 100; derr = (dv - dt) / dt * 100; dok = (dlo <= dt && dt <= dhi) ? "yes" : "NO"
			printf "%4d  %8.1f MB %17s %6.2f%% %+6.2f%% %4s  %6d %13s %6.2f%% %+6.2f%% %4s %7s %7s %7s\n",
				s, v / 1e6, sprintf("[%.1f-%.1f]", lo / 1e6, hi / 1e6), hw, err, ok, dv, sprintf("[%d-%d]", dlo, dhi), dhw, derr, dok, t, c, m
		}'
	done | tee "$dir/assess-sample-$method.txt"
	median=$(awk '{print $14}' "$dir/assess-sample-$method.txt" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
	awk -v method="$method" -v median="$median" '{
		n++; if ($7 == "yes") held++; if ($12 == "yes") dheld++
		h = $5; sub("%", "", h); if (h + 0 > wide) wide = h + 0
		d = $10; sub("%", "", d); if (d + 0 > dwide) dwide = d + 0
	} END {
		printf "%s: the range held the truth %d of %d times (duplicates %d of %d); widest half range %.2f%% of the estimate (duplicates %.2f%%); median %.1f s CPU\n",
			method, held, n, dheld, n, wide, dwide, median
	}' "$dir/assess-sample-$method.txt"
done
