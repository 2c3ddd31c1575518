#!/usr/bin/env bash
# Measures warcrefs rewriting a generated .warc.gz of ~1 GB with 40%
# duplicate records, against cp of the same file and warcsum of it, with
# peak memory. The target is warcrefs within 1.5x of cp plus the time to read
# the rewritten records once.
#
# Environment: BENCH_SIZE_MB (default 1000), BENCH_DIR (kept between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
size_mb=${BENCH_SIZE_MB:-1000}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/... ./scripts/warcgen

src=$dir/refs-$size_mb
if [ ! -f "$src/.done" ]; then
	rm -rf "$src"
	echo "generating one ~${size_mb} MB .warc.gz with 40% duplicates ..." >&2
	bin/warcgen -o "$src" -files 1 -records $((size_mb * 1000 * 1000 / 33000)) -dup 0.4 -mean 30000 -formats warc.gz -seed 4 -collisions "" >&2
	# The numbered manifest, on digest (warcrefs --originals), and its
	# duplicate lines on file and offset (warcrefs' input).
	bin/warcsum -q -r "$src" | sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n | bin/warccollres -q -p --root "$src" >"$src/../refs-$size_mb.numbered"
	awk '$8 > 1' "$src/../refs-$size_mb.numbered" | sort -k1,1 -k2,2n >"$src/../refs-$size_mb.dups"
	touch "$src/.done"
fi
file=$(ls "$src"/*.warc.gz)
dups=$src/../refs-$size_mb.dups
numbered=$src/../refs-$size_mb.numbered
bytes=$(stat -c %s "$file")
dup_bytes=$(awk '{s += $3} END {print s}' "$dups")

work=$dir/work
best() { # label, prepare-command, command... ; best of 2
	local label=$1 prep=$2 b="" bm=""
	shift 2
	for _ in 1 2; do
		rm -rf "$work" && mkdir -p "$work" && eval "$prep"
		sync
		read -r t m < <(timed /dev/null "$@")
		if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t bm=$m; fi
	done
	printf "%-34s %7.2f s %9.1f MB/s %8.1f MB peak\n" "$label" "$b" "$(awk "BEGIN{print $bytes/1e6/$b}")" "$bm"
	last=$b
}

echo
echo "file: $((bytes / 1000000)) MB, $(wc -l <"$dups") duplicate records holding $((dup_bytes / 1000000)) MB; $(nproc) cores"
best "cp" "" cp "$file" "$work/copy.warc.gz"; t_cp=$last
best "warcsum -j 1" "" bin/warcsum -q -j 1 "$file"; t_sum=$last
best "warcrefs --output-dir" "" bin/warcrefs -q --output-dir "$work" --root "$src" --originals "$numbered" -i "$dups"; t_out=$last
best "warcrefs --in-place (on a copy)" "cp $file $work/" bin/warcrefs -q --in-place --root "$work" --originals "$numbered" -i "$dups"; t_in=$last
best "warcrefs --dry-run" "" bin/warcrefs -q --dry-run --in-place --root "$src" --originals "$numbered" -i "$dups"
t_read=$(awk "BEGIN{print $t_sum * $dup_bytes / $bytes}")
echo
printf "reading the rewritten records once (warcsum time x their share): %.2f s\n" "$t_read"
printf "target 1.5 x cp + that: %.2f s; warcrefs --output-dir took %.2f s (%.2fx cp)\n" \
	"$(awk "BEGIN{print 1.5*$t_cp + $t_read}")" "$t_out" "$(awk "BEGIN{print $t_out/$t_cp}")"
