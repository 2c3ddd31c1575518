#!/usr/bin/env bash
# Measures warcdedup run on a collection of WACZ packages against the same
# WARC bytes as plain files (issue 23: within 1.2x the time, the same bytes
# saved). warcgen writes BENCH_SIZE_MB (default 1000) of .warc.gz, 40%
# duplicates, mean payload 30 KB, in 16 files, packaged as 8 WACZ files of
# 4 crawls (-wacz 8 -crawls 4, ZipNum and plain CDXJ indexes in turn) with
# the WARC files kept: the packages go to wacz/, the WARC files to plain/,
# so both runs read the same WARC bytes.
#
# BENCH_ROUNDS (default 3) alternating rounds, each on fresh copies made
# before its clock starts; medians. The work space of each run (how much
# more of the file system it used at its peak than before: new versions,
# the copies of WACZ members, the packages written anew) is sampled every
# 0.2 s. Saved bytes: the directory's size
# before less after, and for WACZ also the WARC members' bytes (from
# datapackage.json), which must equal the plain run's saving but for the
# WARC-Refers-To-Container field of revisits across packages (within 0.1%).
# Environment: BENCH_SIZE_MB, BENCH_DIR (kept between runs: generation is
# slow), BENCH_JOBS (default: the number of CPUs), BENCH_ROUNDS;
# BENCH_INDEX=1 runs both as a crawl with a crawl index (run --index, a
# fresh index each run: the crawl's commit records its files' SHA-256).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
size_mb=${BENCH_SIZE_MB:-1000}
jobs=${BENCH_JOBS:-$(nproc)}
rounds=${BENCH_ROUNDS:-3}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/warcdedup ./scripts/warcgen
export PATH=$PWD/bin:$PATH

src=$dir/wacz-src-$size_mb
if [ ! -f "$src/.done" ]; then
	rm -rf "$src"
	echo "generating ~${size_mb} MB of .warc.gz with 40% duplicates, packaged as 8 WACZ files ..." >&2
	warcgen -o "$src/gen" -files 16 -records $((size_mb * 1000 * 1000 / 23000)) -dup 0.4 -mean 30000 \
		-formats warc.gz,warc1.1.gz -seed 23 -collisions "" -sequential \
		-wacz 8 -crawls 4 -wacz-index mixed -wacz-keep-warcs -prefix bt >&2
	mkdir -p "$src/wacz" "$src/plain"
	mv "$src"/gen/*.wacz "$src/wacz/"
	mv "$src"/gen/*.warc.gz "$src/plain/"
	rmdir "$src/gen"
	touch "$src/.done"
fi
plain_bytes=$(du -sb "$src/plain" | cut -f1)
wacz_bytes=$(du -sb "$src/wacz" | cut -f1)

# members_bytes DIR: the bytes of every package's WARC members, as its
# datapackage.json lists them.
members_bytes() {
	python3 - "$1" <<'PY'
import json, pathlib, sys, zipfile
total = 0
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.wacz")):
    with zipfile.ZipFile(p) as z:
        for r in json.loads(z.read("datapackage.json"))["resources"]:
            if r["path"].startswith("archive/"):
                total += r["bytes"]
print(total)
PY
}
members_before=$(members_bytes "$src/wacz")

work=$dir/wacz-work
rm -rf "$work"
mkdir -p "$work"
fresh() {
	rm -rf "${work:?}/$1" "$work/$1.warcdedup" "$work/$1.index"
	cp -a "$src/$1" "$work/$1"
}
# index_args KIND: the run's crawl index, with BENCH_INDEX=1.
index_args() {
	if [ "${BENCH_INDEX:-0}" = 1 ]; then
		echo --index "$work/$1.index"
	fi
}
: >"$work/plain.times"
: >"$work/wacz.times"
: >"$work/plain.cpu"
: >"$work/wacz.cpu"
: >"$work/plain.space"
: >"$work/wacz.space"
load() { cut -d' ' -f1-3 /proc/loadavg; }
# stage_time NAME: how long the last run's stage took, as it said.
stage_time() { grep -o "$1: done in .*" "$dir/stderr" | tail -1 | sed 's/.*done in //'; }
for round in $(seq "$rounds"); do
	echo "round $round of $rounds (load $(load)) ..." >&2
	fresh plain
	watch_space "$work"
	timed /dev/null warcdedup run -j "$jobs" --work-dir "$work/plain.warcdedup" $(index_args plain) "$work/plain" >>"$work/plain.times"
	space_peak >>"$work/plain.space"
	cpu_seconds >>"$work/plain.cpu"
	rewrite_plain=$(stage_time rewrite)
	saved_plain=$((plain_bytes - $(du -sb "$work/plain" | cut -f1)))
	fresh wacz
	watch_space "$work"
	timed /dev/null warcdedup run -j "$jobs" --work-dir "$work/wacz.warcdedup" $(index_args wacz) "$work/wacz" >>"$work/wacz.times"
	space_peak >>"$work/wacz.space"
	cpu_seconds >>"$work/wacz.cpu"
	rewrite_wacz=$(stage_time rewrite)
	saved_wacz=$((wacz_bytes - $(du -sb "$work/wacz" | cut -f1)))
	saved_members=$((members_before - $(members_bytes "$work/wacz")))
	echo "  plain $(tail -1 "$work/plain.times" | cut -d' ' -f1) s, $(tail -1 "$work/plain.cpu") CPU s (rewrite stage $rewrite_plain), WACZ $(tail -1 "$work/wacz.times" | cut -d' ' -f1) s, $(tail -1 "$work/wacz.cpu") CPU s (rewrite stage $rewrite_wacz) (load $(load))" >&2
	# A revisit whose original is in another package carries
	# WARC-Refers-To-Container (about 40 bytes): the savings may differ by
	# that much a revisit, never by more than 0.1%.
	if ! awk -v a="$saved_members" -v b="$saved_plain" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(d <= b / 1000)}'; then
		echo "the WACZ run saved $saved_members bytes of WARC members, the plain run $saved_plain bytes" >&2
		exit 1
	fi
done
median() { sort -n -k1,1 "$1" | awk '{t[NR] = $1; m[NR] = $2} END {i = int((NR + 1) / 2); print t[i], m[i]}'; }
read -r t_plain m_plain < <(median "$work/plain.times")
read -r t_wacz m_wacz < <(median "$work/wacz.times")

mb() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1e6}'; }
echo "collection: $(mb "$plain_bytes") MB of .warc.gz in 16 files; as 8 WACZ files of 4 crawls: $(mb "$wacz_bytes") MB; -j $jobs; inflater: $(go list -f '{{if .CgoFiles}}ISA-L{{else}}pure Go{{end}}' ./gzmulti); load at the end $(load)"
echo "medians of $rounds alternating rounds (saved: the directory's bytes before less after)"
printf '%-40s %8s s  peak %6s MB  (saved %s MB; work space at the peak %s MB)\n' "warcdedup run, plain WARC files" "$t_plain" "$m_plain" "$(mb "$saved_plain")" "$(median_of "$work/plain.space")"
printf '%-40s %8s s  peak %6s MB  (saved %s MB; WARC members %s MB, %+d bytes against plain; work space at the peak %s MB)\n' "warcdedup run, WACZ packages" "$t_wacz" "$m_wacz" "$(mb "$saved_wacz")" "$(mb "$saved_members")" $((saved_members - saved_plain)) "$(median_of "$work/wacz.space")"
awk -v a="$t_wacz" -v b="$t_plain" -v ca="$(median_of "$work/wacz.cpu")" -v cb="$(median_of "$work/plain.cpu")" \
	'BEGIN {printf "%-40s %7.2fx  (issue 23: within 1.2x); CPU seconds (user + system) %.2f against %.2f: %.2fx\n", "WACZ against plain WARC", a / b, ca, cb, ca / cb}'
