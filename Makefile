# formsservice — `make run` and `make test` are the two commands a newcomer needs (see README.md).
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

BIN ?= $(CURDIR)/bin
GO ?= go
export PATH := $(BIN):$(PATH)
export GOBIN := $(BIN)
# -trimpath keeps the clone's folder out of Go's build-cache keys: every clone on a machine (CI's clean
# ones too) reuses what any of them compiled (docs/developing.md).
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

# The dev server's listen address: on loopback it serves http://localhost:<port> on 127.0.0.1 and ::1 (D74).
ADDR ?= 127.0.0.1:8080
CONFIG ?=
PKG ?= ./...

STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-18s %s\n",$$1,$$2}'

##@ Development

.PHONY: run
run: build ## Run every service at http://localhost:8080 (ADDR=host:port elsewhere) with the embedded store (CONFIG=file adds your origins and clients).
	$(BIN)/formsservice dev --addr $(ADDR) $(if $(CONFIG),--config $(CONFIG),)

.PHONY: build
build: ## Build bin/formsservice and bin/formsservice-forms (the forms service alone, which `formsservice forms` runs).
	hack/build.sh $(BIN)

.PHONY: test
test: ## Install what the tests need (cached in bin/) and run every test and check (docs/developing.md).
	hack/test.sh

.PHONY: test-fast
test-fast: deps-redis ## The loop between edits: the unit tests, go test -short (no browser, envtest, cluster or built tool; PKG=./services/forms/... for some).
	$(GO) test -short -count=1 $(TESTFLAGS) $(PKG)

.PHONY: test-go
test-go: deps-redis ## Only the Go tests, all of them (assumes tools are installed: make deps).
	$(GO) test -count=1 ./...

.PHONY: bench
bench: deps-redis ## Go benchmarks and bounded loopback load runs; prints a report.
	hack/bench.sh

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: $(STATICCHECK) ## gofmt, go vet, staticcheck and a tidy go.mod.
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@# the forms-only build of cmd/formsservice (D31), without the tests (they need the full build) and without
	@# U1000: the helpers it shares with the tools are used in the full build, which the line above checks
	$(GO) build -tags formsonly -o /dev/null ./cmd/formsservice
	$(STATICCHECK) -tags formsonly -tests=false -checks inherit,-U1000 ./cmd/formsservice
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1; }

# Tools built by `go install` carry their version in their name: a version bump installs the new one, the
# same version never rebuilds.
$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/staticcheck $(STATICCHECK)

##@ Operator (api/, controllers/, cmd/manager, config/; see docs/operator.md)

CONTROLLER_GEN_VERSION ?= v0.23.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
KUBECTL ?= kubectl

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the deepcopy code of api/ (controller-gen).
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD (config/crd/bases) and RBAC role (config/rbac) from the markers.
	$(CONTROLLER_GEN) crd rbac:roleName=manager-role paths=./api/... paths=./controllers/... \
	  output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/chart-sync.sh  # the Helm chart carries copies of the CRD and the RBAC rules

.PHONY: verify-generated
verify-generated: ## Regenerate and fail when the deepcopy code, CRD, RBAC or the chart's copies of them were stale.
	@# The chart's copies first: `make manifests` below rewrites them from config/, which would hide a stale one.
	@hack/chart-sync.sh --check
	@snap=$$(mktemp -d); trap 'rm -rf "$$snap"' EXIT; \
	  cp -r api config/crd config/rbac "$$snap"/; \
	  $(MAKE) --no-print-directory generate manifests >/dev/null; \
	  stale=0; \
	  for d in api crd rbac; do src=$$d; [[ $$d = api ]] || src=config/$$d; \
	    diff -ru "$$snap/$$d" "$$src" || stale=1; done; \
	  if [[ $$stale = 1 ]]; then echo "generated files were stale: run 'make generate manifests' and commit the result"; exit 1; fi; \
	  echo "generated files are up to date"

.PHONY: envtest
envtest: deps-envtest ## Same as deps-envtest.

.PHONY: test-operator
test-operator: ## The operator's tests against a real kube-apiserver and etcd.
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" $(GO) test -count=1 ./api/... ./controllers/... ./cmd/manager/...

.PHONY: test-scale
test-scale: ## The operator's cost at a thousand FormsServices (controllers/scale; long: docs/operator.md, "Cost at scale").
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" SCALE_N=1000 $(GO) test -count=1 -v -timeout 120m -run TestScale ./controllers/scale/

.PHONY: run-operator
run-operator: ## Run the operator against the cluster of your current kubeconfig.
	$(GO) run ./cmd/manager --leader-elect=false

.PHONY: image
image: ## Build bin/formsservice-image.tar (OCI image, no Docker needed; `docker load` or `kind load image-archive`).
	hack/image.sh

.PHONY: install
install: ## Install the CRD into the cluster of your current kubeconfig.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Remove the CRD (and with it every FormsService).
	$(KUBECTL) delete -k config/crd

.PHONY: deploy
deploy: ## Deploy the operator (CRD, RBAC, manager) with kustomize.
	$(KUBECTL) apply --server-side -k config/default

.PHONY: undeploy
undeploy: ## Remove the operator.
	$(KUBECTL) delete -k config/default

$(CONTROLLER_GEN):
	$(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $(CONTROLLER_GEN)

##@ Helm chart and end to end (charts/, test/; see docs/helm.md)

CHART := charts/formsservice-operator
HELM_DOCS := $(BIN)/helm-docs --chart-search-root $(CHART) --sort-values-order file --log-level warning
HELM_ENV := HELM_CACHE_HOME=$(BIN)/.helm/cache HELM_CONFIG_HOME=$(BIN)/.helm/config HELM_DATA_HOME=$(BIN)/.helm/data

.PHONY: helm-lint
helm-lint: deps-chart ## Lint the chart with every test values file; fail when its copies of config/ or the values table are stale, or a value is undocumented.
	hack/chart-sync.sh --check
	@for f in test/chart/testdata/*.values.yaml; do echo "helm lint --values $$f"; \
	  $(HELM_ENV) $(BIN)/helm lint --strict --quiet $(CHART) --values $$f || exit 1; done
	@$(HELM_DOCS) --dry-run 2>/dev/null | diff -u $(CHART)/README.md - || \
	  { echo "$(CHART)/README.md is stale (or helm-docs failed): run 'make helm-docs'"; exit 1; }
	@# helm-docs' own --documentation-strict-mode ignores "# --" comments and reports every key
	@# (norwoodj/helm-docs#228, open in v1.14.2); a row with an empty description is the same fact.
	@if $(HELM_DOCS) --dry-run 2>/dev/null | grep -E '^\| `[^`]+` \|.*\|  \|$$'; then \
	  echo "the values above have no '# --' description in $(CHART)/values.yaml"; exit 1; fi

.PHONY: chart-sync
chart-sync: ## Copy the CRD, the RBAC rules and the monitoring files from config/ into the chart.
	hack/chart-sync.sh

.PHONY: helm-docs
helm-docs: deps-chart ## Regenerate the chart README's values table from values.yaml (helm-docs; template README.md.gotmpl).
	$(HELM_DOCS)

.PHONY: admin-api-reference
admin-api-reference: ## Regenerate docs/admin-api.md from services/auth/admin/openapi.yaml (go test ./test/docs/ fails when it is stale).
	$(GO) test -count=1 -run TestAdminAPIReference_IsGenerated ./test/docs/ -update

.PHONY: test-chart
test-chart: deps-chart ## Chart tests: golden files, strict server-side dry run, helm install into envtest, RBAC as the chart's ServiceAccount.
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" $(GO) test -count=1 ./test/chart/...

.PHONY: test-admission
test-admission: ## The chart and the operator's objects against restricted Pod Security (k8s.io/pod-security-admission) and our best practices, offline (test/admission).
	$(GO) test -count=1 ./test/admission/

.PHONY: e2e
e2e: ## End to end on a real one-node cluster of this machine, no Docker (hack/node-cluster; root; first run builds Kubernetes, then ~2 min).
	hack/node-cluster/e2e.sh

.PHONY: e2e-kind
e2e-kind: ## End to end on a kind cluster: image, chart, sample, forms contract, browser sign-in, /health (needs Docker).
	hack/e2e-kind.sh

##@ Dependencies (installed once, cached under bin/ by version; a test that lacks one names its target)

.PHONY: deps
deps: ## Everything make test needs: the Debian packages in one apt-get, then the tool builds in parallel (hack/deps.sh).
	hack/deps.sh

.PHONY: deps-apt
deps-apt: ## The Debian packages of every test and of make e2e, in one apt-get call.
	hack/deps.sh --apt-only

.PHONY: deps-redis
deps-redis: ## redis-server and redis-cli from Debian packages, copied into bin/.
	hack/install-redis.sh

.PHONY: deps-mail
deps-mail: ## Mailpit, the SMTP server of the mail tests (internal/testmail), built into bin/.
	hack/install-mailpit.sh >/dev/null

.PHONY: deps-s3
deps-s3: ## versitygw, the S3 server of the backup tests (internal/tests3), built into bin/.
	hack/install-versitygw.sh >/dev/null

.PHONY: deps-browser
deps-browser: ## Chromium (Debian package) and axe-core (npm, into bin/) for the browser tests (internal/testbrowser, test/signin).
	hack/install-chromium.sh >/dev/null
	hack/install-axe.sh >/dev/null

.PHONY: deps-envtest
deps-envtest: ## kube-apiserver (built) and etcd (Debian package) for the envtest suites, in bin/k8s/ (~8 min the first time).
	hack/envtest-assets.sh >/dev/null

.PHONY: deps-interop
deps-interop: ## The relying parties of test/interop: npm ci there, and oauth2-proxy built into bin/.
	hack/install-interop.sh >/dev/null

.PHONY: deps-upstream
deps-upstream: ## The federation tests' upstream OpenID provider (oidc-provider, npm ci in test/upstream).
	hack/install-upstream.sh

.PHONY: deps-dex
deps-dex: ## Dex, the federation tests' second upstream OpenID provider (internal/testdex), built into bin/.
	hack/install-dex.sh >/dev/null

.PHONY: deps-lint
deps-lint: $(STATICCHECK) $(CONTROLLER_GEN) ## staticcheck (make lint) and controller-gen (make generate, verify-generated), into bin/.

.PHONY: deps-e2e
deps-e2e: ## What make e2e's one-node cluster runs: Kubernetes' binaries, CoreDNS, Traefik, Prometheus, images (hack/node-cluster/build.sh).
	hack/node-cluster/build.sh

.PHONY: deps-chart
deps-chart: ## helm, helm-docs, promtool and the Prometheus Operator CRDs, into bin/.
	hack/install-chart-tools.sh
