#!/usr/bin/env bash
# Builds warchaeology's `warc` command (github.com/nlnwa/warchaeology, the
# tool bench-warchaeology.sh measures warcdedup run against, issue 13) from
# local git mirrors, and prints the binary's path.
#
#   scripts/warchaeology.sh [BUILD_DIR]
#
# BUILD_DIR defaults to $BENCH_DIR/warchaeology. Into it go
# warchaeology/ (WARCHAEOLOGY_REF, default v5.0.0) and gowarc/ (GOWARC_REF,
# default v3.1.0, the version v5.0.0's go.mod requires), taken with git
# archive from the bare mirrors WARCHAEOLOGY_GIT and GOWARC_GIT (default
# /work/.mirror/nlnwa+warchaeology/repo and /work/.mirror/nlnwa+gowarc/repo).
# The Go module proxy refuses gowarc v3, so warchaeology's go.mod gets a
# replace of it by ../gowarc; the other modules come through the proxy.
# Nothing is copied into this repository. A build of the same two commits
# is reused.
#
# Exit status 3: a mirror or a ref is missing (nothing was built).
set -euo pipefail

wa_git=${WARCHAEOLOGY_GIT:-/work/.mirror/nlnwa+warchaeology/repo}
gw_git=${GOWARC_GIT:-/work/.mirror/nlnwa+gowarc/repo}
wa_ref=${WARCHAEOLOGY_REF:-v5.0.0}
gw_ref=${GOWARC_REF:-v3.1.0}

if [ $# -gt 1 ]; then
	echo "usage: $0 [BUILD_DIR]" >&2
	exit 2
fi
if [ $# -eq 1 ]; then
	build=$1
elif [ -n "${BENCH_DIR:-}" ]; then
	build=$BENCH_DIR/warchaeology
else
	echo "$0: give a build directory or set BENCH_DIR" >&2
	exit 2
fi

for g in "$wa_git" "$gw_git"; do
	if ! git --git-dir="$g" rev-parse --git-dir >/dev/null 2>&1; then
		echo "$0: no git mirror at $g (fetch github.com/nlnwa/warchaeology and github.com/nlnwa/gowarc" \
			"as bare mirrors, or set WARCHAEOLOGY_GIT and GOWARC_GIT)" >&2
		exit 3
	fi
done
wa_commit=$(git --git-dir="$wa_git" rev-parse --verify -q "$wa_ref^{commit}") ||
	{ echo "$0: $wa_git has no $wa_ref" >&2; exit 3; }
gw_commit=$(git --git-dir="$gw_git" rev-parse --verify -q "$gw_ref^{commit}") ||
	{ echo "$0: $gw_git has no $gw_ref" >&2; exit 3; }

mkdir -p "$build"
build=$(cd "$build" && pwd)
bin=$build/bin/warc
stamp="warchaeology $wa_ref $wa_commit gowarc $gw_ref $gw_commit"
if [ -x "$bin" ] && [ "$(cat "$build/bin/.stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$bin"
	exit 0
fi

echo "building warchaeology $wa_ref ($wa_commit) with gowarc $gw_ref ($gw_commit) in $build ..." >&2
rm -rf "${build:?}/warchaeology" "${build:?}/gowarc" "${build:?}/bin"
mkdir -p "$build/warchaeology" "$build/gowarc" "$build/bin"
git --git-dir="$wa_git" archive "$wa_commit" | tar -x -C "$build/warchaeology"
git --git-dir="$gw_git" archive "$gw_commit" | tar -x -C "$build/gowarc"

# The module path gowarc declares (github.com/nlnwa/gowarc/v3 for v3.x),
# which must be the one warchaeology requires.
gw_module=$(cd "$build/gowarc" && go mod edit -json | awk -F'"' '/"Module": *\{/ {m = 1} m && /"Path"/ {print $4; exit}')
if ! (cd "$build/warchaeology" && go mod edit -json) | grep -q "\"Path\": \"$gw_module\""; then
	echo "$0: warchaeology $wa_ref does not require $gw_module" >&2
	exit 3
fi
(
	cd "$build/warchaeology"
	go mod edit -replace "$gw_module=../gowarc"
	# As upstream's .goreleaser.yml builds it (CGO off; goreleaser's default
	# -X main.version/commit, which `warc version` prints). GOFLAGS is ours
	# (bench-lib.sh may set -tags=isal), not warchaeology's.
	CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath \
		-ldflags "-X main.version=${wa_ref#v} -X main.commit=$wa_commit" -o "$bin" .
)
echo "$stamp" >"$build/bin/.stamp"
echo "$bin"
