#!/usr/bin/env bash
# The README's first command: builds the toolchain, copies the sample
# collection of testdata/ to a temporary directory (the repository stays
# unchanged), deduplicates the copy end to end with scripts/dedup.sh and
# shows what it saved.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r testdata/sample "$work/sample"
before=$(du -sb "$work/sample" | cut -f1)
scripts/dedup.sh "$work/sample"
after=$(du -sb "$work/sample" | cut -f1)
echo "sample collection: $before bytes before, $after after: $((before - after)) bytes saved"
