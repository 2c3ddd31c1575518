#!/usr/bin/env bash
# The README's first command: builds the toolchain, copies the sample
# collection of testdata/ to a temporary directory (the repository stays
# unchanged), and runs the pipeline on it, printing each stage's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
make -s build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r testdata/sample "$work/collection"
cd "$work"

echo "== 1. warcsum: hash every response record"
"$OLDPWD"/bin/warcsum -r collection -o all.manifest
echo
echo "== 2. sort on digest, then warccollres: compare every shared digest byte for byte"
sort -k6,6 -k5,5 -k1,1 -k2,2n all.manifest >by-digest.manifest
"$OLDPWD"/bin/warccollres --root collection -i by-digest.manifest -o resolved.manifest
echo
echo "== 3. sort on class, then warcsumproc: number the copies"
sort -k6,6 -k7,7n -k5,5 -k1,1 -k2,2n resolved.manifest |
	"$OLDPWD"/bin/warcsumproc --stats stats.json --deps deps.txt -o numbered.manifest
echo
echo "A duplicate and the original it will point at:"
awk '$8 == 2 { print; exit }' numbered.manifest
echo
echo "The bytes a rewrite would save (estimate): $(sed -n 's/.*"bytes_saved_estimate": \([0-9]*\).*/\1/p' stats.json)"
