#!/usr/bin/env bash
# Installs what `make test` needs beyond Go, make and the system sort,
# where it can, and otherwise fails naming what is missing. Run again, it
# finds everything there and does nothing (a fraction of a second).
#
#   scripts/test-setup.sh           install what is missing (apt-get as
#                                   root or through sudo -n; npm into .cache)
#   scripts/test-setup.sh --check   install nothing: say what is missing
#
# `make test` runs it first, then every test with WARCDEDUP_REQUIRE_*=1: a
# test whose part is missing fails instead of skipping. `make test-quick`
# runs neither it nor those tests (the explicit opt-out). .ci/run is
# `make test`. The system services of the packages stay stopped: the tests
# start their own nginx, redis-server, munged, slurmctld and slurmd, and
# Chromium, on 127.0.0.1 and under /tmp, and stop them.
#
# Environment: WARCDEDUP_NODE_DIR (warcio.js, default .cache/node),
# WARCDEDUP_REPLAY_DIR (the ReplayWeb.page harness, default .cache/replay).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"
check=0
if [ "${1:-}" = --check ]; then
	check=1
fi
missing=()

# as_root runs a command as root: directly, or through sudo without a
# password; it fails when neither can.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo -n "$@"
	else
		return 1
	fi
}

updated=0
# apt PART PACKAGE... installs Debian packages, keeping them from starting
# their services (policy-rc.d), or records PART as missing.
apt() {
	local part=$1
	shift
	if [ "$check" = 1 ]; then
		missing+=("$part (apt-get install $*)")
		return
	fi
	if ! command -v apt-get >/dev/null 2>&1 || ! as_root true; then
		missing+=("$part (apt-get install $*: needs root, or sudo without a password)")
		return
	fi
	echo "test-setup: installing $part: $*" >&2
	if [ "$updated" = 0 ]; then
		as_root apt-get update -q >&2 || true
		updated=1
	fi
	local rc=/usr/sbin/policy-rc.d had=0
	[ -e "$rc" ] && had=1
	[ "$had" = 1 ] || as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $rc && chmod +x $rc"
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; then
		missing+=("$part (apt-get install $* failed)")
	fi
	[ "$had" = 1 ] || as_root rm -f "$rc"
}

# Storage hosts are plain HTTP servers: the HTTP tests run against Debian's
# nginx, started by the tests on 127.0.0.1 with a generated config
# (internal/nginxtest).
command -v nginx >/dev/null 2>&1 || apt nginx nginx

# The crawl index's export to and import from Browsertrix's Redis dedup
# index (redisindex, internal/redis) is tested against Debian's
# redis-server, which the tests start on 127.0.0.1 (internal/redistest);
# the package's own service stays stopped.
command -v redis-server >/dev/null 2>&1 || apt redis-server redis-server

# The cluster tests run a real Slurm cluster on this machine
# (internal/slurmtest): Debian's slurmctld, slurmd, slurm-client and munge.
if ! command -v sbatch >/dev/null 2>&1 || ! command -v slurmctld >/dev/null 2>&1 ||
	! command -v slurmd >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
	apt "Slurm and munge" slurmctld slurmd slurm-client munge
fi

# gzip members are inflated by ISA-L (Debian's libisal-dev, through cgo)
# when it is installed, else in pure Go: CI tests both.
[ -e /usr/include/isa-l/igzip_lib.h ] || apt "ISA-L headers" libisal-dev

# Undo rebuilds original gzip members bit for bit with zlib (gzmember,
# through cgo, no build tag): Debian's zlib1g-dev.
[ -e /usr/include/zlib.h ] || apt "zlib headers" zlib1g-dev

# The man pages are formatted by groff in e2e/man_test.go (-wall, no
# warning allowed): Debian's groff-base.
command -v groff >/dev/null 2>&1 || apt groff groff-base

# Node and npm run warcio.js and the browser harness.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	apt "Node.js and npm" nodejs npm
fi

# An independent reader of the rewritten files: webrecorder's warcio.js
# (npm package warcio, CLI `warcio cdx-index`), used by e2e/warcio_test.go,
# installed from the npm registry into .cache/node (git-ignored), once per
# version.
WARCIO_VERSION=2.4.11
node_dir=${WARCDEDUP_NODE_DIR:-$PWD/.cache/node}
if ! grep -qs "\"version\": \"$WARCIO_VERSION\"" "$node_dir/node_modules/warcio/package.json" ||
	[ ! -x "$node_dir/node_modules/.bin/warcio" ]; then
	if [ "$check" = 1 ] || ! command -v npm >/dev/null 2>&1; then
		missing+=("warcio.js $WARCIO_VERSION in $node_dir (npm install warcio@$WARCIO_VERSION)")
	else
		echo "test-setup: installing warcio.js $WARCIO_VERSION into $node_dir" >&2
		mkdir -p "$node_dir"
		npm install --prefix "$node_dir" --no-save --ignore-scripts --no-audit --no-fund \
			--no-progress --loglevel=error "warcio@$WARCIO_VERSION" </dev/null >&2 ||
			missing+=("warcio.js $WARCIO_VERSION (npm install into $node_dir failed)")
	fi
fi

# ReplayWeb.page in Debian's headless Chromium, driven by puppeteer-core
# (make test-browser, e2e/replay): scripts/replay-setup.sh installs both,
# Chromium with apt-get.
replay_dir=${WARCDEDUP_REPLAY_DIR:-$PWD/.cache/replay}
if [ ! -x /usr/bin/chromium ]; then
	apt Chromium chromium
fi
# The versions replay-setup.sh installs, read from it: when they are
# there, it is not run (it starts Chromium to print its version).
puppeteer=$(sed -n 's/^PUPPETEER_VERSION=\([0-9.]*\).*/\1/p' scripts/replay-setup.sh)
rwp=$(sed -n 's/^RWP_VERSION=\([0-9.]*\).*/\1/p' scripts/replay-setup.sh)
if [ -x /usr/bin/chromium ] && grep -qs "\"version\": \"$puppeteer\"" "$replay_dir/node_modules/puppeteer-core/package.json" &&
	[ -f "$replay_dir/replaywebpage-$rwp/sw.js" ] && [ -f "$replay_dir/replaywebpage-$rwp/ui.js" ] && [ -f "$replay_dir/replaywebpage-$rwp/index.html" ]; then
	:
elif [ "$check" = 1 ]; then
	missing+=("the ReplayWeb.page harness (puppeteer-core $puppeteer, replaywebpage $rwp) in $replay_dir (scripts/replay-setup.sh)")
elif [ -x /usr/bin/chromium ] && command -v npm >/dev/null 2>&1; then
	scripts/replay-setup.sh "$replay_dir" >/dev/null || missing+=("the ReplayWeb.page harness (scripts/replay-setup.sh failed)")
else
	missing+=("the ReplayWeb.page harness in $replay_dir (needs Chromium and npm)")
fi

if [ ${#missing[@]} -gt 0 ]; then
	echo "test-setup: the tests need what is not installed:" >&2
	for m in "${missing[@]}"; do
		echo "  $m" >&2
	done
	echo "test-setup: install it (run this script as root), or run make test-quick, which leaves out the tests that need it" >&2
	exit 1
fi
