# Chorus — build, run and test. See README.md.
SHELL := /bin/bash
GOBIN ?= $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

MODULES := pkg proto/gen/go services/orgs services/contacts services/billing services/messaging services/campaigns services/polls services/analytics services/webhooks gateway stack cmd deploy tests/e2e

BUF_VERSION                := v1.75.0
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPC_GATEWAY_VERSION       := v2.33.0

FUZZTIME ?= 15s

.PHONY: tools generate check build images run stop test faults bench fuzz

tools: ## install buf and the protoc plugins at pinned versions
	go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)
	go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)

generate: ## regenerate Go stubs, gateway handlers and the OpenAPI document; vendor the API reference's renderer
	buf generate
	go run ./gateway/openapi/gen
	gateway/apidocs/vendor.sh

check: ## gofmt, every module built and vetted alone, buf lint, and generated code current
	@out=$$(git ls-files '*.go' | grep -v '^proto/gen/' | xargs gofmt -l); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@# GOWORK=off: each module must build from its own go.mod and go.sum, as its image does.
	@for m in $(MODULES); do echo "go build and vet $$m (alone)"; (cd $$m && GOWORK=off go build ./... && GOWORK=off go vet ./...) || exit 1; done
	buf lint
	$(MAKE) --no-print-directory generate
	@git diff --exit-code -- proto/gen gateway/openapi gateway/apidocs || { echo "generated code is stale: run make generate and commit"; exit 1; }
	@if [ -n "$$(git status --porcelain -- proto/gen gateway/openapi gateway/apidocs)" ]; then git status --porcelain -- proto/gen gateway/openapi gateway/apidocs; echo "generated files not committed"; exit 1; fi

build: ## build bin/chorus (all-in-one) and bin/chorusctl
	@echo "building bin/chorus and bin/chorusctl (the first build downloads and compiles the modules: a few minutes)"
	mkdir -p bin
	cd cmd && go build -o ../bin/chorus ./chorus && go build -o ../bin/chorusctl ./chorusctl

# Image tag and labels: the commit's description and time, so a rebuild of one commit is the
# same image.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
CREATED ?= $(shell git show -s --format=%cI HEAD 2>/dev/null)

images: ## one image per service and the gateway, as loadable tarballs in bin/images (no registry, no daemon)
	go run ./deploy/cmd/images -out bin/images -version $(VERSION) -commit $(COMMIT) $(if $(CREATED),-created $(CREATED))

run: build ## the whole stack on this machine, in the foreground
	deploy/local/run.sh

stop: ## stop the private PostgreSQL and Redis that make run started when the machine's did not answer
	deploy/local/stop.sh

# One go test over every module of the workspace, so one module's packages compile while
# another's tests wait on the database (about a minute faster than a module at a time).
TEST_PKGS := $(foreach m,$(filter-out proto/gen/go,$(MODULES)),./$(m)/...)

test: ## every module's tests against the real PostgreSQL and Redis, race detector on
	go test -race -count=1 -timeout 60m $(TEST_PKGS)

faults: ## the campaign fault test at the issue's 20,000 contacts (make test runs it at 2,000)
	cd tests/e2e && CHORUS_E2E_FAULT_CONTACTS=20000 go test -count=1 -timeout 60m -run '^TestCampaignSurvivesKilledProcesses$$' -v .

bench: ## performance figures against raw-SQL baselines (not part of make test)
	cd tests/e2e && go run ./bench

fuzz: ## run every fuzz target for FUZZTIME each
	@for m in $(MODULES); do \
	  for pkg in $$(cd $$m && go list ./...); do \
	    for f in $$(cd $$m && go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	      echo "== $$pkg $$f"; (cd $$m && go test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg) || exit 1; \
	    done; \
	  done; \
	done
