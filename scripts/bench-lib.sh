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
	/usr/bin/time -f "%e %M" -o "$dir/time" "$@" >"$out" 2>"$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
	awk '{printf "%s %.1f\n", $1, $2/1024}' "$dir/time"
}

# The scripts build what make builds: with ISA-L when its header is
# installed. make exports GOFLAGS=-tags=isal; a script run by hand sets it
# here, so that its figures are those of the commands users install.
if [ -z "${GOFLAGS:-}" ] && [ -e /usr/include/isa-l/igzip_lib.h ]; then
	export GOFLAGS=-tags=isal
fi
