#!/usr/bin/env bash
# Builds the original C warcsum (github.com/arcalex/warcsum, the tool ours
# is named after; bench-inflate.sh measures it, issue 13) from local git
# mirrors, and prints the binary's path.
#
#   scripts/warcsum-orig.sh [BUILD_DIR]
#
# BUILD_DIR defaults to $BENCH_DIR/warcsum-orig. Into it go warcsum/
# (WARCSUM_REF, default HEAD) and gzmulti/ (GZMULTI_REF, default HEAD; only
# its libgzmulti.c, which holds inflateMember, is compiled), taken with git
# archive from the bare mirrors WARCSUM_GIT and GZMULTI_GIT (default
# /work/.mirror/arcalex+warcsum/repo and /work/.mirror/arcalex+gzmulti/repo).
# Needs gcc, zlib1g-dev and libssl-dev. Nothing is copied into this
# repository. A build of the same two commits is reused.
#
# It takes one file: warcsum-orig -q -a -H sha1 -i FILE -o OUT appends a
# line "file offset length uri date sha1:HEX" per WARC response with
# Content-Type application/http (any status), its digest that of the bytes
# from the end of the HTTP header to the end of the gzip member less 4 (the
# record's closing CRLF CRLF): the payload, when a member holds one record.
# It only computes a digest when the record's WARC-Payload-Digest is in the
# algorithm asked for (the test is the wrong way round), so on collections
# with sha1 header digests only -H sha1 hashes; md5 and sha256 fail an
# assertion converting the stored sha1, and -f lists nothing.
#
# Exit status 3: a mirror or a ref is missing (nothing was built).
set -euo pipefail

ws_git=${WARCSUM_GIT:-/work/.mirror/arcalex+warcsum/repo}
gz_git=${GZMULTI_GIT:-/work/.mirror/arcalex+gzmulti/repo}
ws_ref=${WARCSUM_REF:-HEAD}
gz_ref=${GZMULTI_REF:-HEAD}

if [ $# -gt 1 ]; then
	echo "usage: $0 [BUILD_DIR]" >&2
	exit 2
fi
if [ $# -eq 1 ]; then
	build=$1
elif [ -n "${BENCH_DIR:-}" ]; then
	build=$BENCH_DIR/warcsum-orig
else
	echo "$0: give a build directory or set BENCH_DIR" >&2
	exit 2
fi

for g in "$ws_git" "$gz_git"; do
	if ! git --git-dir="$g" rev-parse --git-dir >/dev/null 2>&1; then
		echo "$0: no git mirror at $g (fetch github.com/arcalex/warcsum and github.com/arcalex/gzmulti" \
			"as bare mirrors, or set WARCSUM_GIT and GZMULTI_GIT)" >&2
		exit 3
	fi
done
ws_commit=$(git --git-dir="$ws_git" rev-parse --verify -q "$ws_ref^{commit}") ||
	{ echo "$0: $ws_git has no $ws_ref" >&2; exit 3; }
gz_commit=$(git --git-dir="$gz_git" rev-parse --verify -q "$gz_ref^{commit}") ||
	{ echo "$0: $gz_git has no $gz_ref" >&2; exit 3; }

mkdir -p "$build"
build=$(cd "$build" && pwd)
bin=$build/bin/warcsum-orig
stamp="warcsum $ws_commit gzmulti $gz_commit"
if [ -x "$bin" ] && [ "$(cat "$build/bin/.stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$bin"
	exit 0
fi

echo "building the original warcsum ($ws_commit) with gzmulti ($gz_commit) in $build ..." >&2
rm -rf "$build/warcsum" "$build/gzmulti" "$build/compat" "$build/bin"
mkdir -p "$build/warcsum" "$build/gzmulti" "$build/compat" "$build/bin"
git --git-dir="$ws_git" archive "$ws_commit" | tar -x -C "$build/warcsum"
git --git-dir="$gz_git" archive "$gz_commit" | tar -x -C "$build/gzmulti"

# Our compatibility header (not upstream code). warcsum includes <gzmulti.h>
# and calls gzmInflateInit, which no published gzmulti commit has: gzmulti
# installs its header as <gzmulti/gzmulti.h> and leaves the z_stream set-up
# to the caller. This stands in for both: zlib's default allocator and
# inflateInit2 with windowBits 31 (gzip only), as warcsum's own
# inflateReset2 (z, 31) before each member and gzmulti's gzunpack.c have it.
# gzmulti's HEAD suits warcsum better than the 2015 one: its inflateMember
# resets the stream after a member instead of ending it.
cat >"$build/compat/gzmulti.h" <<'EOF'
#include <gzmulti/gzmulti.h>

static int
gzmInflateInit (z_stream *z)
{
  z->zalloc = Z_NULL;
  z->zfree = Z_NULL;
  z->opaque = Z_NULL;
  z->next_in = Z_NULL;
  z->avail_in = 0;
  return inflateInit2 (z, 31);
}
EOF

# -O2 as its autotools build (and our C loop) has it. -w: the OpenSSL 3
# deprecations of SHA1_Init and the like are not ours to fix.
# -ftrivial-auto-var-init=zero: main's struct is never cleared, and whether
# a digest is computed rests on a field of it (recalculate_hash) that is set
# only when true; zeroed, every run does the same thing.
gcc -O2 -w -ftrivial-auto-var-init=zero -I"$build/compat" -I"$build/gzmulti/include" \
	-o "$bin" "$build/warcsum/warcsum.c" "$build/gzmulti/libgzmulti/libgzmulti.c" -lcrypto -lz
echo "$stamp" >"$build/bin/.stamp"
echo "$bin"
