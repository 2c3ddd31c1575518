#!/usr/bin/env bash
# Installs what the browser replay tests (make test-browser) need, once:
# Debian's chromium, and into .cache/replay (git-ignored) npm's
# puppeteer-core and the unpacked ReplayWeb.page package. Run again, it
# installs only what is missing or of another version.
#
#   scripts/replay-setup.sh [DIR]     (DIR defaults to .cache/replay)
#
# ReplayWeb.page is fetched with `npm pack` and unpacked, not installed:
# `npm install replaywebpage` fails, its wabac.js dependency asks for a
# warcio version the registry does not have. Only its index.html, sw.js
# and ui.js are served.
set -euo pipefail
cd "$(dirname "$0")/.."
PUPPETEER_VERSION=24.43.1 # the newest that runs on Node 20 (25 wants 22)
RWP_VERSION=2.5.3         # internal/replaytest.RWPVersion
dir=${1:-${WARCDEDUP_REPLAY_DIR:-$PWD/.cache/replay}}

if [ ! -x /usr/bin/chromium ]; then
	apt-get update -q
	# Keep packages from starting services.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
	rm -f /usr/sbin/policy-rc.d
fi

mkdir -p "$dir"
if ! grep -qs "\"version\": \"$PUPPETEER_VERSION\"" "$dir/node_modules/puppeteer-core/package.json"; then
	# --ignore-scripts: puppeteer-core downloads no browser, and nothing
	# else may either.
	npm install --prefix "$dir" --no-save --ignore-scripts --no-audit --no-fund \
		--no-progress --loglevel=error "puppeteer-core@$PUPPETEER_VERSION" </dev/null
fi

rwp="$dir/replaywebpage-$RWP_VERSION"
if [ ! -f "$rwp/sw.js" ] || [ ! -f "$rwp/ui.js" ] || [ ! -f "$rwp/index.html" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "replaywebpage@$RWP_VERSION" </dev/null >/dev/null)
	tar -xzf "$tmp/replaywebpage-$RWP_VERSION.tgz" -C "$tmp"
	rm -rf "$rwp"
	mv "$tmp/package" "$rwp"
fi

/usr/bin/chromium --version 2>/dev/null | grep -v '^\s*$' || true
echo "replay-setup: puppeteer-core $PUPPETEER_VERSION and replaywebpage $RWP_VERSION in $dir"
