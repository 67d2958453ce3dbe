# formsservice — `make run` and `make test` are the two commands a newcomer needs (see README.md).
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

BIN ?= $(CURDIR)/bin
GO ?= go
export PATH := $(BIN):$(PATH)
export GOBIN := $(BIN)

ADDR ?= 127.0.0.1:8080
CONFIG ?=

STATICCHECK_VERSION ?= v0.8.2

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-18s %s\n",$$1,$$2}'

##@ Development

.PHONY: run
run: build ## Run every service on $(ADDR) with the embedded store (CONFIG=file adds your origins and clients).
	$(BIN)/formsservice dev -addr $(ADDR) $(if $(CONFIG),-config $(CONFIG),)

.PHONY: build
build: ## Build bin/formsservice.
	$(GO) build -o $(BIN)/formsservice ./cmd/formsservice

.PHONY: test
test: ## Install what the tests need (cached in bin/) and run every test and check.
	hack/test.sh

.PHONY: test-go
test-go: deps-redis ## Only the Go tests (assumes tools are installed).
	$(GO) test -count=1 ./...

.PHONY: bench
bench: deps-redis ## Go benchmarks and bounded loopback load runs; prints a report.
	hack/bench.sh

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: $(BIN)/staticcheck ## gofmt, go vet and staticcheck.
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...

$(BIN)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

##@ Dependencies (installed once, cached under bin/)

.PHONY: deps-redis
deps-redis: ## redis-server and redis-cli from Debian packages, copied into bin/.
	hack/install-redis.sh
