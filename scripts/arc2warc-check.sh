#!/usr/bin/env bash
# Converts every ARC file of a directory to WARC and checks each conversion
# the way the WARCrefs paper does (step 4): warcsum over the ARC and over
# the WARC, compared record by record in order with warcsumcmp --order.
# Prints one line per file and exits 1 if any file does not match.
#
#   scripts/arc2warc-check.sh ARC-DIR WARC-DIR [arc2warc flags...]
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")/.." && pwd)
PATH="$here/bin:$PATH"
if [ $# -lt 2 ]; then
	echo "usage: arc2warc-check.sh ARC-DIR WARC-DIR [arc2warc flags...]" >&2
	exit 2
fi
arcs=$1 warcs=$2
shift 2
arc2warc -q -r -o "$warcs" "$@" "$arcs"
convert_status=$?
[ $convert_status -ge 2 ] && exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=$convert_status
while IFS= read -r arc; do
	rel=${arc#"$arcs"/}
	base=${rel%.[gG][zZ]}
	base=${base%.[aA][rR][cC]}
	warc=$(ls "$warcs/$base".warc* 2>/dev/null | head -1)
	if [ -z "$warc" ]; then
		echo "$rel: NOT CONVERTED"
		status=1
		continue
	fi
	warcsum -q "$arc" >"$tmp/arc" 2>/dev/null
	warcsum -q "$warc" >"$tmp/warc" 2>/dev/null
	if warcsumcmp -q --order "$tmp/arc" "$tmp/warc" >"$tmp/violations"; then
		echo "$rel: OK, $(wc -l <"$tmp/arc") records match ($(basename "$warc"))"
	else
		echo "$rel: MISMATCH, $(wc -l <"$tmp/violations") differences, first: $(head -1 "$tmp/violations")"
		status=1
	fi
done < <(find "$arcs" -type f \( -iname '*.arc' -o -iname '*.arc.gz' \) | sort)
exit $status
