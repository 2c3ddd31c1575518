# shellcheck shell=bash
# Sourced by the bench-*.sh scripts: where the generated data lives, and
# how a command is timed.

# bench_dir sets dir to $BENCH_DIR (created, kept between runs) or to a
# temporary directory removed when the script exits.
bench_dir() {
	if [ -n "${BENCH_DIR:-}" ]; then
		dir=$BENCH_DIR
		mkdir -p "$dir"
	else
		dir=$(mktemp -d)
		trap 'rm -rf "$dir"' EXIT
	fi
}

# timed OUT COMMAND... runs COMMAND with its output to OUT and prints
# "seconds peak-MB"; on failure it shows COMMAND's stderr and exits.
timed() {
	local out=$1
	shift
	/usr/bin/time -f "%e %M %U %S" -o "$dir/time" "$@" >"$out" 2>"$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
	awk '{printf "%s %.1f\n", $1, $2/1024}' "$dir/time"
}

# watch_space DIR samples, every 0.2 s until space_peak, how much more of
# DIR's file system is used than now (a job's work space: the new
# versions beside the files, the copies of WACZ members, the packages
# written anew); space_peak stops it and prints the peak in MB.
watch_space() {
	local base
	base=$(df -B1 --output=used "$1" | tail -1)
	echo 0 >"$dir/space"
	(
		peak=0
		while :; do
			used=$(df -B1 --output=used "$1" | tail -1)
			if [ $((used - base)) -gt "$peak" ]; then
				peak=$((used - base))
				echo "$peak" >"$dir/space"
			fi
			sleep 0.2
		done
	) &
	space_pid=$!
}
space_peak() {
	kill "$space_pid" 2>/dev/null
	wait "$space_pid" 2>/dev/null || true
	awk '{printf "%.1f\n", $1 / 1e6}' "$dir/space"
}

# cpu_seconds prints the CPU seconds (user + system, children included) of
# the last command timed ran: on a shared machine they move less with load
# than the elapsed seconds.
cpu_seconds() {
	awk '{printf "%.2f\n", $3 + $4}' "$dir/time"
}

# median_of FILE prints the median of the numbers in FILE's first column.
median_of() {
	sort -n "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

# The scripts build what make builds: with ISA-L when its header is
# installed. make exports GOFLAGS=-tags=isal; a script run by hand sets it
# here, so that its figures are those of the commands users install.
if [ -z "${GOFLAGS:-}" ] && [ -e /usr/include/isa-l/igzip_lib.h ]; then
	export GOFLAGS=-tags=isal
fi

# run_collection sets src to the collection the whole job is measured on
# (bench-run.sh, bench-warchaeology.sh: the same files, generated once per
# BENCH_DIR): about size_mb of .warc.gz in 16 files, 40% duplicates, mean
# payload 30 KB; and bytes to its size. The caller sets size_mb and has
# warcgen on PATH.
run_collection() {
	# shellcheck disable=SC2154 # size_mb is the caller's
	src=$dir/run-src-$size_mb
	if [ ! -f "$src/.done" ]; then
		rm -rf "$src"
		echo "generating ~${size_mb} MB of .warc.gz with 40% duplicates ..." >&2
		warcgen -o "$src" -files 16 -records $((size_mb * 1000 * 1000 / 33000)) -dup 0.4 -mean 30000 \
			-formats warc.gz,warc1.1.gz -seed 9 -collisions "" >&2
		touch "$src/.done"
	fi
	# shellcheck disable=SC2034 # bytes is the caller's
	bytes=$(du -sb --exclude=.done "$src" | cut -f1)
}

# fresh NAME makes a copy of the collection at $work/NAME.
fresh() {
	rm -rf "${work:?}/$1"
	cp -a "$src" "$work/$1"
	rm -f "$work/$1/.done"
}
