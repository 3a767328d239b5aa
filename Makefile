# Switchyard. The two commands that work on a fresh machine: `make demo` and
# `make test`. Everything else is for developers.

GO        ?= go
BIN       := bin
# Fuzz budgets are counts of runs, not durations: with a duration, Go
# 1.26's fuzz coordinator can fail a clean run with "context deadline
# exceeded" as the time runs out (go.dev/issue/75804, fixed in Go 1.27;
# seen in CI here). ~10 s each on the CI machine.
FUZZ_SERVICEPORTS ?= 30000x
FUZZ_PARSE        ?= 5000x
PKGS      := ./...
EXAMPLE   := examples/file-export
export GOFLAGS := -buildvcs=false
# bash with pipefail: a failing `go test | tee` fails the target.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: all build test deps unit conformance ovs-next e2e e2e-node e2e-upstream example fuzz demo bench lint cross clean

all: build

build:
	$(GO) build -o $(BIN)/switchyard ./cmd/switchyard
	$(GO) build -o $(BIN)/kubectl-switchyard ./cmd/kubectl-switchyard

## test: lint, unit and integration tests (race detector), the conformance
## matrix, what differs on a newer Open vSwitch, the real-API-server e2e and chart tests, the real node,
## upstream's network e2e on three real nodes (routed and overlay), the
## third-party example module, and a bounded fuzz run.
test: lint unit conformance ovs-next e2e e2e-node e2e-upstream example fuzz
	@echo "make test: all passed"

## deps: what the integration tests need on the machine (Open vSwitch).
deps:
	@hack/ensure-ovs.sh

# The OVS conformance harness runs in `conformance` and the e2e tests in
# `e2e` (once each, without the race detector: their probes are timed real
# connections).
unit: deps
	$(GO) test -race -count=1 $$($(GO) list $(PKGS) | grep -v -e /conformance/ovsharness -e '/cmd/switchyard/e2e$$')

## e2e: a real kube-apiserver and etcd (built from the Go module proxy once,
## cached in ~/.cache/switchyard) and a real helm: the chart rendered for each
## dataplane and dry-run by the API server; switchyard run with the chart's
## RBAC and config against a real OVS, each change followed by traffic.
e2e: deps
	@mkdir -p $(BIN)
	@kube=$$(hack/ensure-kube.sh) && helm=$$(hack/ensure-helm.sh) && \
	SWITCHYARD_KUBE_DIR=$$kube SWITCHYARD_HELM=$$helm SWITCHYARD_E2E_REPORT=$(CURDIR)/$(BIN)/e2e-report.txt \
		$(GO) test -count=1 -timeout 20m -skip '^(TestRealNode|TestUpstreamConformance)$$' ./cmd/switchyard/e2e/ && cat $(BIN)/e2e-report.txt

## e2e-node: a real node with no kube-proxy — etcd, kube-apiserver,
## kube-controller-manager, kube-scheduler, containerd, runc and a kubelet
## in network namespaces (built or installed once by hack/ensure-node.sh) —
## the chart installed, upgraded and uninstalled by a real helm with
## dataplane=ovs, and a workload served through Services.
e2e-node: deps
	@mkdir -p $(BIN)
	@kube=$$(hack/ensure-kube.sh) && helm=$$(hack/ensure-helm.sh) && node=$$(hack/ensure-node.sh) && \
	rm -f $(BIN)/e2e-node-report.txt && \
	SWITCHYARD_KUBE_DIR=$$kube SWITCHYARD_HELM=$$helm SWITCHYARD_NODE_DIR=$$node SWITCHYARD_E2E_NODE_REPORT=$(CURDIR)/$(BIN)/e2e-node-report.txt \
		$(GO) test -count=1 -timeout 20m -run '^TestRealNode$$' ./cmd/switchyard/e2e/ && cat $(BIN)/e2e-node-report.txt

## e2e-upstream: upstream Kubernetes' own e2e.test (sig-network's
## [Conformance] specs, its Services and Networking specs but Slow, Serial,
## Disruptive, Flaky and feature-gated ones) on a cluster of three real
## nodes like e2e-node's with the chart and CoreDNS, once routed and once
## overlay (E2E_ENCAPS); e2e.test, agnhost, kubectl and CoreDNS built once
## by hack/ensure-e2e.sh. Reports and JUnit XML under bin/e2e-upstream;
## docs/upstream-conformance.md says more.
E2E_ENCAPS ?= none vxlan
e2e-upstream: deps
	@mkdir -p $(BIN)
	@kube=$$(hack/ensure-kube.sh) && helm=$$(hack/ensure-helm.sh) && node=$$(hack/ensure-node.sh) && e2e=$$(hack/ensure-e2e.sh) && \
	rm -rf $(BIN)/e2e-upstream && \
	for encap in $(E2E_ENCAPS); do \
		SWITCHYARD_KUBE_DIR=$$kube SWITCHYARD_HELM=$$helm SWITCHYARD_NODE_DIR=$$node SWITCHYARD_E2E_DIR=$$e2e \
		SWITCHYARD_E2E_ENCAP=$$encap SWITCHYARD_E2E_UPSTREAM_DIR=$(CURDIR)/$(BIN)/e2e-upstream \
			$(GO) test -count=1 -timeout 60m -run '^TestUpstreamConformance$$' ./cmd/switchyard/e2e/ || exit 1; \
		cat $(BIN)/e2e-upstream/encap-$$encap/table.md; \
	done

## conformance: every case over every driver (OVS on a real OVS, HNS on the
## simulator, the example driver); prints the matrix and writes
## docs/conformance.md.
CONF_OUT  := $(BIN)/conformance
HARNESSES := ovs-routed,ovs-overlay,hns-l2bridge,hns-overlay,file-export,graph-model
conformance: deps
	@rm -rf $(CONF_OUT); status=0; \
	SWITCHYARD_CONFORMANCE_OUT=$(CURDIR)/$(CONF_OUT) $(GO) test -count=1 ./conformance/... || status=1; \
	(cd $(EXAMPLE) && SWITCHYARD_CONFORMANCE_OUT=$(CURDIR)/$(CONF_OUT) $(GO) test -count=1 -run '^TestConformance$$$$' .) || status=1; \
	$(GO) run ./conformance/cmd/conformance-matrix -reports $(CONF_OUT) -out docs/conformance.md -want $(HARNESSES) || status=1; \
	exit $$status

## ovs-next: the tests of what the driver does differently on a newer Open
## vSwitch (docs/ovs.md, "Source-port clashes"), on Debian 13's (fetched
## once by hack/ensure-ovs-next.sh, run through its own loader), with the
## driver's own choice for it; `make unit` runs them on the machine's.
ovs-next: deps
	@dir=$$(hack/ensure-ovs-next.sh) && PATH=$$dir/bin:$$PATH \
		$(GO) test -count=1 -v -run '^(TestSoftwareVersionIsOVSs|TestSameSourcePortThroughServiceThenStraight|TestSameFourTupleAgainIsAnswered)$$' ./ovs/ofconn/ ./ovs/

example:
	cd $(EXAMPLE) && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd $(EXAMPLE) && $(GO) build -o ../../$(BIN)/switchyard-file-export .
	$(BIN)/switchyard-file-export run --dataplane file-export --file examples/cluster.yaml \
		--node-name node-1 --once --file-export-path $(BIN)/file-export-smoke.json
	@test -s $(BIN)/file-export-smoke.json && echo "example driver: wrote $(BIN)/file-export-smoke.json"

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzServicePorts$$' -fuzztime $(FUZZ_SERVICEPORTS) -fuzzminimizetime 200x ./core/build/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_PARSE) -fuzzminimizetime 200x ./core/source/file/

## demo: the sample cluster through the core and every driver; no cluster needed.
demo: build
	@hack/demo.sh

## bench: Go benchmarks at 1k and 10k Services (10 endpoints each): the
## core; the OVS driver's model and the driver on a real OVS; one Service of
## 1k, 10k and 50k endpoints next to 10k Services; the HNS driver against
## the simulator; the switchyard process with a real OVS; and 1k, 10k, 30k
## and 100k Services through a real kube-apiserver, with upstream
## kube-proxy (nftables) beside switchyard up to 30k (30k and 100k take
## hours: three runs of each). Writes docs/benchmarks.md.
bench: deps
	@mkdir -p $(BIN)
	$(GO) test -run '^$$' -bench FullBuild -benchmem -benchtime 10x -count 3 ./core/tracker/ | tee $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench OneEndpointChange -benchmem -benchtime 2000x -count 3 ./core/tracker/ | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench OneEndpointChange -benchmem -benchtime 500x -count 3 ./ovs/ | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'RealOVS$$' -benchtime 1x -count 3 -timeout 60m ./ovs/ | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench RealOVSLargeService -benchtime 1x -count 3 -timeout 30m ./ovs/ | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench LargeServiceChange -benchmem -benchtime 100x -count 3 ./ovs/ | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench MemorySizing -benchtime 1x -count 3 ./ovs/ | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench OneEndpointChange -benchmem -benchtime 500x -count 3 ./hns/ | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench FullSync -benchtime 1x -count 3 ./hns/ | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench Parse -benchmem -benchtime 3x -count 3 ./core/source/file/ | tee -a $(BIN)/bench.txt
	@kube=$$(hack/ensure-kube.sh) && helm=$$(hack/ensure-helm.sh) && kp=$$(hack/ensure-node.sh kube-proxy) && \
	SWITCHYARD_KUBE_DIR=$$kube SWITCHYARD_HELM=$$helm SWITCHYARD_KUBE_PROXY_DIR=$$kp \
		$(GO) test -run '^$$' -bench 'SwitchyardProcess|APIServerAtScale/^services=(1000|10000)$$/' -benchtime 1x -count 3 -timeout 150m ./cmd/switchyard/e2e/ | tee -a $(BIN)/bench.txt
	@kube=$$(hack/ensure-kube.sh) && helm=$$(hack/ensure-helm.sh) && kp=$$(hack/ensure-node.sh kube-proxy) && \
	SWITCHYARD_KUBE_DIR=$$kube SWITCHYARD_HELM=$$helm SWITCHYARD_KUBE_PROXY_DIR=$$kp \
		$(GO) test -run '^$$' -bench 'APIServerAtScale/^services=(30000|100000)$$/' -benchtime 1x -count 3 -timeout 360m ./cmd/switchyard/e2e/ | tee -a $(BIN)/bench.txt
	@kube=$$(hack/ensure-kube.sh) && $(GO) run ./hack/benchreport -in $(BIN)/bench.txt -out docs/benchmarks.md -kube-apiserver $$kube/kube-apiserver

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	GOFLAGS= $(GO) run $(STATICCHECK) $(PKGS)
	GOOS=windows $(GO) build $(PKGS)
	GOOS=windows $(GO) vet $(PKGS)
	cd $(EXAMPLE) && GOOS=windows $(GO) vet ./...

cross:
	GOOS=windows GOARCH=amd64 $(GO) build -o $(BIN)/switchyard.exe ./cmd/switchyard

clean:
	rm -rf $(BIN)
