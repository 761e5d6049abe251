# mcp-guard's build and tests. `make test` is what CI runs: vet, every Go
# test with the race detector (end-to-end tests drive the real binary with
# the go-sdk client, the fake upstream and the npm reference servers), and a
# short run of each fuzz target.

GO        ?= go
PEERS     := testdata/peers
FUZZTIME  ?= 20000x

.PHONY: all build test vet unit peers fuzz mutate bench soak clean

all: build

build:
	$(GO) build -o bin/mcp-guard ./cmd/mcp-guard

test: vet peers unit fuzz

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./... ./testdata/fakeup ./testdata/relay

# The npm peers are pinned by testdata/peers/package-lock.json.
peers: $(PEERS)/node_modules/.package-lock.json

$(PEERS)/node_modules/.package-lock.json: $(PEERS)/package-lock.json
	cd $(PEERS) && npm ci --no-audit --no-fund

unit:
	$(GO) test -race -count=1 ./...

# A short run of every fuzz target, counted in executions: with a duration the
# go tool can report "context deadline exceeded" when time runs out while a
# worker is busy. Run longer with FUZZTIME=2000000x (or FUZZTIME=5m by hand).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 3s $$pkg || exit 1; \
	  done; \
	done

mutate:
	scripts/mutate

# The crash and load tests in full: 50 rounds of kill -9 of serve under a
# stream of calls, and 8 hosts x 1,000 calls through serve processes sharing
# one ledger. `make test` runs them short (3 rounds; 4 x 100 calls).
soak:
	MCP_GUARD_SOAK=1 $(GO) test -race -count=1 -timeout 30m -v -run '^(TestCrash|TestLoad)_' ./cmd/mcp-guard

clean:
	rm -rf bin
