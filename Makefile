# The toolchain's build, test and benchmark entry points.
# `make demo` builds everything and deduplicates the sample collection;
# `make test` runs every test (what CI runs).

GO       ?= go
VERSION  := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X warcdedup/internal/cmdutil.Version=$(VERSION)
COMMANDS := $(notdir $(wildcard cmd/*))
# Where the build puts the commands and their man pages.
BIN      ?= bin
MAN      ?= man
BINARIES := $(addprefix $(BIN)/,$(COMMANDS))
# Where `make install` puts them (under DESTDIR, for packaging).
PREFIX   ?= /usr/local
bindir   ?= $(PREFIX)/bin
mandir   ?= $(PREFIX)/share/man
man1dir  ?= $(mandir)/man1

# The inflater gzip members are read with: isal (Intel ISA-L through cgo,
# Debian's libisal-dev) when its header is installed, else go (pure Go,
# klauspost/compress). INFLATE=go or INFLATE=isal forces one. The tag goes in
# GOFLAGS so that the binaries tests build with `go build` get it too.
INFLATE ?= $(if $(wildcard /usr/include/isa-l/igzip_lib.h),isal,go)
ifeq ($(INFLATE),isal)
export GOFLAGS := $(strip $(GOFLAGS) -tags=isal)
else ifneq ($(INFLATE),go)
$(error INFLATE must be isal or go, not $(INFLATE))
endif
# What the build really holds (cgo off means pure Go whatever the tag).
SAY_INFLATER = @echo "inflater: $$($(GO) list -f '{{if .CgoFiles}}ISA-L (-tags isal){{else}}pure Go{{end}}' ./gzmulti)"

.PHONY: all build test test-setup test-quick test-go test-crash test-large test-browser test-cluster soak fuzz bench bench-scale install man demo clean $(BINARIES)

all: build

build: $(BINARIES)
	$(SAY_INFLATER)

$(BINARIES):
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./cmd/$(notdir $@)

# Every test: unit, corpus (skipped when ../shared is absent), end to end,
# the browser replay tests and the Slurm cluster tests. Each of the last two
# starts its own real parts once (Chromium; munge, slurmctld and three
# slurmd), so they run as targets of their own, not per package.
#
# What the tests need beyond Go (nginx, redis-server, Slurm and munge,
# groff, the ISA-L and zlib headers, warcio.js, Chromium with the
# ReplayWeb.page harness) is installed first where it can be
# (scripts/test-setup.sh: apt-get as root, npm into .cache), and every test
# then runs with it required: one whose part is missing fails, naming it,
# instead of skipping. make test-quick is the explicit opt-out.
test: test-setup test-go test-crash test-large test-browser test-cluster

test-setup:
	scripts/test-setup.sh

# The tests' parts are required (internal/nginxtest, slurmtest,
# replaytest, redistest, e2e), and found where test-setup put them.
WARCDEDUP_NODE_DIR   ?= $(CURDIR)/.cache/node
WARCDEDUP_REPLAY_DIR ?= $(CURDIR)/.cache/replay
export WARCDEDUP_NODE_DIR WARCDEDUP_REPLAY_DIR
REQUIRE := WARCDEDUP_REQUIRE_NGINX=1 WARCDEDUP_REQUIRE_REDIS=1 WARCDEDUP_REQUIRE_SLURM=1 \
	WARCDEDUP_REQUIRE_GROFF=1 WARCDEDUP_REQUIRE_WARCIO=1 WARCDEDUP_REQUIRE_BROWSER=1 \
	WARCDEDUP_NODE_DIR=$(WARCDEDUP_NODE_DIR) WARCDEDUP_REPLAY_DIR=$(WARCDEDUP_REPLAY_DIR)

test-go: test-setup
	$(SAY_INFLATER)
	$(GO) vet ./...
	$(GO) vet -tags browser ./e2e/replay ./report
	$(REQUIRE) $(GO) test -count=1 -timeout 30m -skip '^(TestCrashRunUndo|TestRebuildKeepsLargeStreamedMember)$$' ./...
	$(GO) test -count=1 -race ./rewritelog ./internal/ordered ./internal/spool ./internal/lru
	# gzmember without zlib: every rebuild says it cannot, cleanly.
	$(REQUIRE) CGO_ENABLED=0 $(GO) test -count=1 ./gzmember

# The crash test (dedup/crash_test.go, about a minute): run, undo, run on a
# generated collection, each run and undo killed (SIGKILL) at random
# points, more than 20 times, every end state checked record by record.
# With it the legacy ARC job's (dedup/legacykill_test.go, about half a
# minute): run --convert-arc killed 20 times, commit --to 10 times.
# Verbose, so that it prints each kill and the outcome.
test-crash: test-setup
	WARCDEDUP_TEST_LEGACY_KILLS=1 $(REQUIRE) $(GO) test -count=1 -timeout 10m -run '^(TestCrashRunUndo|TestLegacyJobKills)$$' -v ./dedup

# A WACZ package with a member of more than 4 GiB rebuilt (sparse files,
# about a minute: each reader reads 4 GiB), once: it reads no gzip.
test-large: test-setup
	$(REQUIRE) $(GO) test -count=1 -timeout 10m -run '^TestRebuildKeepsLargeStreamedMember$$' -v ./wacz

# The soak (not in make test, not in CI; about ten minutes): more than 200
# kills of run, undo, run --index, index remove --restore and undo of a
# crawl, each end state checked. SOAK_SEED repeats a seed it printed.
soak:
	WARCDEDUP_SOAK=1 WARCDEDUP_SOAK_SEED=$(SOAK_SEED) $(GO) test -count=1 -timeout 2h -run '^TestSoak$$' -v ./dedup

# The tests that need nothing but Go, make and the system sort: those
# needing a part test-setup installs skip (go test -v says so). No browser,
# no cluster. A quick check while working; make test is the whole.
test-quick:
	$(SAY_INFLATER)
	$(GO) vet ./...
	WARCDEDUP_REQUIRE_NGINX= WARCDEDUP_REQUIRE_REDIS= WARCDEDUP_REQUIRE_SLURM= WARCDEDUP_REQUIRE_GROFF= \
		WARCDEDUP_REQUIRE_WARCIO= WARCDEDUP_REQUIRE_BROWSER= $(GO) test -count=1 -timeout 30m ./...

# Deduplicated collections replayed in ReplayWeb.page in headless Chromium
# (e2e/replay, build tag "browser"; scripts/replay-setup.sh, which
# test-setup runs, installs what it needs). One package, one Chromium per
# collection. Then report.html opened in the same Chromium harness: it
# must request nothing but itself; screenshots and an A4 PDF go to
# $WARCDEDUP_ARTEFACTS when set.
test-browser: test-setup
	$(REQUIRE) $(GO) test -count=1 -timeout 15m -tags browser -run '^(TestReplay|TestWACZRebuildReplay)' -v ./e2e/replay
	$(REQUIRE) $(GO) test -count=1 -timeout 5m -tags browser -run '^TestReport' -v ./report

# The Slurm tests: a real three-node cluster on this machine
# (internal/slurmtest): its smoke test (jobs pinned to nodes, arrays,
# dependencies, a node crash and retries; about a minute), then warcdedup
# cluster against warcdedup run on three storage hosts (one nginx each),
# with a fault in every stage and a storage host down (e2e/cluster; about
# three minutes). One package at a time: each starts its own cluster.
# Needs Debian's slurmctld, slurmd, slurm-client, munge and nginx
# (test-setup installs them).
test-cluster: test-setup
	WARCDEDUP_TEST_CLUSTER=1 $(REQUIRE) $(GO) test -p 1 -count=1 -v -timeout 20m ./internal/slurmtest ./e2e/cluster

# Each fuzz target for FUZZTIME (the seed corpora also run in `make test`).
FUZZTIME ?= 1m
fuzz:
	$(GO) test ./manifest -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./gzmember -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./digest -run '^$$' -fuzz '^FuzzParseHeader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./gzmulti -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./record -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cdx -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./record -run '^$$' -fuzz '^FuzzStreamReader$$' -fuzztime $(FUZZTIME)

# The legacy ARC job (issue 24): run --convert-arc against arc2warc
# --in-place then run, on ~1 GB of generated ARC files (in bench, not in
# test).
.PHONY: bench-arc
bench-arc: build
	scripts/bench-arc.sh

# WACZ packages (issue 23): warcdedup run on ~1 GB of WACZ files against
# the same WARC bytes as plain files: time within 1.2x, the same bytes
# saved (in bench, not in test).
.PHONY: bench-wacz
bench-wacz: build
	scripts/bench-wacz.sh

# Go benchmarks next to the code, then each stage on generated collections
# of about 1 GB (scripts/bench-*.sh; BENCH_DIR keeps the data between runs).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	scripts/bench-inflate.sh
	scripts/bench-warcsum.sh
	scripts/bench-chain.sh
	scripts/bench-refs.sh
	scripts/bench-run.sh
	scripts/bench-arc.sh
	scripts/bench-wacz.sh
	scripts/bench-warchaeology.sh || [ $$? = 3 ] # 3: warchaeology's mirrors are not here
	scripts/bench-cdx.sh
	scripts/bench-assess.sh
	scripts/bench-assess-sample.sh
	scripts/bench-recompress.sh

# The scale benchmark (issue 22): each command at 10^6 and 10^7 records,
# warcdedup run at 10^6 responses (BENCH_SCALE_RUN_SIZES for more), time
# per record and the peak memory of every process, sort included (an hour
# or more and about 20 GB of disk in BENCH_DIR; not in bench;
# BENCH_SCALE_SIZES="10000 100000" BENCH_SCALE_RUN_SIZES=10000
# BENCH_SCALE_ROUNDS=1 for a quick check).
bench-scale: build
	scripts/bench-scale.sh

# Every command and every man page.
install: build man
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(man1dir)
	install -m 755 $(BINARIES) $(DESTDIR)$(bindir)/
	install -m 644 $(MAN)/*.1 $(DESTDIR)$(man1dir)/

# The man pages, generated from the commands' definitions (their flags,
# operands, exit statuses and examples): one per command, and one per
# command of warcdedup (warcdedup-run.1, ...). `man -l man/warcsum.1`
# shows one.
man: build
	mkdir -p $(MAN)
	rm -f $(MAN)/*.1
	for c in $(COMMANDS); do $(BIN)/$$c --man-dir $(MAN) || exit 1; done

demo: build
	scripts/demo.sh

clean:
	rm -rf $(BIN) $(MAN)
