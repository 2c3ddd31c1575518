#!/usr/bin/env bash
# Converts every ARC file of a directory to WARC and checks each conversion:
# `arc2warc --check` reads each ARC and its WARC independently of the
# converter and compares them record by record (type, URI, date, block byte
# for byte) and, as the WARCrefs paper does, warcsum of both in order
# (warcsumcmp --order). A conversion that left out, changed or could not
# read anything the ARC holds fails.
#
#   scripts/arc2warc-check.sh [--no-convert] ARC-DIR WARC-DIR [arc2warc flags...]
#
# --no-convert checks the WARC files already in WARC-DIR. A conversion with
# --drop-truncated fails the check: the records it left out are lost. Prints one line
# per ARC file on stdout and each problem on stderr; exits 0 if every
# conversion is complete, 1 if any is not, 2 if the conversion or the check
# could not run.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
PATH="$here/bin:$PATH"
convert=1
if [ "${1:-}" = --no-convert ]; then
	convert=0
	shift
fi
if [ $# -lt 2 ]; then
	echo "usage: arc2warc-check.sh [--no-convert] ARC-DIR WARC-DIR [arc2warc flags...]" >&2
	exit 2
fi
arcs=$1 warcs=$2
shift 2
if [ $convert = 1 ]; then
	# Exit status 1 (damage, truncated records) is for the check to judge.
	arc2warc -q -r -o "$warcs" "$@" "$arcs"
	[ $? -ge 2 ] && exit 2
fi
arc2warc -q -r --check -o "$warcs" "$@" "$arcs"
