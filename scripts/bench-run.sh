#!/usr/bin/env bash
# Measures warcdedup run (issue 9) on a generated collection of
# BENCH_SIZE_MB (default 1000) .warc.gz with 40% duplicates, mean payload
# 30 KB:
#
#  0. warcsum alone (the whole job's limit is 2.5x its time);
#  1. (alternating with 2, BENCH_ROUNDS rounds, medians) the stage commands run by hand, as README.md's pipeline block writes
#     them (warcsum, sort, warccollres -p, awk | sort, warcrefs --in-place,
#     warcsum again, warcsumcmp), on a copy;
#  2. warcdedup run on another copy: its time against the stages' (the
#     limit is 5% more), peak memory;
#  3. the same warcdedup run again, with nothing to do;
#  4. warcdedup undo of the run: time and MB/s of the restored files.
#
# Each copy is made before its clock starts. Environment: BENCH_SIZE_MB,
# BENCH_DIR (kept between runs: generation is slow), BENCH_JOBS (default:
# the number of CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
size_mb=${BENCH_SIZE_MB:-1000}
jobs=${BENCH_JOBS:-$(nproc)}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/warcdedup ./cmd/warcsum ./cmd/warccollres ./cmd/warcrefs ./cmd/warcsumcmp ./scripts/warcgen
export PATH=$PWD/bin:$PATH

run_collection
work=$dir/run-work
rm -rf "$work"
mkdir -p "$work"

# 0. warcsum alone over the collection: the whole job's yardstick (the
# limit is 2.5x).
read -r t_sum m_sum < <(timed /dev/null warcsum -q -j "$jobs" -r "$src")

# 1 and 2, alternating for BENCH_ROUNDS rounds (default 3), medians: the
# stages by hand, then warcdedup run, each on a fresh copy.
cat >"$work/stages.sh" <<SH
set -euo pipefail
cd "$work"
warcsum -q -j $jobs -r coll > before.manifest
sort -T . -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n before.manifest | warccollres -q -j $jobs -p --root coll > numbered.manifest
awk '\$8 > 1' numbered.manifest | sort -T . -k1,1 -k2,2n | warcrefs -q -j $jobs --in-place --root coll --originals numbered.manifest --log rewrite.log
warcsum -q -j $jobs -r coll > after.manifest
warcsumcmp -q before.manifest after.manifest
SH
rounds=${BENCH_ROUNDS:-3}
: >"$work/stages.times"
: >"$work/run.times"
: >"$work/run.cpu"
for round in $(seq "$rounds"); do
	echo "round $round of $rounds ..." >&2
	fresh coll
	rm -f "$work/rewrite.log" "$work/rewrite.log.size" "$work/rewrite.log.pending"
	timed /dev/null bash "$work/stages.sh" >>"$work/stages.times"
	saved=$((bytes - $(du -sb "$work/coll" | cut -f1)))
	fresh run
	rm -rf "$work/run.warcdedup"
	timed /dev/null warcdedup run -q -j "$jobs" --work-dir "$work/run.warcdedup" "$work/run" >>"$work/run.times"
	cpu_seconds >>"$work/run.cpu"
	saved_run=$((bytes - $(du -sb "$work/run" | cut -f1)))
done
median() { sort -n -k1,1 "$1" | awk '{t[NR] = $1; m[NR] = $2} END {i = int((NR + 1) / 2); print t[i], m[i]}'; }
read -r t_stages m_stages < <(median "$work/stages.times")
read -r t_run m_run < <(median "$work/run.times")

# 3. Again, with nothing to do.
read -r t_rerun m_rerun < <(timed /dev/null warcdedup run -q -j "$jobs" --work-dir "$work/run.warcdedup" "$work/run")

# 4. Undo.
restored=$(awk '/^# file /{s += $6} END {print s + 0}' "$work/run.warcdedup/rewrite.log")
read -r t_undo m_undo < <(timed /dev/null warcdedup undo -q -j "$jobs" --work-dir "$work/run.warcdedup" "$work/run")
if ! diff -rq "$src" "$work/run" --exclude=.done >/dev/null; then
	echo "undo did not give the collection back byte for byte" >&2
	exit 1
fi

mb() { awk -v b="$1" 'BEGIN {printf "%.0f", b / 1e6}'; }
echo "collection: $(mb "$bytes") MB in 16 .warc.gz files, -j $jobs, inflater: $(go list -f '{{if .CgoFiles}}ISA-L{{else}}pure Go{{end}}' ./gzmulti)"
printf '%-44s %8s s  peak %6s MB\n' "warcsum alone" "$t_sum" "$m_sum"
echo "medians of $rounds alternating rounds"
printf '%-44s %8s s  peak %6s MB  (saved %s MB)\n' "stages by hand (README's pipeline)" "$t_stages" "$m_stages" "$(mb "$saved")"
printf '%-44s %8s s  peak %6s MB  (saved %s MB)\n' "warcdedup run" "$t_run" "$m_run" "$(mb "$saved_run")"
printf '%-44s %8s s  (target <= 5.5, issue 21)\n' "warcdedup run, CPU (user + system)" "$(median_of "$work/run.cpu")"
awk -v a="$t_run" -v b="$t_stages" 'BEGIN {printf "%-44s %+7.1f%%  (limit +5%%)\n", "overhead of warcdedup run", (a / b - 1) * 100}'
awk -v a="$t_run" -v b="$t_sum" 'BEGIN {printf "%-44s %7.2fx  (limit 2.5x)\n", "warcdedup run against warcsum alone", a / b}'
printf '%-44s %8s s  peak %6s MB  (%s)\n' "warcdedup run again, nothing to do" "$t_rerun" "$m_rerun" \
	"$(awk -v a="$t_rerun" -v b="$t_run" 'BEGIN {printf "%.1f%% of the run", a / b * 100}')"
printf '%-44s %8s s  peak %6s MB  (%s MB of rewritten files, %s MB/s)\n' "warcdedup undo" "$t_undo" "$m_undo" "$(mb "$restored")" \
	"$(awk -v b="$restored" -v t="$t_undo" 'BEGIN {printf "%.0f", b / 1e6 / t}')"
