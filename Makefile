# ferry: see README.md. `make test` is what CI runs (.ci/run).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO          ?= go
BUF_VERSION := v1.75.0
BUF         := $(GO) run github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
# Built and run as a binary, not with `go run`: go run passes no SIGTERM on (it exits,
# leaving peers and the tests running) and turns the Ctrl-C that ends the demo into exit 1.
PEERS       := .bin/peers
# More flags for `ferry demo`, e.g. DEMO_ARGS=--listen=127.0.0.1:8090 beside another ferry
# or demo that holds the default status port (`.bin/ferry demo -h` lists them).
DEMO_ARGS   ?=
# What `ferry version` and /status say of the demo's binary: the commit it was built from.
VERSION     ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# A count, not a duration: a duration-bounded fuzz run can end in a spurious
# "context deadline exceeded" (golang/go#75804).
FUZZTIME    ?= 2000x

.PHONY: help deps proto check test bench fuzz infra-up infra-down demo $(PEERS)

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

# Phony: go build is incremental, and a stale binary would run old code.
$(PEERS):
	$(GO) build -o $@ ./test/infra/cmd/peers

deps: ## fetch Go modules and the real peers (Aeron, Pulsar) from Maven Central
	test/infra/fetch.sh
	$(GO) mod download

proto: ## regenerate messages/ from proto/ferry/v1
	$(BUF) generate

check: ## gofmt, go vet, buf lint, and generated code up to date
	@# git's failure (no repository, a checkout of another user) must not pass for "no files".
	@files=$$(git ls-files -co --exclude-standard '*.go') && [ -n "$$files" ] || \
	  { echo "check: git ls-files found no Go files (run it in a git checkout you own)"; exit 1; }; \
	  unformatted=$$(gofmt -l $$files); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(BUF) lint
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  $(BUF) generate --output "$$tmp"; \
	  if ! diff <(cd "$$tmp" && find messages -name '*.pb.go' -exec sha256sum {} + | sort -k2) \
	            <(find messages -name '*.pb.go' -exec sha256sum {} + | sort -k2); then \
	    echo "messages/ is stale: run 'make proto' and commit the result"; exit 1; fi

test: deps check $(PEERS) ## everything CI runs: checks, aeron's tests without -race, all tests against the real peers, fuzz smoke
	@# Without -race first (no peers, seconds): -race builds aeron/internal/shm's portable
	@# release stores, not the amd64 assembly that `ferry run` ships, and leaves out the tests
	@# of that assembly (release_amd64*.go are `amd64 && !race`). ./aeron/... is the Aeron
	@# client the assembly is part of, whose tests need no peers.
	$(GO) test -count=1 ./aeron/...
	$(PEERS) run -- $(GO) test -race -count=1 -timeout 30m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

fuzz: ## run every fuzz target FUZZTIME (default 2000x inputs; try FUZZTIME=100000x)
	@# Targets are found in the sources: `go test -list` would run each package's TestMain,
	@# which starts real peers.
	@files=$$(git ls-files -co --exclude-standard '*_test.go') && [ -n "$$files" ] || \
	  { echo "fuzz: git ls-files found no test files (run it in a git checkout you own)"; exit 1; }; \
	  n=0; \
	  for file in $$files; do \
	  for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
	    n=$$((n + 1)); \
	    pkg=./$$(dirname "$$file"); \
	    echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
	    out=$$(mktemp); \
	    if ! $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) "$$pkg" >"$$out" 2>&1; then \
	      cat "$$out"; rm -f "$$out"; exit 1; fi; \
	    rm -f "$$out"; \
	  done; \
	done; \
	if [ "$$n" -eq 0 ]; then echo "fuzz: no fuzz targets found"; exit 1; fi

bench: deps $(PEERS) ## benchmarks against the real peers, each beside its baseline
	$(PEERS) run -- $(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 60m ./...

infra-up: deps $(PEERS) ## start detached peers for a fast edit-test loop (then: source .peers/env)
	$(PEERS) up

infra-down: $(PEERS) ## stop the peers infra-up started
	$(PEERS) down

demo: deps $(PEERS) ## the main job live: real archive + Pulsar, a sample publisher, ferry, status each second (Ctrl-C stops)
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o .bin/ferry ./cmd/ferry
	$(PEERS) run -- bash -c 'exec .bin/ferry demo --aeron-dir "$$FERRYTEST_AERON_DIR" --pulsar "$$FERRYTEST_PULSAR_URL" --pulsar-admin "$$FERRYTEST_PULSAR_ADMIN_URL" $(DEMO_ARGS)'
