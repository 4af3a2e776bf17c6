# redmux — see README.md. Every target works on a fresh machine with Go.
GO      ?= go
PKGS    := ./...
# Fuzz budgets are execution counts, not durations: go1.26's coordinator can
# fail a target with a bare "context deadline exceeded" when a -fuzztime
# duration expires while a worker is mid-input (golang/go#75804, fixed in
# Go 1.27); a count has no deadline to race. 300000x is ~30 s per target here.
FUZZTIME ?= 300000x
SAFETY_TRANSPORT ?= auto

# staticcheck is a tool run with go run at this pinned version, not a
# requirement in go.mod; v0.8.2 (2026.2.2) is the release that knows go1.26.
# The module cache is asked before GOPROXY, so once fetched it runs offline.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Every check but these, each off for a reason:
#   ST1003 (initialisms, underscores in names): exported names are fixed
#          (docs/ARCHITECTURE.md "Fixed"), renaming them breaks users;
#   ST1016 (one receiver name per type): a receiver may be named for its
#          role, as Incarnation.Same(b) names it a;
#   ST1020, ST1021, ST1022 (a doc comment begins with the name): ours may
#          begin with a call (WithFailFast(false) makes ...), a label
#          (ErrHoldLimit: ...) or what a group of declarations is.
STATICCHECK_CHECKS ?= all,-ST1003,-ST1016,-ST1020,-ST1021,-ST1022

.PHONY: install-check interop run test test-short vet fmt-check lint staticcheck bench-micro fuzz bench-real baselines sweeps safety sentinel-soak mutants mutants-short tidy-check clean

## run: the main job — lock benchmark on the embedded 5-node fake cluster (~20 s)
run:
	$(GO) run ./cmd/redmux-bench

## test: gofmt check, go vet, and every test with the race detector; then mux's suite again
## with every client on io_uring (said and skipped where the kernel refuses io_uring; a failure under REDMUX_REQUIRE_IOURING=1, as CI sets);
## then every benchmark once (-benchtime 1x), so that a benchmark that no longer runs fails here (~15 min)
test: fmt-check vet
	$(GO) test -race -shuffle=on -count=1 -timeout 45m $(PKGS)
	REDMUX_TEST_TRANSPORT=io_uring $(GO) test -race -shuffle=on -count=1 -timeout 10m ./mux
	$(GO) test -run '^$$' -bench . -benchtime 1x -count=1 -timeout 10m $(PKGS)

## install-check: README's Install recipes (replace, workspace; each also for the Prometheus/OTel
## adapters, interop/observe), applied as written to a module outside the checkout in a temporary
## directory, then built, vetted and run on the fake; the adapters' importer must get no peer lock client (~15 s)
install-check:
	./.ci/install-check

## interop: other Redlock clients (redsync, rueidislock, bsm/redislock) on the fake cluster;
## a nested module (interop/go.mod) so the main module does not depend on them; then the
## Prometheus/OTel adapters, their own module (interop/observe/go.mod): each tidy-checked, vetted, tested
interop:
	cd interop && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) test -race -shuffle=on -count=1 -timeout 10m ./...
	cd interop/observe && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) test -race -shuffle=on -count=1 -timeout 10m ./...

## test-short: the quick subset (-short), for iterating
test-short:
	$(GO) test -short -count=1 $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## tidy-check: go.mod/go.sum are tidy (go mod tidy -diff prints the diff and fails; changes nothing)
tidy-check:
	$(GO) mod tidy -diff

## staticcheck: staticcheck at the version STATICCHECK pins, with the checks STATICCHECK_CHECKS names
staticcheck:
	GOPROXY="file://$$($(GO) env GOMODCACHE)/cache/download,$$($(GO) env GOPROXY)" \
		$(GO) run $(STATICCHECK) -checks '$(STATICCHECK_CHECKS)' $(PKGS)

## lint: gofmt, vet, tidy check, staticcheck, the other systems' builds, and the portable
## (net.Conn) mux engine's tests, which CI's Linux run would not build otherwise
lint: fmt-check vet tidy-check staticcheck
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(GO) build ./...
	$(GO) test -count=1 -tags redmux_portable ./mux

## bench-micro: Go micro-benchmarks with allocation counts
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./resp ./mux ./redlock

## fuzz: each fuzz target for FUZZTIME executions (default 300000x, ~30 s each; CI runs 100000x)
fuzz:
	@set -e; for f in $$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go'); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== ./$$(dirname $$f) $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f); \
		done; \
	done

## safety: the Redlock safety checker with 100,000 contended acquisitions under faults, 100,000 with undelayed restarts, failovers
## and rolling restarts (the quarantine), 100,000 of those on Redis Cluster nodes, 100,000 on them with only the shard failovers no
## marker sees, 100,000 with fencing tokens and zombies, 25,000 with late extensions on two resources, 100,000 on nodes that
## refuse INFO all along, 50,000 with restarts on nodes that all refuse CLIENT TRACKING (no flush watch), then 10,000 without
## faults after which no lock key may be left on any node (~145 min; on 2 shared vCPUs the longest took 31 min: a test
## stops at 60 min, short of its count, as a failure);
## SAFETY_TRANSPORT=epoll or io_uring runs its clients on that transport (default auto, mux's default)
safety:
	$(GO) test -run '^(TestSafety(UnderFaults|Restarts|ClusterRestarts|ClusterFailovers|Fencing|LateExtensions|InfoRefused|NoWatch)|TestAvailabilityNoLeftovers)$$' -count=1 -timeout 6h -v ./redlock -safety.acquisitions=100000 -safety.leftovers=10000 -safety.max=60m -safety.transport=$(SAFETY_TRANSPORT)

## sentinel-soak: issue 45's soak on 15 real processes (3 Sentinel groups, 4 clients, 3 resources; a resumed old primary, a hung
## sentinel through SENTINEL FAILOVER, double lag failovers and a new client after them): 0 overlaps (~1.5 min; needs redis-server)
sentinel-soak:
	REDMUX_REQUIRE_REDIS=1 $(GO) test -run '^TestSentinelGroupsSoak$$' -count=1 -timeout 15m -v ./redlock

## mutants: the mutation suite: every planted bug of redlock/internal/mutants/list.go must be caught by the checker or its scripted test (~12 min)
mutants:
	$(GO) run ./redlock/internal/mutants

## mutants-short: the cheap-to-catch mutants only (CI, ~3 min)
mutants-short:
	$(GO) run ./redlock/internal/mutants -short -control 30s -max 60s

## bench-real: the benchmark against 5 local redis-server processes it starts and stops itself (~30 s)
bench-real:
	$(GO) run ./cmd/redmux-bench -real-local 5 -out results/latest-real -force

## baselines: rewrite the committed reports under results/ (~2 min; run on a quiet machine; make sweeps for the capacity sweeps)
baselines:
	$(GO) run ./cmd/redmux-bench -out results/fake-5 -force -title "Embedded 5-node fake cluster (make run)"
	$(GO) run ./cmd/redmux-bench -real-local 5 -out results/real-5 -force -title "5 local redis-server processes (make bench-real)"
	$(GO) run ./cmd/redmux-bench -latency 1ms -out results/fake-5-latency-1ms -force -title "Embedded 5-node fake cluster, 1ms reply latency on every node"
	$(GO) run ./cmd/redmux-bench -fault slow:1:10ms -out results/fake-5-slow-node -force -title "Embedded 5-node fake cluster, node 1 slow (10ms)"

## sweeps: rewrite the committed capacity sweeps under results/ (~7 min; run on a quiet machine)
sweeps:
	$(GO) run ./cmd/redmux-bench sweep -real-local 5 -slo 'p99<5ms' -out results/sweep-real-5 -force -title "Capacity sweep: 5 local redis-server processes"
	$(GO) run ./cmd/redmux-bench sweep -latency 1ms -c 256 -slo 'p99<10ms' -out results/sweep-fake-5-latency-1ms -force -title "Capacity sweep: embedded 5-node fake cluster, 1ms reply latency on every node"

clean:
	rm -rf results/latest results/latest-real
