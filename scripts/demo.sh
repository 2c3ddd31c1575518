#!/usr/bin/env bash
# The README's first command: builds the toolchain, copies the sample
# collection of testdata/ to a temporary directory (the repository stays
# unchanged), and runs the pipeline stages built so far on it.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r testdata/sample "$work/collection"

echo "== warcsum: hash every response record"
bin/warcsum -r "$work/collection" >"$work/manifest"
echo
echo "== sort on digest, date, file, offset (the order warccollres reads)"
LC_ALL=C sort -k6,6 -k5,5 -k1,1 -k2,2n "$work/manifest" >"$work/by-digest"
head -5 "$work/by-digest"
echo "..."
echo
# Until warccollres and warcsumproc exist, count what they would work on:
# digests seen more than once, and the stored bytes of all but the first.
awk '{ n[$6]++; if (n[$6] > 1) { dups++; bytes += $3 } }
     END { for (d in n) if (n[d] > 1) clusters++
           printf "%d records, %d digest clusters with copies, %d candidate duplicates holding %d stored bytes\n", NR, clusters, dups, bytes }' "$work/by-digest"
