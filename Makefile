# Chorus — build, run and test. See README.md.
SHELL := /bin/bash
GOBIN ?= $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

MODULES := pkg proto/gen/go services/orgs services/contacts gateway cmd tests/e2e

BUF_VERSION                := v1.75.0
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPC_GATEWAY_VERSION       := v2.33.0

.PHONY: tools generate check build run test bench fuzz

tools: ## install buf and the protoc plugins at pinned versions
	go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)
	go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)

generate: ## regenerate Go stubs, gateway handlers and the OpenAPI document
	buf generate

build:
	mkdir -p bin
	cd cmd && go build -o ../bin/chorus ./chorus && go build -o ../bin/chorusctl ./chorusctl
