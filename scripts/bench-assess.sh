#!/usr/bin/env bash
# Measures warcdedup assess --cdx on a generated CDXJ index of 10 million
# lines (warcio.js's format, sorted by urlkey, records spread over 1000
# files, 35% of them repeating an earlier payload, with a crawl's mix of
# MIME types, statuses, revisit lines and months): lines per second, CPU
# seconds and peak memory, next to cat and wc -l of the same index. The
# peak is that of the largest process, warcdedup or the system sort it
# runs, whose buffer --sort-memory sets: the run with a small buffer shows
# what warcdedup itself holds, and the run on a tenth of the lines that it
# does not grow with them.
#
# Environment: BENCH_ASSESS_LINES (default 10000000), BENCH_DIR (kept
# between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
lines=${BENCH_ASSESS_LINES:-10000000}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/warcdedup ./scripts/cdxgen

index=$dir/assess-$lines.cdxj
small=$dir/assess-$lines-tenth.cdxj
if [ ! -f "$dir/assess-$lines.done" ]; then
	echo "generating a CDXJ index of $lines lines ..." >&2
	bin/cdxgen -lines "$lines" -files 1000 -dup 0.35 -mix -index "$index" -log /dev/null
	head -n $((lines / 10)) "$index" >"$small"
	touch "$dir/assess-$lines.done"
fi
bytes=$(stat -c %s "$index")

# cpu COMMAND... prints the CPU seconds (user + system) of COMMAND and the
# processes it waited for (the sort), which on a shared machine tell more
# than the elapsed ones.
cpu() {
	/usr/bin/time -f "%U %S" -o "$dir/cpu" "$@" >/dev/null 2>"$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
	awk '{printf "%.2f\n", $1 + $2}' "$dir/cpu"
}
row() { # label, lines, bytes, seconds, peak MB, CPU seconds
	printf "%-44s %7.2f s %10.0f lines/s %7.1f MB/s %8.1f MB peak %7.2f s CPU\n" "$1" "$4" \
		"$(awk "BEGIN{print $2/$4}")" "$(awk "BEGIN{print $3/1e6/$4}")" "$5" "$6"
}
best() { # label, lines, bytes, command... ; best of 2
	local label=$1 n=$2 size=$3 b="" bm="" bc=""
	shift 3
	for _ in 1 2; do
		rm -rf "$dir/assess-work"
		read -r t m < <(timed /dev/null "$@")
		if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t bm=$m; fi
		rm -rf "$dir/assess-work"
		c=$(cpu "$@")
		if [ -z "$bc" ] || awk "BEGIN{exit !($c < $bc)}"; then bc=$c; fi
	done
	row "$label" "$n" "$size" "$b" "$bm" "$bc"
}

echo
echo "index: $lines lines, $((bytes / 1000000)) MB; $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
best "cat" "$lines" "$bytes" cat "$index"
best "wc -l" "$lines" "$bytes" wc -l "$index"
best "assess --cdx (sort -S 64M)" "$lines" "$bytes" bin/warcdedup assess -q --cdx --sort-memory 64M --work-dir "$dir/assess-work" "$index"
best "assess --cdx (sort -S 1G)" "$lines" "$bytes" bin/warcdedup assess -q --cdx --sort-memory 1G --work-dir "$dir/assess-work" "$index"
small_bytes=$(stat -c %s "$small")
best "assess --cdx, a tenth of the lines (-S 64M)" $((lines / 10)) "$small_bytes" bin/warcdedup assess -q --cdx --sort-memory 64M --work-dir "$dir/assess-work" "$small"
bin/warcdedup assess --cdx --sort-memory 1G --work-dir "$dir/assess-work" "$index" 2>&1 | grep -E '^(indexes|duplicates|would|stages):'
rm -rf "$dir/assess-work"
