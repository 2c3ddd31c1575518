#!/usr/bin/env bash
# Measures warccdx updating a generated CDXJ index of 10 million lines
# (warcio.js's format, sorted by urlkey, records spread over 1000 files)
# with a rewrite log that makes 30% of its records revisits: lines per
# second and peak memory, next to cat and wc -l of the same index. The
# index is read twice and what its lines point at sorted and merged with
# the log on disk (reindex/stream.go); scripts/bench-scale.sh measures
# every process of it, sort included, at two sizes.
#
# Environment: BENCH_CDX_LINES (default 10000000), BENCH_DIR (kept
# between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
lines=${BENCH_CDX_LINES:-10000000}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/warccdx ./scripts/cdxgen

index=$dir/cdx-$lines.cdxj
log=$dir/cdx-$lines.log
if [ ! -f "$dir/cdx-$lines.done" ]; then
	echo "generating a CDXJ index of $lines lines and its rewrite log ..." >&2
	bin/cdxgen -lines "$lines" -files 1000 -rewrite 0.3 -index "$index" -log "$log"
	touch "$dir/cdx-$lines.done"
fi
bytes=$(stat -c %s "$index")
entries=$(grep -vc '^#' "$log")

# cpu COMMAND... prints the CPU seconds (user + system) of COMMAND, which
# on a shared machine tell more than the elapsed ones timed gives.
cpu() {
	/usr/bin/time -f "%U %S" -o "$dir/cpu" "$@" >/dev/null 2>"$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
	awk '{printf "%.2f\n", $1 + $2}' "$dir/cpu"
}
row() { # label, seconds, peak MB, CPU seconds
	printf "%-36s %7.2f s %11.0f lines/s %8.1f MB/s %8.1f MB peak %7.2f s CPU\n" "$1" "$2" \
		"$(awk "BEGIN{print $lines/$2}")" "$(awk "BEGIN{print $bytes/1e6/$2}")" "$3" "$4"
}
best() { # label, command... ; best of 2
	local label=$1 b="" bm="" bc=""
	shift
	for _ in 1 2; do
		read -r t m < <(timed /dev/null "$@")
		if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t bm=$m; fi
		c=$(cpu "$@")
		if [ -z "$bc" ] || awk "BEGIN{exit !($c < $bc)}"; then bc=$c; fi
	done
	row "$label" "$b" "$bm" "$bc"
}

echo
echo "index: $lines lines, $((bytes / 1000000)) MB; log: $entries entries, $(stat -c %s "$log" | awk '{printf "%d", $1/1e6}') MB; $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
best "cat" cat "$index"
best "wc -l" wc -l "$index"
best "warccdx --log LOG INDEX" bin/warccdx -q --log "$log" "$index"
echo "x)/ 1 {\"offset\":\"0\",\"filename\":\"none\"}" >"$dir/one.cdxj"
best "warccdx: the log alone (1-line index)" bin/warccdx -q --log "$log" "$dir/one.cdxj"
best "warccdx with OutbackCDX batches" bin/warccdx -q --log "$log" --outbackcdx-delete "$dir/delete.cdx" --outbackcdx-add "$dir/add.cdx" "$index"
rm -f "$dir/delete.cdx" "$dir/add.cdx"
