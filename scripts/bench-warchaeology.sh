#!/usr/bin/env bash
# Measures warcdedup run against warchaeology's `warc dedup` (issue 13; the
# target: warcdedup run at least 2x faster) on the collection bench-run.sh
# generates (BENCH_SIZE_MB, default 1000, of .warc.gz with 40% duplicates,
# mean payload 30 KB; the same directory, so the data is shared).
#
# BENCH_ROUNDS rounds (default 3), medians; in each, on a fresh copy made
# before its clock starts:
#
#  1. warcdedup run -q -j JOBS: in place, bytes compared, verified;
#  2. warc dedup -c JOBS --one-to-one: JOBS files at once, each written to
#     one new file of the same name in another directory (its input is left
#     as it was), with its digest index (badger) and buffers in the work
#     directory, its defaults otherwise (a duplicate is a record whose
#     WARC-Payload-Digest header was seen before, whatever its URI, status or
#     truncation; at least 2 KB saved; every record recompressed, gzip's
#     default level).
#
# Untimed, after each: the revisits each made (warcsum's revisit lines, less
# the collection's own) and the bytes saved (du -sb); the last round's are
# shown, with what warcsumcmp says of warc dedup's output (warcdedup run
# verifies its own).
#
# warc is built from git mirrors by scripts/warchaeology.sh, in
# $dir/warchaeology; if it cannot be, the script exits with status 3.
# Environment: BENCH_SIZE_MB, BENCH_ROUNDS, BENCH_DIR (kept between runs:
# generation is slow), BENCH_JOBS (default: the number of CPUs),
# BENCH_WARC_FLAGS (more flags for warc dedup, e.g. "--compression-level 1"),
# BENCH_RUN_FLAGS (more flags for warcdedup run).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
size_mb=${BENCH_SIZE_MB:-1000}
jobs=${BENCH_JOBS:-$(nproc)}
. scripts/bench-lib.sh
bench_dir

status=0
warc=$(scripts/warchaeology.sh "$dir/warchaeology") || status=$?
if [ "$status" -ne 0 ]; then
	echo "skipped: warchaeology's warc could not be built (scripts/warchaeology.sh exited $status)" >&2
	exit 3
fi
bin=$dir/bin
go build -o "$bin/" ./cmd/warcdedup ./cmd/warcsum ./cmd/warcsumcmp ./scripts/warcgen
export PATH=$bin:$PATH

run_collection
work=$dir/warchaeology-work
rm -rf "$work"
mkdir -p "$work"

revisits() { # the revisit lines of warcsum's manifest of $1
	warcsum -q -j "$jobs" -r "$1" | awk '$7 == -1' | wc -l
}
warcsum -q -j "$jobs" -r "$src" >"$work/before.manifest"
src_revisits=$(awk '$7 == -1' "$work/before.manifest" | wc -l)

read -ra warc_flags <<<"${BENCH_WARC_FLAGS:-}"
read -ra run_flags <<<"${BENCH_RUN_FLAGS:-}"
rounds=${BENCH_ROUNDS:-3}
: >"$work/run.times"
: >"$work/run.cpu"
: >"$work/warc.times"
for round in $(seq "$rounds"); do
	echo "round $round of $rounds ..." >&2
	fresh run
	rm -rf "$work/run.warcdedup"
	timed /dev/null warcdedup run -q -j "$jobs" ${run_flags[@]+"${run_flags[@]}"} --work-dir "$work/run.warcdedup" "$work/run" >>"$work/run.times"
	cpu_seconds >>"$work/run.cpu"
	saved_run=$((bytes - $(du -sb "$work/run" | cut -f1)))
	revisits_run=$(($(revisits "$work/run") - src_revisits))

	fresh warc-in
	rm -rf "$work/warc-out" "$work/warc-index" "$work/warc-tmp"
	mkdir "$work/warc-out" "$work/warc-tmp"
	timed /dev/null "$warc" dedup -r --one-to-one -c "$jobs" --log-level warn \
		--index-dir "$work/warc-index" --tmp-dir "$work/warc-tmp" -w "$work/warc-out" \
		${warc_flags[@]+"${warc_flags[@]}"} "$work/warc-in" >>"$work/warc.times"
	saved_warc=$((bytes - $(du -sb "$work/warc-out" | cut -f1)))
	revisits_warc=$(($(revisits "$work/warc-out") - src_revisits))
done
median() { sort -n -k1,1 "$1" | awk '{t[NR] = $1; m[NR] = $2} END {i = int((NR + 1) / 2); print t[i], m[i]}'; }
read -r t_run m_run < <(median "$work/run.times")
read -r t_warc m_warc < <(median "$work/warc.times")

# What our verifier says of warc dedup's output (last round): its revisits
# must resolve to a complete 2xx response with their digest.
warcsum -q -j "$jobs" -r "$work/warc-out" >"$work/warc.manifest"
if warcsumcmp -q "$work/before.manifest" "$work/warc.manifest" >"$work/warcsumcmp.out" 2>&1; then
	verdict="warcsumcmp: no violations"
else
	verdict="warcsumcmp: $(grep -o '[0-9]* violations' "$work/warcsumcmp.out" | tail -1 || echo failed), see $work/warcsumcmp.out"
fi

mb() { awk -v b="$1" 'BEGIN {printf "%.0f", b / 1e6}'; }
echo "collection: $(mb "$bytes") MB in 16 .warc.gz files, -j $jobs, inflater: $(go list -f '{{if .CgoFiles}}ISA-L{{else}}pure Go{{end}}' ./gzmulti)"
echo "warc: $(awk '{printf "%s %s (%.12s) with %s %s (%.12s), replaced", $1, $2, $3, $4, $5, $6}' "$dir/warchaeology/bin/.stamp")," \
	"warc dedup $(echo -r --one-to-one -c "$jobs" ${warc_flags[@]+"${warc_flags[@]}"})"
echo "medians of $rounds alternating rounds (revisits and saved: the last round)"
printf '%-44s %8s s  peak %6s MB  (%s revisits, saved %s MB)\n' "warcdedup run -j $jobs" "$t_run" "$m_run" "$revisits_run" "$(mb "$saved_run")"
printf '%-44s %8s s  (target <= 5.5, issue 21)\n' "warcdedup run, CPU (user + system)" "$(median_of "$work/run.cpu")"
printf '%-44s %8s s  peak %6s MB  (%s revisits, saved %s MB; %s)\n' "warc dedup -c $jobs --one-to-one" "$t_warc" "$m_warc" "$revisits_warc" "$(mb "$saved_warc")" "$verdict"
awk -v a="$t_warc" -v b="$t_run" 'BEGIN {printf "%-44s %7.2fx  (target >= 2x)\n", "warcdedup run faster than warc dedup by", a / b}'
