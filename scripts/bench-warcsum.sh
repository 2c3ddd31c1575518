#!/usr/bin/env bash
# Measures warcsum against its floors on a generated collection, in one run:
#   zcat | sha1sum        the shell floor (zlib inflate and sha1sum, two processes)
#   inflatehash           a bare klauspost inflate + SHA-1 loop, one thread
#   warcsum -j 1, -j 2    the real thing
# and warcsum's peak memory on a file holding one huge payload.
#
# Environment: BENCH_SIZE_MB (about the uncompressed size, default 1300), BENCH_DIR
# (where the collection is generated and kept between runs; default a
# temporary directory removed at the end), BENCH_HUGE (payload bytes of the
# memory check, default 2147483648; 0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-1300}
huge=${BENCH_HUGE:-2147483648}
. scripts/bench-lib.sh
bench_dir

go build -o bin/ ./cmd/warcsum ./scripts/warcgen ./scripts/inflatehash

# Realistic mix: mean payload ~30 KB, one gzip member per record.
records=$((size_mb * 1000 * 1000 / 33000))
if [ ! -f "$dir/coll/.done-$size_mb" ]; then
	rm -rf "$dir/coll"
	echo "generating ~${size_mb} MB (${records} responses) in $dir/coll ..." >&2
	bin/warcgen -o "$dir/coll" -files 8 -records "$records" -mean 30000 -formats warc.gz -seed 1 -collisions "" >&2
	touch "$dir/coll/.done-$size_mb"
fi
files=("$dir"/coll/*.warc.gz)

read -r _ comp _ uncomp _ _ _ _ < <(bin/inflatehash "${files[@]}")

measure() { # label, command...
	local label=$1 best=""
	shift
	for _ in 1 2; do
		/usr/bin/time -f "%e %M" -o "$dir/time" "$@" >/dev/null 2>"$dir/stderr" || { cat "$dir/stderr" >&2; return 1; }
		read -r secs rss <"$dir/time"
		if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs best_rss=$rss; fi
	done
	records_read=$(awk '/^records:/{print $2}' "$dir/stderr")
	printf "%-22s %7.2f s %9.1f %9.1f %10s %8.1f\n" "$label" "$best" \
		"$(awk "BEGIN{print $comp/1e6/$best}")" "$(awk "BEGIN{print $uncomp/1e6/$best}")" \
		"${records_read:+$(awk "BEGIN{printf \"%d\", $records_read/$best}")}" "$(awk "BEGIN{print $best_rss/1024}")"
}

echo
echo "collection: ${#files[@]} files, $((comp / 1000000)) MB compressed, $((uncomp / 1000000)) MB uncompressed; $(nproc) cores"
printf "%-22s %9s %9s %9s %10s %8s\n" "" "time" "MB/s gz" "MB/s raw" "records/s" "peak MB"
measure "zcat | sha1sum" bash -c 'zcat "$@" | sha1sum' _ "${files[@]}"
measure "inflate+sha1 (Go)" bin/inflatehash "${files[@]}"
measure "warcsum -j 1" bin/warcsum -j 1 "${files[@]}"
measure "warcsum -j 2" bin/warcsum -j 2 "${files[@]}"

if [ "$huge" != 0 ]; then
	if [ ! -f "$dir/huge/.done-$huge" ]; then
		rm -rf "$dir/huge"
		echo "generating a file with one ${huge}-byte payload ..." >&2
		bin/warcgen -o "$dir/huge" -files 1 -records 4 -huge "$huge" -formats warc.gz -seed 2 -collisions "" >&2
		touch "$dir/huge/.done-$huge"
	fi
	read -r _ comp _ uncomp _ _ _ _ < <(bin/inflatehash "$dir"/huge/*.warc.gz)
	echo "huge-payload file: $((comp / 1000000)) MB compressed, $((uncomp / 1000000)) MB uncompressed"
	measure "warcsum, huge payload" bin/warcsum -j 1 "$dir"/huge/*.warc.gz
fi
