#!/usr/bin/env bash
# Measures the legacy ARC job (issue 24) on a generated collection of
# BENCH_SIZE_MB (default 1000) of mostly ARC files (v1 and v2, .arc and
# .arc.gz, with real files' quirks, and some .warc.gz), 40% duplicates,
# mean payload 30 KB:
#
#  1. (alternating with 2, BENCH_ROUNDS rounds, medians) conversion then
#     deduplication run by hand on a copy: arc2warc --in-place, then
#     warcdedup run;
#  2. warcdedup run --convert-arc on another copy: the same work as one
#     job; its time against the two commands' (issue 24: no slower).
#
# Both must leave the same files (names) and save the same bytes to within
# a few bytes a revisit; the script checks the names and prints both
# savings. Each copy is made before its clock starts. Environment:
# BENCH_SIZE_MB, BENCH_DIR (kept between runs: generation is slow),
# BENCH_JOBS (default: the number of CPUs), BENCH_ROUNDS (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
size_mb=${BENCH_SIZE_MB:-1000}
jobs=${BENCH_JOBS:-$(nproc)}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/warcdedup ./cmd/arc2warc ./scripts/warcgen
export PATH=$PWD/bin:$PATH

src=$dir/arc-src-$size_mb
if [ ! -f "$src/.done" ]; then
	rm -rf "$src"
	echo "generating ~${size_mb} MB, mostly ARC, with 40% duplicates ..." >&2
	warcgen -o "$src" -files 16 -records $((size_mb * 1000 * 1000 / 20500)) -dup 0.4 -mean 30000 \
		-formats arc.gz,arc2.gz,arc,arc.gz,arc2,arc.gz,arc.gz,warc.gz -arcquirks -seed 24 -collisions "" >&2
	touch "$src/.done"
fi
bytes=$(du -sb --exclude=.done "$src" | cut -f1)
arcs=$(find "$src" -name '*.arc' -o -name '*.arc.gz' | wc -l)
work=$dir/arc-work
rm -rf "$work"
mkdir -p "$work"
fresh() {
	rm -rf "${work:?}/$1" "$work/$1.warcdedup" "$work/$1.convert"
	cp -a "$src" "$work/$1"
	rm -f "$work/$1/.done"
}

cat >"$work/by-hand.sh" <<SH
set -euo pipefail
cd "$work"
arc2warc -q --in-place -j $jobs --work-dir hand.convert hand
warcdedup run -q -j $jobs --work-dir hand.warcdedup hand
SH
rounds=${BENCH_ROUNDS:-3}
: >"$work/hand.times"
: >"$work/job.times"
for round in $(seq "$rounds"); do
	echo "round $round of $rounds ..." >&2
	fresh hand
	timed /dev/null bash "$work/by-hand.sh" >>"$work/hand.times"
	saved_hand=$((bytes - $(du -sb "$work/hand" | cut -f1)))
	fresh job
	timed /dev/null warcdedup run -q --convert-arc -j "$jobs" --work-dir "$work/job.warcdedup" "$work/job" >>"$work/job.times"
	saved_job=$((bytes - $(du -sb "$work/job" | cut -f1)))
	if ! diff <(cd "$work/hand" && find . -type f | sort) <(cd "$work/job" && find . -type f | sort) >&2; then
		echo "the job and the commands by hand left other files" >&2
		exit 1
	fi
done
median() { sort -n -k1,1 "$1" | awk '{t[NR] = $1; m[NR] = $2} END {i = int((NR + 1) / 2); print t[i], m[i]}'; }
read -r t_hand m_hand < <(median "$work/hand.times")
read -r t_job m_job < <(median "$work/job.times")
left=$(find "$work/job" -name '*.arc' -o -name '*.arc.gz' | wc -l)

mb() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1e6}'; }
echo "collection: $(mb "$bytes") MB in 16 files ($arcs ARC), -j $jobs, inflater: $(go list -f '{{if .CgoFiles}}ISA-L{{else}}pure Go{{end}}' ./gzmulti)"
echo "medians of $rounds alternating rounds (saved: the collection's bytes before less after, conversion included)"
printf '%-52s %8s s  peak %6s MB  (saved %s MB)\n' "arc2warc --in-place, then warcdedup run" "$t_hand" "$m_hand" "$(mb "$saved_hand")"
printf '%-52s %8s s  peak %6s MB  (saved %s MB, %s ARC left)\n' "warcdedup run --convert-arc" "$t_job" "$m_job" "$(mb "$saved_job")" "$left"
awk -v a="$t_job" -v b="$t_hand" 'BEGIN {printf "%-52s %+7.1f%%  (issue 24: no slower)\n", "the job against the two commands", (a / b - 1) * 100}'
