#!/usr/bin/env bash
# Measures collision resolution on a generated collection with 40%
# duplicates: warccollres -p from local disk and from nginx, with -j 1 and
# -j 2 (time, lines/s, MB/s of payload compared, peak memory), and the whole
# chain warcsum | sort | warccollres -p against warcsum alone.
#
# Environment: BENCH_SIZE_MB (uncompressed size, default 1000), BENCH_DIR
# (kept between runs; default a temporary directory removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

size_mb=${BENCH_SIZE_MB:-1000}
. scripts/bench-lib.sh
bench_dir
go build -o bin/ ./cmd/... ./scripts/warcgen

coll=$dir/chain-$size_mb
records=$((size_mb * 1000 * 1000 / 33000))
if [ ! -f "$coll/.done" ]; then
	rm -rf "$coll"
	echo "generating ~${size_mb} MB with 40% duplicates in $coll ..." >&2
	bin/warcgen -o "$coll" -files 8 -records "$records" -dup 0.4 -mean 30000 -formats warc.gz -seed 3 -collisions "" >&2
	touch "$coll/.done"
fi


read -r t_sum m_sum < <(timed "$dir/all" bin/warcsum -j 2 -r "$coll")
read -r t_sort _ < <(timed "$dir/by-digest" sort -k6,6 -k5,5 -k1,1 -k2,2n -S 1G "$dir/all")
lines=$(wc -l <"$dir/by-digest")
# Bytes as stored of the records in clusters: what warccollres must read.
clustered=$(awk '$6==p{if(!h){s+=pl; n++} s+=$3; n++; h=1; next} {p=$6; pl=$3; h=0} END{print s+0, n+0}' "$dir/by-digest")
read -r clustered_bytes clustered_lines <<<"$clustered"
total_bytes=$(du -sb "$coll" | cut -f1)

# nginx on loopback, serving the collection as a storage host would.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$dir/nginx/logs"
cat >"$dir/nginx/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $dir/nginx/pid;
error_log $dir/nginx/logs/error.log warn;
events { worker_connections 1024; }
http { access_log off; sendfile on; keepalive_requests 100000;
  client_body_temp_path $dir/nginx/b; proxy_temp_path $dir/nginx/p; fastcgi_temp_path $dir/nginx/f;
  uwsgi_temp_path $dir/nginx/u; scgi_temp_path $dir/nginx/s;
  server { listen 127.0.0.1:$port; location /warcs/ { alias $coll/; } } }
CONF
nginx -p "$dir/nginx" -c "$dir/nginx/nginx.conf" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; [ -z "${BENCH_DIR:-}" ] && rm -rf "$dir"' EXIT
sleep 0.5

echo
echo "collection: $(ls "$coll"/*.warc.gz | wc -l) files, $((total_bytes / 1000000)) MB stored; $lines lines, $clustered_lines in clusters holding $((clustered_bytes / 1000000)) MB stored; $(nproc) cores"
printf "%-30s %8s %10s %12s %9s\n" "" "time" "lines/s" "MB/s compared" "peak MB"
for src in disk nginx; do
	for j in 1 2; do
		if [ $src = disk ]; then where=(--root "$coll"); else where=(--url-template "http://127.0.0.1:$port/warcs/{file}"); fi
		read -r t m < <(timed "$dir/resolved" bin/warccollres -p -j $j "${where[@]}" -i "$dir/by-digest")
		compared=$(awk '/payload bytes compared/{for(i=1;i<=NF;i++) if($i=="payload") print $(i-1)}' "$dir/stderr")
		printf "%-30s %7.2fs %10.0f %12.1f %9.1f\n" "warccollres -p -j $j ($src)" "$t" "$(awk "BEGIN{print $lines/$t}")" \
			"$(awk "BEGIN{print $compared/1e6/$t}")" "$m"
		[ $src = disk ] && [ $j = 2 ] && t_res=$t
	done
done
echo
t_read_once=$(awk "BEGIN{print $t_sum * $clustered_bytes / $total_bytes}")
printf "warcsum -j 2 alone:                       %6.2fs (peak %s MB)\n" "$t_sum" "$m_sum"
printf "sort:                                     %6.2fs\n" "$t_sort"
printf "warccollres -p -j 2 (disk):               %6.2fs\n" "$t_res"
printf "whole chain warcsum | sort | warccollres: %6.2fs (%.2fx warcsum alone)\n" "$(awk "BEGIN{print $t_sum+$t_sort+$t_res}")" "$(awk "BEGIN{print ($t_sum+$t_sort+$t_res)/$t_sum}")"
printf "reading the clustered records once:       %6.2fs (warcsum's time x their share of stored bytes)\n" "$t_read_once"

# Bounded memory: one digest cluster of two identical 2 GB payloads (the
# same record in two files), resolved with the class spilled to disk.
huge=${BENCH_HUGE:-2147483648}
if [ "$huge" != 0 ]; then
	hdir=$dir/chain-huge-$huge
	if [ ! -f "$hdir/.done" ]; then
		rm -rf "$hdir"
		echo "generating a ${huge}-byte payload, stored twice ..." >&2
		bin/warcgen -o "$hdir" -files 1 -records 2 -huge "$huge" -formats warc.gz -seed 5 -collisions "" -noncandidates=false >&2
		f=$(ls "$hdir"/*.warc.gz)
		cp "$f" "${f%.warc.gz}-copy.warc.gz"
		touch "$hdir/.done"
	fi
	bin/warcsum -q -r "$hdir" | sort -k6,6 -k5,5 -k1,1 -k2,2n >"$dir/huge.manifest"
	read -r t m < <(timed "$dir/huge.resolved" bin/warccollres -p -j 2 --root "$hdir" -i "$dir/huge.manifest")
	printf "\ncluster of two %d-byte payloads: warccollres -p %.2f s, peak %s MB, %s\n" "$huge" "$t" "$m" \
		"$(awk '$8 == 2 {print "copy 2 found"}' "$dir/huge.resolved" | head -1)"
fi
