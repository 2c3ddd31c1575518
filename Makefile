# The toolchain's build, test and benchmark entry points.
# `make demo` builds everything and deduplicates the sample collection;
# `make test` runs every test (what CI runs).

GO       ?= go
PREFIX   ?= /usr/local
VERSION  := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X warcdedup/internal/cmdutil.Version=$(VERSION)
COMMANDS := $(notdir $(wildcard cmd/*))
BINARIES := $(addprefix bin/,$(COMMANDS))

.PHONY: all build test fuzz bench install man demo clean $(BINARIES)

all: build

build: $(BINARIES)

$(BINARIES):
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./cmd/$(notdir $@)

# Every test: unit, corpus (skipped when ../shared is absent) and end to end.
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

# Each fuzz target for FUZZTIME (the seed corpora also run in `make test`).
FUZZTIME ?= 1m
fuzz:
	$(GO) test ./manifest -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./digest -run '^$$' -fuzz '^FuzzParseHeader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./gzmulti -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./record -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./record -run '^$$' -fuzz '^FuzzStreamReader$$' -fuzztime $(FUZZTIME)

# Go benchmarks next to the code, then each stage on generated collections
# of about 1 GB (scripts/bench-*.sh; BENCH_DIR keeps the data between runs).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	scripts/bench-warcsum.sh
	scripts/bench-chain.sh
	scripts/bench-refs.sh
	scripts/bench-recompress.sh

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BINARIES) $(DESTDIR)$(PREFIX)/bin/

man: build
	mkdir -p man
	for c in $(COMMANDS); do bin/$$c --man > man/$$c.1; done

demo: build
	scripts/demo.sh

clean:
	rm -rf bin man
