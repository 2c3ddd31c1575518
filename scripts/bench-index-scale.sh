#!/usr/bin/env bash
# The crawl index at scale (issue 22): what a commit costs as the index
# grows, on synthetic crawls (scripts/indexcommit: originals as warcsum
# lists them, about 134 bytes each, no WARC bytes), for make bench-scale.
#
#  1. Growth: crawls 1..BENCH_INDEX_CRAWLS (default 20) of
#     BENCH_INDEX_TOTAL/BENCH_INDEX_CRAWLS originals each (default 10^8 in
#     all) committed one after the other: for each, the index's originals
#     before it, the commit's time, the compaction's after it (and the
#     lines it rewrote), and the index's bytes after.
#  2. The target: a crawl of BENCH_INDEX_PROBE (default 10^6) originals
#     committed into an empty index and into the grown one (a hard-linked
#     copy of it each time: files never change once written), in
#     BENCH_INDEX_ROUNDS (default 3) alternating rounds: the median of
#     each, and their ratio (the limit: 2x). The compaction that follows
#     is timed apart, as is the join of such a crawl against each.
#  3. The disk: the grown index's current generation, and its directory
#     with the generation kept before it.
#
# Environment: BENCH_INDEX_TOTAL, BENCH_INDEX_CRAWLS, BENCH_INDEX_PROBE,
# BENCH_INDEX_ROUNDS, BENCH_DIR (kept between runs: the grown index is
# reused if its figures are there; delete $BENCH_DIR/index-scale-* to grow
# it again). About 30 GB of disk at 10^8 (the index and a compaction's
# output before its inputs go) and 30-60 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
total=${BENCH_INDEX_TOTAL:-100000000}
crawls=${BENCH_INDEX_CRAWLS:-20}
probe=${BENCH_INDEX_PROBE:-1000000}
rounds=${BENCH_INDEX_ROUNDS:-3}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./scripts/indexcommit
each=$((total / crawls))
index=$dir/index-scale-$total-$crawls
growth=$index.growth
tmp=$dir/index-scale-tmp
mkdir -p "$tmp"

gb() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1e9 }'; }

if [ ! -f "$growth.done" ]; then
	rm -rf "$index" "$growth"
	echo "growing an index to $total originals: $crawls crawls of $each ..." >&2
	for n in $(seq "$crawls"); do
		bin/indexcommit -index "$index" -crawl "$(printf c%02d "$n")" -originals "$each" -seed "$n" -tmp "$tmp" >>"$growth"
		tail -1 "$growth" >&2
	done
	touch "$growth.done"
fi

echo
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "1. growth: crawl N of $each originals committed into the index of crawls 1..N-1"
printf "%5s %14s %10s %12s %14s %10s\n" N "originals before" "commit s" "compaction s" "lines rewritten" "index GB"
awk '{ printf "%5d %14d %10.2f %12.2f %14d %10.2f\n", NR, $3, $4, $5, $6, $8 / 1e9 }' "$growth"
awk '{ c += $4; k += $5; r += $6; n += $2 } END {
	printf "sums: commits %.1f s, compactions %.1f s (%.2f rewrites an original); a commit of %d originals %.1f s on average, with its share of compactions %.1f s\n",
		c, k, r / n, n / NR, c / NR, (c + k) / NR }' "$growth"

# One commit of the probe crawl into a copy of an index (or into none):
# "commit-s compaction-s".
probe_commit() {
	local into=$1 copy=$dir/index-scale-copy
	rm -rf "$copy"
	if [ -n "$into" ]; then cp -al "$into" "$copy"; fi
	bin/indexcommit -index "$copy" -crawl probe -originals "$probe" -seed 777 -tmp "$tmp" | awk '{ print $4, $5 }'
	rm -rf "$copy"
}
probe_join() {
	local into=$1 empty=$dir/index-scale-empty
	if [ -z "$into" ]; then
		rm -rf "$empty"
		bin/indexcommit -index "$empty" -crawl e -originals 1 -seed 1 -tmp "$tmp" >/dev/null
		into=$empty
	fi
	bin/indexcommit -index "$into" -join -crawl probe -originals "$probe" -seed 777 -tmp "$tmp" | awk '{ print $2 }'
	rm -rf "$empty"
}

rm -f "$dir/index-scale-probe"
for round in $(seq "$rounds"); do
	echo "round $round: a crawl of $probe into an empty index and into one of $total (load average $(cut -d' ' -f1 /proc/loadavg)) ..." >&2
	read -r c0 k0 <<<"$(probe_commit "")"
	read -r c1 k1 <<<"$(probe_commit "$index")"
	j0=$(probe_join "")
	j1=$(probe_join "$index")
	echo "$c0 $k0 $c1 $k1 $j0 $j1" >>"$dir/index-scale-probe"
done
echo
echo "2. a crawl of $probe originals, medians of $rounds alternating rounds:"
awk -v total="$total" -v probe="$probe" '
	function median(list,    a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ for (i = 1; i <= 6; i++) col[i] = col[i] " " $i }
	END {
		c0 = median(col[1]); c1 = median(col[3])
		printf "   commit into an empty index   %8.2f s (compaction after: %.2f s)\n", c0, median(col[2])
		printf "   commit into %d originals %8.2f s (compaction after: %.2f s)\n", total, c1, median(col[4])
		printf "   ratio %.2fx (target: at most 2x)\n", c1 / c0
		printf "   join of the crawl: against an empty index %.2f s, against %d originals %.2f s\n", median(col[5]), total, median(col[6])
	}' "$dir/index-scale-probe"

cur=$(cat "$index/CURRENT")
gen_bytes=$(du -sb "$index/$cur" | cut -f1)
dir_bytes=$(du -sb "$index" | cut -f1)
runs=$(ls "$index/$cur/originals" | wc -l)
echo
echo "3. disk: the index of $total originals: $(gen_bytes=$gen_bytes; gb "$gen_bytes") GB ($((gen_bytes / total)) bytes an original) in $runs runs of 32 partitions; with the generations kept beside it $(gb "$dir_bytes") GB"
