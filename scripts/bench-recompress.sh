#!/usr/bin/env bash
# Measures the tools for files whose gzip members are not records: a
# generated WARC and ARC of ~1 GB each (inflated), compressed as one gzip
# member (gzip -6, as `gzip x.warc` leaves them). Times and peak memory of
# warcrecompress (its deflate, and its check of the new version), of
# arc2warc on the whole-file gzip ARC and of arc2warc --check, against gzip
# itself: gzip -dc (inflate only) and gzip -6 (deflate only).
#
# BENCH_HUGE=1G adds a row: warcrecompress on a whole-file gzip WARC holding
# one payload of that size, for its peak memory.
#
# Environment: BENCH_SIZE_MB (default 1000), BENCH_HUGE, BENCH_DIR (kept
# between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
size_mb=${BENCH_SIZE_MB:-1000}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/... ./scripts/warcgen

src=$dir/recompress-$size_mb
if [ ! -f "$src/.done" ]; then
	rm -rf "$src"
	echo "generating a ~${size_mb} MB WARC and ARC, each gzipped whole ..." >&2
	for f in warc arc; do
		bin/warcgen -o "$src/gen-$f" -files 1 -records $((size_mb * 1000 * 1000 / 33000)) -dup 0.3 -mean 30000 -formats $f -seed 5 -collisions "" >&2
		gzip -6 -c "$src/gen-$f"/*.$f >"$src/whole.$f.gz"
	done
	touch "$src/.done"
fi
warc=$src/whole.warc.gz arc=$src/whole.arc.gz
inflated=$(gzip -dc "$warc" | wc -c)

work=$dir/work
best() { # label, prepare-command, command... ; best of 2, MB/s of the inflated WARC
	local label=$1 prep=$2 b="" bm=""
	shift 2
	for _ in 1 2; do
		rm -rf "$work" && mkdir -p "$work" && eval "$prep"
		read -r t m < <(timed /dev/null "$@")
		if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t bm=$m; fi
	done
	printf "%-40s %7.2f s %8.1f MB/s %8.1f MB peak\n" "$label" "$b" "$(awk "BEGIN{print $inflated/1e6/$b}")" "$bm"
}

echo
echo "WARC: $(($(stat -c %s "$warc") / 1000000)) MB gzipped whole, $((inflated / 1000000)) MB inflated; ARC: $(($(stat -c %s "$arc") / 1000000)) MB; $(nproc) cores"
best "gzip -dc (inflate)" "" gzip -dc "$warc"
best "gzip -dc | gzip -6 (inflate + deflate)" "" sh -c "gzip -dc '$warc' | gzip -6"
best "warcrecompress --dry-run" "" bin/warcrecompress -q --dry-run "$warc"
best "warcrecompress -o (write + check)" "" bin/warcrecompress -q -o "$work" "$warc"
best "arc2warc, whole-file gzip ARC" "" bin/arc2warc -q -o "$work" "$arc"
best "arc2warc --check" 'bin/arc2warc -q -o "$work" "$arc"' bin/arc2warc -q --check -o "$work" "$arc"

if [ -n "${BENCH_HUGE:-}" ]; then
	huge=$dir/recompress-huge-$BENCH_HUGE
	if [ ! -f "$huge/.done" ]; then
		rm -rf "$huge"
		bin/warcgen -o "$huge/gen" -files 1 -records 20 -huge "$BENCH_HUGE" -formats warc -seed 6 -collisions "" >&2
		gzip -1 -c "$huge"/gen/*.warc >"$huge/whole.warc.gz"
		rm -rf "$huge/gen"
		touch "$huge/.done"
	fi
	inflated=$(gzip -dc "$huge/whole.warc.gz" | wc -c)
	best "warcrecompress -o, one ${BENCH_HUGE} payload" "" bin/warcrecompress -q -o "$work" "$huge/whole.warc.gz"
fi
