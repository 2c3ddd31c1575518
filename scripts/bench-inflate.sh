#!/usr/bin/env bash
# Measures warcsum against the limit of its work, in one run, on two generated
# collections (one gzip member per record): typical ~30 KB and small ~4 KB
# payloads, each over 1 GB uncompressed. Side by side, alternating, several
# rounds, medians:
#   C loop              scripts/inflatehash-c: ISA-L inflate + OpenSSL digest
#                       of every response payload, nothing else (the limit)
#   warcsum isal -j 1   the ISA-L build (-tags isal)
#   warcsum go -j 1     the pure-Go build
#   orig                (sha1 only) the original C warcsum (arcalex, zlib
#                       inflate + OpenSSL), built by scripts/warcsum-orig.sh
#                       from its git mirror; no row when that cannot build
#   warcsum isal -j 2   (sha1 only) for the two-core scaling, and beside it
#   C loop x2           two C loops at once, on half the files each
# Targets: warcsum isal -j 1 >= 0.85x the C loop on 30 KB records and >= 0.75x
# on 4 KB records (sha1); -j 2 >= 1.85x -j 1; peak memory < 100 MB, also on a
# file holding one huge payload.
#
# Needs gcc, libisal-dev and libssl-dev (the C loop, the ISA-L build), and
# zlib1g-dev for the original warcsum.
# Environment: BENCH_SIZE_MB (uncompressed size of each collection, default
# 1300), BENCH_ROUNDS (default 5), BENCH_ALGOS (default "sha1 md5 sha256"),
# BENCH_HUGE (payload bytes of the memory check, default 2147483648; 0 skips
# it), BENCH_DIR (kept between runs; default a temporary directory),
# BENCH_EXTRA="label=command" (one more sha1 row, e.g. another build of
# warcsum; its files follow the command).
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-1300}
rounds=${BENCH_ROUNDS:-5}
algos=${BENCH_ALGOS:-sha1 md5 sha256}
huge=${BENCH_HUGE:-2147483648}
. scripts/bench-lib.sh

for need in /usr/include/isa-l/igzip_lib.h /usr/include/openssl/evp.h; do
	if [ ! -e $need ]; then
		echo "bench-inflate: $need missing: apt-get install libisal-dev libssl-dev" >&2
		exit 1
	fi
done
bench_dir

mkdir -p bin
cc -O2 -Wall -o bin/inflatehash-c scripts/inflatehash-c/inflatehash.c -lisal -lcrypto
# make exports GOFLAGS=-tags=isal: each build says its own tags.
GOFLAGS= go build -tags isal -o bin/warcsum-isal ./cmd/warcsum
GOFLAGS= go build -o bin/warcsum-go ./cmd/warcsum
GOFLAGS= go build -o bin/ ./scripts/warcgen
if ! ldd bin/warcsum-isal | grep -q libisal || ldd bin/warcsum-go | grep -q libisal; then
	echo "bench-inflate: the builds do not hold the inflaters they are named after" >&2
	exit 1
fi
# The original warcsum, when its mirrors are here and it builds. It hashes
# only sha1 on these collections (their header digests are sha1; see
# scripts/warcsum-orig.sh), so it is a sha1 row only.
orig=$(scripts/warcsum-orig.sh "$dir/warcsum-orig") || {
	echo "bench-inflate: no original warcsum row (scripts/warcsum-orig.sh exit $?)" >&2
	orig=
}
export orig

# generate NAME MEAN RECORDS: a collection of about size_mb uncompressed.
generate() {
	local coll=$dir/inflate-$1-$size_mb
	if [ ! -f "$coll/.done" ]; then
		rm -rf "$coll"
		echo "generating ~${size_mb} MB of ~$1 records in $coll ..." >&2
		bin/warcgen -o "$coll" -files 8 -records "$3" -mean "$2" -formats warc.gz -seed 1 -collisions "" >&2
		touch "$coll/.done"
	fi
}
# Records per collection: warcgen writes about 30.0 KB per listed response
# (with its request and the records not listed) at a 30 KB mean and 5.4 KB
# at a 4 KB mean.
generate 30KB 30000 $((size_mb * 1000 * 1000 / 30000))
generate 4KB 4000 $((size_mb * 1000 * 1000 / 5400))

# run LABEL COMMAND...: one timed run; appends "label seconds peak-MB
# cpu-seconds" to runs. The CPU seconds (user and system, all threads) say
# less about speed than the seconds, but other tenants of the machine change
# them less.
run() {
	local label=$1
	shift
	/usr/bin/time -f "%e %M %U %S" -o "$dir/time" "$@" >/dev/null 2>"$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
	awk -v l="$label" '{printf "%s %s %.1f %.2f\n", l, $1, $2/1024, $3+$4}' "$dir/time" >>"$dir/runs"
}

# halves FILES...: runs the C loop on the first and the second half of the
# files at once, as two processes: what the machine gives two cores' worth
# of the same work at that moment, the yardstick of warcsum -j 2.
halves() {
	local n=$(($# / 2))
	bin/inflatehash-c "${@:1:n}" >/dev/null &
	bin/inflatehash-c "${@:n+1}" >/dev/null
	wait
}
export -f halves

# origsum FILES...: the original warcsum on each file in turn (it takes one
# input file), appending (-a) as every run names the same output.
origsum() {
	local f
	for f; do
		"$orig" -q -a -H sha1 -i "$f" -o /dev/stdout
	done
}
export -f origsum

# median of the numbers on stdin.
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

: >"$dir/runs"
for coll in 30KB 4KB; do
	files=("$dir/inflate-$coll-$size_mb"/*.warc.gz)
	for r in $(seq "$rounds"); do
		echo "round $r of $rounds, $coll records ..." >&2
		for algo in $algos; do
			# The order of the contenders changes from round to round.
			contenders=(c isal go)
			[ "$algo" = sha1 ] && [ -n "$orig" ] && contenders+=(orig)
			[ $((r % 2)) = 0 ] && mapfile -t contenders < <(printf '%s\n' "${contenders[@]}" | tac)
			for who in "${contenders[@]}"; do
				case $who in
				c) run "$coll $algo C-loop" bin/inflatehash-c -H "$algo" "${files[@]}" ;;
				isal) run "$coll $algo isal-j1" bin/warcsum-isal -j 1 -H "$algo" "${files[@]}" ;;
				go) run "$coll $algo go-j1" bin/warcsum-go -j 1 -H "$algo" "${files[@]}" ;;
				orig) run "$coll $algo orig" bash -c 'origsum "$@"' _ "${files[@]}" ;;
				esac
			done
			if [ "$algo" = sha1 ]; then
				run "$coll $algo isal-j2" bin/warcsum-isal -j 2 -H "$algo" "${files[@]}"
				run "$coll $algo C-loop-x2" bash -c 'halves "$@"' _ "${files[@]}"
				if [ -n "${BENCH_EXTRA:-}" ]; then
					# shellcheck disable=SC2086 # the command is words
					run "$coll $algo ${BENCH_EXTRA%%=*}" ${BENCH_EXTRA#*=} "${files[@]}"
				fi
			fi
		done
	done
done

# stat COLL ALGO WHO secs|mb|cpu: the median seconds, peak MB or CPU
# seconds of those runs.
stat() {
	local f=4
	[ "$4" = mb ] && f=5
	[ "$4" = cpu ] && f=6
	awk -v k="$1 $2 $3" -v f=$f '$1" "$2" "$3==k {print $f}' "$dir/runs" | median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }

echo
echo "medians of $rounds alternating rounds; MB/s of uncompressed bytes; $(nproc) cores"
for coll in 30KB 4KB; do
	read -r _ comp _ uncomp _ _ _ members _ payloads _ < <(bin/inflatehash-c "$dir/inflate-$coll-$size_mb"/*.warc.gz)
	echo
	echo "$coll records: $((comp / 1000000)) MB compressed, $((uncomp / 1000000)) MB uncompressed, $members members, $payloads payloads"
	printf "%-8s %-14s %8s %8s %12s %8s %8s\n" digest "" seconds "MB/s" "vs C loop" "peak MB" "CPU s"
	for algo in $algos; do
		c=$(stat $coll $algo C-loop secs)
		whos="C-loop isal-j1 go-j1"
		[ "$algo" = sha1 ] && whos="$whos${orig:+ orig} isal-j2 C-loop-x2${BENCH_EXTRA:+ ${BENCH_EXTRA%%=*}}"
		for who in $whos; do
			s=$(stat $coll $algo "$who" secs)
			printf "%-8s %-14s %8.2f %8.0f %12s %8.1f %8.2f\n" "$algo" "$who" "$s" "$(awk -v u="$uncomp" -v s="$s" 'BEGIN{print u/1e6/s}')" \
				"$(ratio "$c" "$s")x" "$(stat $coll $algo "$who" mb)" "$(stat $coll $algo "$who" cpu)"
		done
	done
done

echo
echo "targets (sha1):"
for coll in 30KB 4KB; do
	want=0.85
	[ $coll = 4KB ] && want=0.75
	got=$(ratio "$(stat $coll sha1 C-loop secs)" "$(stat $coll sha1 isal-j1 secs)")
	cpu=$(ratio "$(stat $coll sha1 C-loop cpu)" "$(stat $coll sha1 isal-j1 cpu)")
	echo "  $coll: warcsum isal -j 1 at ${got}x the C loop (target >= ${want}x): $(awk -v g="$got" -v w="$want" 'BEGIN{print ((g >= w) ? "met" : "NOT met")}');" \
		"in CPU seconds ${cpu}x"
	got=$(ratio "$(stat $coll sha1 isal-j1 secs)" "$(stat $coll sha1 isal-j2 secs)")
	machine=$(ratio "$(stat $coll sha1 C-loop secs)" "$(stat $coll sha1 C-loop-x2 secs)")
	echo "  $coll: warcsum isal -j 2 at ${got}x -j 1 (target >= 1.85x): $(awk -v g="$got" 'BEGIN{print ((g >= 1.85) ? "met" : "NOT met")}');" \
		"two C loops at once: ${machine}x one"
done
peak=$(awk '$3 ~ /^(isal|go)-j/ && $5 > m {m = $5} END {print m}' "$dir/runs")
echo "  peak memory of warcsum on these collections: ${peak} MB (target < 100 MB)"

if [ "$huge" != 0 ]; then
	# The same file as bench-warcsum.sh's, shared through BENCH_DIR.
	if [ ! -f "$dir/huge/.done-$huge" ]; then
		rm -rf "$dir/huge"
		echo "generating a file with one ${huge}-byte payload ..." >&2
		bin/warcgen -o "$dir/huge" -files 1 -records 4 -huge "$huge" -formats warc.gz -seed 2 -collisions "" >&2
		touch "$dir/huge/.done-$huge"
	fi
	for b in isal go; do
		read -r secs mb < <(timed /dev/null bin/warcsum-$b -j 1 "$dir"/huge/*.warc.gz)
		echo "  one ${huge}-byte payload, warcsum $b: $secs s, peak $mb MB (target < 100 MB)"
	done
fi
