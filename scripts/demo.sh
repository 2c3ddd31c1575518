#!/usr/bin/env bash
# The README's first command: builds the toolchain, copies the sample
# collection of testdata/ to a temporary directory (the repository stays
# unchanged), deduplicates the copy with warcdedup run and shows what it
# saved and where its report is. The copy and its work directory are
# removed on every exit.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r testdata/sample "$work/sample"
before=$(du -sb "$work/sample" | cut -f1)
status=0
bin/warcdedup run "$work/sample" || status=$?
after=$(du -sb "$work/sample" | cut -f1)
echo
echo "sample collection: $before bytes before, $after after: $((before - after)) bytes saved (exit status $status)"
echo "the report, kept: $PWD/demo-report.html"
cp "$work/sample.warcdedup/report.html" demo-report.html 2>/dev/null || cp "$work/sample.warcdedup/stats.json" demo-stats.json
exit $status
