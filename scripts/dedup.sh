#!/usr/bin/env bash
# Deduplicates a directory of WARC/ARC files in place, end to end:
#   warcsum --revisits  ->  sort  ->  warccollres -p  ->  sort  ->  warcrefs --in-place
# then hashes the result again and proves with warcsumcmp that nothing was
# lost. Manifests live in a temporary directory that is removed at the end.
#
#   scripts/dedup.sh [--dry-run] [-j N] [-H ALGO] [--keep DIR] DIR
#
# --dry-run checks everything and reports what would be rewritten, writing
# nothing; --keep DIR keeps the manifests and the rewrite log in DIR.
# Exit status: 0 clean; 1 finished, but something was damaged, refused or
# violated (see the messages); 2 a stage stopped.
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")/.." && pwd)
PATH="$here/bin:$PATH"

dry=() jobs=() algo=() keep="" pol=()
while [ $# -gt 1 ]; do
	case $1 in
	--dry-run) dry=(--dry-run) ;;
	-j) jobs=(-j "$2"); shift ;;
	-H) algo=(-H "$2"); shift ;;
	--policy) pol=(--policy "$2"); shift ;;
	--keep) keep=$2; shift ;;
	*) echo "dedup.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: dedup.sh [--dry-run] [-j N] [-H ALGO] [--keep DIR] DIRECTORY" >&2
	exit 2
fi
coll=$1
for c in warcsum warccollres warcrefs warcsumcmp; do
	command -v $c >/dev/null || { echo "dedup.sh: $c not built (run make build)" >&2; exit 2; }
done
if [ -n "$keep" ]; then
	tmp=$keep
	mkdir -p "$tmp"
else
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
fi

status=0
note() { # the exit status of a stage: 1 is remembered, 2 or more stops
	local s=$1 what=$2
	if [ "$s" -ge 2 ]; then
		echo "dedup.sh: $what stopped (exit $s)" >&2
		exit 2
	fi
	[ "$s" -eq 1 ] && status=1
	return 0
}

echo "== warcsum: hashing $coll" >&2
warcsum -q "${algo[@]}" "${jobs[@]}" -r "$coll" -o "$tmp/before.manifest"
note $? warcsum

echo "== warccollres -p: comparing duplicates byte for byte" >&2
sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n -T "$tmp" "$tmp/before.manifest" |
	warccollres -q -p "${pol[@]}" --root "$coll" "${jobs[@]}" -o "$tmp/resolved.manifest"
note $? warccollres

echo "== warcrefs: rewriting duplicates as revisits" >&2
# --originals: the numbered manifest, sorted on digest, where each
# duplicate's original and the existing revisits are looked up.
awk '$8 > 1' "$tmp/resolved.manifest" >"$tmp/dups.list"
sort -k1,1 -k2,2n -T "$tmp" "$tmp/resolved.manifest" >"$tmp/by-file.manifest"
warcrefs --in-place "${dry[@]}" "${pol[@]}" --originals "$tmp/resolved.manifest" --root "$coll" "${jobs[@]}" --log "$tmp/rewrite.log" -i "$tmp/by-file.manifest" 2>"$tmp/warcrefs.err"
s=$?
grep -v '^time:' "$tmp/warcrefs.err" >&2
note $s warcrefs

if [ ${#dry[@]} -eq 0 ]; then
	echo "== warcsumcmp: proving nothing was lost" >&2
	warcsum -q "${algo[@]}" "${jobs[@]}" -r "$coll" -o "$tmp/after.manifest"
	note $? "warcsum (after)"
	warcsumcmp -q "$tmp/before.manifest" "$tmp/after.manifest" >"$tmp/violations"
	s=$?
	head -20 "$tmp/violations" >&2
	note $s warcsumcmp
fi

files=$(find "$coll" -type f \( -iname '*.warc' -o -iname '*.warc.gz' -o -iname '*.arc' -o -iname '*.arc.gz' \) | wc -l)
records=$(wc -l <"$tmp/before.manifest")
dups=$(wc -l <"$tmp/dups.list")
saved=$(awk '/bytes of those files/ { print $(NF-1) }' "$tmp/warcrefs.err")
revisits=$(awk '/revisits written/ { print $3 }' "$tmp/warcrefs.err" | tr -d ';')
violations=$( [ -f "$tmp/violations" ] && wc -l <"$tmp/violations" || echo "not checked (dry run)")
echo
echo "summary: $files files, $records records listed, $dups duplicates found, ${revisits:-0} rewritten as revisits${dry:+ (dry run: would be)}, ${saved:-0} bytes saved, violations: $violations, exit status $status"
exit $status
