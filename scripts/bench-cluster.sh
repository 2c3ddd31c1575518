#!/usr/bin/env bash
# Measures warcdedup cluster on this machine: a generated collection of
# BENCH_SIZE_MB (default 1000) with 40% duplicates spread over three
# storage hosts (MD5 placement, one nginx each) on a three-node Slurm
# cluster (internal/slurmtest), all sharing this machine's cores and disk;
# per stage its wall time, each task's time and throughput, the bytes read
# over HTTP and the manifests passed through the work directory, and
# warcdedup run over the same files. BENCH_DIR keeps the collection
# between runs; BENCH_COMPARE_IN_RESOLVE=1 gives the cluster job the
# comparing resolve (--compare-in-resolve: resolve reads every copy over
# HTTP) instead of comparing each duplicate once; BENCH_ALTERNATE=N runs N
# rounds of both, alternating, and gives the medians of each. Needs
# Slurm, munge and nginx (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
WARCDEDUP_TEST_CLUSTER=1 WARCDEDUP_REQUIRE_SLURM=1 WARCDEDUP_REQUIRE_NGINX=1 \
	go test -run '^$' -bench '^BenchmarkCluster$' -benchtime 1x -timeout 60m ./e2e/cluster
