#!/usr/bin/env bash
# Measures a crawl index (issue 10):
#
#  1. An incremental run: a new crawl of ~BENCH_NEW_MB (default 1000)
#     deduplicated with warcdedup run --index against an index built from
#     BENCH_EARLIER crawls of that size (default 10: ~10 GB), against the
#     same crawl run alone (no index). The limit is 1.3x. Printed: both
#     times, their ratio, the join and commit stages' shares (the commit:
#     a run per partition the crawl touches, then any compaction), the
#     index's size on disk and per original, and its runs.
#  2. A rerun of the committed crawl (nothing to do): its time against the
#     first run's (the limit is 5%).
#  3. warcdedup index import of a generated CDXJ of BENCH_IMPORT_LINES
#     (default 10 million) lines: time, lines/s and peak memory.
#
# The crawls come from one warcgen collection laid out in time (-sequential)
# with payloads shared across crawls, four files per crawl.
#
# Environment: BENCH_NEW_MB, BENCH_EARLIER, BENCH_IMPORT_LINES, BENCH_DIR
# (kept between runs: generation is slow). The index at 10^8 originals,
# commit by commit: scripts/bench-index-scale.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
size_mb=${BENCH_NEW_MB:-1000}
earlier=${BENCH_EARLIER:-10}
import_lines=${BENCH_IMPORT_LINES:-10000000}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/warcdedup ./scripts/warcgen ./scripts/cdxgen

crawls=$((earlier + 1))
files=$((crawls * 4))
src=$dir/index-src-$size_mb-$earlier
if [ ! -f "$src/.done" ]; then
	rm -rf "$src"
	echo "generating $crawls crawls of ~${size_mb} MB ..." >&2
	bin/warcgen -o "$src/gen" -files $files -records $((crawls * size_mb * 1000 * 1000 / 33000)) -dup 0.4 -mean 30000 \
		-formats warc.gz,warc1.1.gz -sequential -crossfile 0.9 -seed 7 -collisions "" >&2
	for c in $(seq 0 $((crawls - 1))); do
		mkdir -p "$src/crawl-$(printf %02d "$c")"
		for f in $(seq $((c * 4)) $((c * 4 + 3))); do
			mv "$src"/gen/gen-$(printf %05d "$f").* "$src/crawl-$(printf %02d "$c")/"
		done
	done
	rmdir "$src/gen" 2>/dev/null || true
	touch "$src/.done"
fi
new=crawl-$(printf %02d "$earlier")

index=$dir/index-$size_mb-$earlier
if [ ! -f "$index/.done" ]; then
	rm -rf "$index" "$dir/index-crawls"
	mkdir -p "$dir/index-crawls"
	echo "building the index from $earlier crawls ..." >&2
	for c in $(seq 0 $((earlier - 1))); do
		name=crawl-$(printf %02d "$c")
		cp -a "$src/$name" "$dir/index-crawls/"
		bin/warcdedup run -q --index "$index" "$dir/index-crawls/$name"
	done
	touch "$index/.done"
fi

echo
echo "new crawl: $(du -sm "$src/$new" | cut -f1) MB; index of $earlier crawls: $(du -sm "$dir/index-crawls" | cut -f1) MB of files; $(nproc) cores"
# A copy of the index and of the new crawl for each measured run.
rm -rf "$dir/alone" "$dir/incr" "$dir/incr-index"
cp -a "$src/$new" "$dir/alone"
read -r t_alone m_alone < <(timed /dev/null bin/warcdedup run -q --work-dir "$dir/alone.work" "$dir/alone")
cp -a "$src/$new" "$dir/incr"
cp -a "$index" "$dir/incr-index"
read -r t_incr m_incr < <(timed /dev/null bin/warcdedup run -q --index "$dir/incr-index" --crawl "$new" "$dir/incr")
stage() {
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(s.get("took_ns",0) for s in r["stages"] if s["name"]==sys.argv[2])/1e9)' "$dir/incr-index/work/$new/stats.json" "$1"
}
join=$(stage "join the index")
commit=$(stage commit)
gen=$(cat "$dir/incr-index/CURRENT")
originals=$(cat "$index"/"$(cat "$index/CURRENT")"/originals/*.manifest | wc -l)
runs=$(find "$index/$(cat "$index/CURRENT")/originals" -name '*.manifest' | wc -l)
index_bytes=$(du -sb "$index/$(cat "$index/CURRENT")" | cut -f1)
printf "%-44s %8.2f s %8.1f MB peak\n" "run of the new crawl alone" "$t_alone" "$m_alone"
printf "%-44s %8.2f s %8.1f MB peak\n" "run --index against the $earlier earlier crawls" "$t_incr" "$m_incr"
printf "ratio: %.2fx (limit 1.3x); join stage %.2f s, commit stage %.2f s\n" "$(awk "BEGIN{print $t_incr/$t_alone}")" "$join" "$commit"
printf "index before the new crawl: %d originals in %d runs, %.1f MB (%d bytes per original); after: %s\n" \
	"$originals" "$runs" "$(awk "BEGIN{print $index_bytes/1e6}")" $((index_bytes / originals)) "$gen"

read -r t_rerun m_rerun < <(timed /dev/null bin/warcdedup run -q --index "$dir/incr-index" --crawl "$new" "$dir/incr")
printf "%-44s %8.2f s %8.1f MB peak (%.1f%% of the run; limit 5%%)\n" "rerun of the committed crawl" "$t_rerun" "$m_rerun" \
	"$(awk "BEGIN{print 100*$t_rerun/$t_incr}")"

cdxj=$dir/import-$import_lines.cdxj
if [ ! -f "$cdxj.done" ]; then
	echo "generating a CDXJ of $import_lines lines ..." >&2
	bin/cdxgen -lines "$import_lines" -files 1000 -rewrite 0 -index "$cdxj" -log /dev/null
	touch "$cdxj.done"
fi
rm -rf "$dir/import-index"
read -r t_imp m_imp < <(timed /dev/null bin/warcdedup index import -q --sort-memory 64M --index "$dir/import-index" --crawl imported --location "$dir/nowhere" "$cdxj")
printf "%-44s %8.2f s %8.1f MB peak, %.0f lines/s\n" "index import of $import_lines CDXJ lines (sort -S 64M)" "$t_imp" "$m_imp" \
	"$(awk "BEGIN{print $import_lines/$t_imp}")"
