#!/usr/bin/env bash
# Proves that the browser replay tests send nothing off this machine: runs
# e2e/replay's TestReplayHarness with Chromium under strace, and checks
# every connect() and every write or send on a socket, in every Chromium
# process. Passes when all data goes to 127.0.0.1 and no stream socket is
# connected elsewhere. (Chromium connects a UDP socket to
# 2001:4860:4860::8888 to learn whether IPv6 is routable; connecting a
# datagram socket sends no packet, so that is allowed and counted.)
#
#   scripts/replay-nettrace.sh     (needs strace: apt-get install strace)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v strace >/dev/null || { echo "replay-nettrace: strace not installed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/chromium" <<EOS
#!/bin/sh
exec strace -f -qq -yy -e trace=connect,sendto,sendmsg,sendmmsg,write,writev -e signal=none -o "$tmp/trace" /usr/bin/chromium "\$@"
EOS
chmod +x "$tmp/chromium"
WARCDEDUP_CHROMIUM="$tmp/chromium" WARCDEDUP_REQUIRE_BROWSER=1 \
	go test -count=1 -tags browser -run '^TestReplayHarness$' ./e2e/replay
# Data on a socket: its endpoints are printed as PROTO:[A:p->B:p].
bad_data=$(grep -Eo '(TCP|UDP)(v6)?:\[[^]]*->[^]]*\]' "$tmp/trace" | grep -Ev '^[A-Zv6]+:\[127\.0\.0\.1:[0-9]+->127\.0\.0\.1:[0-9]+\]$' || true)
# connect() of a stream socket anywhere but 127.0.0.1.
bad_connect=$(grep -E 'connect\([0-9]+<TCP' "$tmp/trace" | grep -v 'inet_addr("127.0.0.1")' || true)
probes=$(grep -cE 'connect\([0-9]+<UDPv6.*2001:4860:4860::8888' "$tmp/trace" || true)
loopback=$(grep -cE '(TCP|UDP)(v6)?:\[127\.0\.0\.1:[0-9]+->127\.0\.0\.1:[0-9]+\]' "$tmp/trace" || true)
echo "replay-nettrace: $loopback socket writes and connects on 127.0.0.1, $probes IPv6 route probes (UDP connect, no packet)"
if [ -n "$bad_data$bad_connect" ]; then
	echo "replay-nettrace: traffic off 127.0.0.1:" >&2
	printf '%s\n' "$bad_data" "$bad_connect" | sort | uniq -c >&2
	exit 1
fi
echo "replay-nettrace: nothing left 127.0.0.1"
