# mcp-guard's build and tests. `make test` is what CI runs: vet, the
# layering of internal/, staticcheck and deadcode, every Go test with the race detector (end-to-end
# tests drive the real binary with the go-sdk client, the fake upstream and
# the npm reference servers), and a short run of each fuzz target.

GO        ?= go
PEERS     := testdata/peers
# TESTPKGS: test-only code under testdata/, which ./... does not match: the
# hostile fake upstream's library (its own tests run with the rest) and the
# benchmarks' CPU meter.
TESTPKGS  := ./testdata/fakeupstream ./testdata/benchcpu
TESTPROGS := $(TESTPKGS) ./testdata/fakeup ./testdata/relay ./testdata/benchclient ./testdata/modernup ./testdata/modernserver ./testdata/goresource ./testdata/ledgertamper
FUZZSHORT ?= 20000x
# FUZZSLOW: the executions of a fuzz target that drives a real SQLite ledger
# through held approvals for each input (gate FuzzFlows: about one input a
# second), in fuzz-short.
FUZZSLOW ?= 40x
FUZZTIME  ?= 60s
FUZZFLAGS ?=
# The linters, pinned: `make lint` fetches them through the module proxy.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    ?= golang.org/x/tools/cmd/deadcode@v0.53.0

.PHONY: all build test vet layering lint unit peers cover fuzz-short fuzz mutate bench soak clean

all: build

build:
	$(GO) build -o bin/mcp-guard ./cmd/mcp-guard

test: vet layering lint peers unit fuzz-short

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./... $(TESTPROGS)

# layering: the packages under internal/ are helpers that know nothing of the
# product: none of them, nor their tests, imports a package of the module
# outside internal/ (approvals, classify, config, export, gate, ledger, pin,
# proxy, upstream, ...). A helper that needs one is a feature: it belongs in a
# top-level package of its own. Of the module's packages outside cmd/, none
# imports proxy or cmd, proxy decides nothing (it imports neither ledger,
# classify nor approvals: what it records and reads goes through gate), and
# only proxy reaches upstream: gate forwards through an interface.
layering:
	@mod=$$($(GO) list -m) || exit 1; \
	imports=$$($(GO) list -f '{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./internal/...) || exit 1; \
	bad=$$(echo "$$imports" | awk -v mod="$$mod" '{ for (i = 2; i <= NF; i++) if ($$i == mod || (index($$i, mod "/") == 1 && index($$i, mod "/internal/") != 1)) print "  " $$1 " imports " $$i }' | sort -u); \
	if [ -n "$$bad" ]; then echo "layering: a package under internal/ imports a product package:"; echo "$$bad"; exit 1; fi; \
	rooms=$$($(GO) list -f '{{.ImportPath}} {{join .Imports " "}}' ./...) || exit 1; \
	bad=$$(echo "$$rooms" | awk -v mod="$$mod/" '{ p = substr($$1, length(mod) + 1); if (p ~ /^cmd\//) next; for (i = 2; i <= NF; i++) { d = substr($$i, length(mod) + 1); \
		if (index($$i, mod) == 1 && (d == "proxy" || d ~ /^cmd\// || (p == "proxy" && (d == "ledger" || d == "classify" || d == "approvals")) || (d == "upstream" && p != "proxy"))) print "  " p " imports " d } }' | sort -u); \
	if [ -n "$$bad" ]; then echo "layering: a package imports what DESIGN.md's table does not let it:"; echo "$$bad"; exit 1; fi

# lint: staticcheck finds nothing (a finding that is right as it is says so
# with a //lint:ignore and its reason), deadcode finds no function the
# binary cannot reach (code kept for tests lives in _test.go files), and
# every entry of testdata/mutations.txt is well formed: its find text occurs
# once and its test names a test function of its package.
lint:
	$(GO) run $(STATICCHECK) ./... $(TESTPROGS)
	@$(GO) run ./scripts/mutator -check >/dev/null || $(GO) run ./scripts/mutator -check
	@dead=$$($(GO) run $(DEADCODE) ./cmd/mcp-guard) || exit 1; \
	if [ -n "$$dead" ]; then echo "deadcode: unreachable from ./cmd/mcp-guard:"; echo "$$dead"; exit 1; fi

# The npm peers are pinned by testdata/peers/package-lock.json.
peers: $(PEERS)/node_modules/.package-lock.json

$(PEERS)/node_modules/.package-lock.json: $(PEERS)/package-lock.json
	cd $(PEERS) && npm ci --no-audit --no-fund

# The end-to-end package runs for minutes; on a loaded 2-core machine more
# than go test's default 10m, so its bound is set here (CI allows 90m).
# scripts/leakcheck fails the run if any process a test started outlives it.
# -parallel 4: most of the end-to-end tests wait on child processes and
# pipes, not the CPU (the package: 212 s at 2, 158 s at 4, on 2 cores).
unit:
	scripts/leakcheck $(GO) test -race -count=1 -parallel 4 -timeout 30m ./... $(TESTPKGS)

# cover: not part of `make test`. Every package's tests with coverage of the
# whole module, written as covdata to COVERDIR; the end-to-end tests build
# mcp-guard with coverage too and point every process they start there
# (MCP_GUARD_COVERDIR), so the percentages per package are what all tests
# reach, unit and end to end (printed even when a test fails, and then the
# target fails).
COVERDIR ?= $(CURDIR)/coverdata

cover: peers
	rm -rf $(COVERDIR) && mkdir -p $(COVERDIR)
	MCP_GUARD_COVERDIR=$(COVERDIR) $(GO) test -count=1 -timeout 30m -cover -coverpkg=./... ./... -args -test.gocoverdir=$(COVERDIR); \
	status=$$?; $(GO) tool covdata percent -i=$(COVERDIR); exit $$status

# Each fuzz target starts from its seed corpus, testdata/fuzz/<target>/ in its
# package (plain `go test` runs those seeds too); an input that fails is
# written there, to be kept as a regression seed with its fix. FUZZFLAGS adds
# flags, e.g. FUZZFLAGS=-parallel=1.

# fuzz-short: a short run of every fuzz target, part of `make test`, counted in
# executions (FUZZSHORT=2000000x for more): with a duration, go 1.26's fuzzer
# can fail a target with "context deadline exceeded" when time runs out while
# a worker is busy, which would make CI flaky.
fuzz-short:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; \
	    n=$(FUZZSHORT); case $$f in FuzzFlows) n=$(FUZZSLOW);; esac; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $$n -fuzzminimizetime 3s $(FUZZFLAGS) $$pkg || exit 1; \
	  done; \
	done

# fuzz: not in CI. Every fuzz target for FUZZTIME each (default 60s; e.g.
# make fuzz FUZZTIME=5m). A target that fails with "context deadline
# exceeded" and writes no input hit that flake: reported and passed over. Any
# other failure fails the run, once every target has had its turn.
fuzz:
	@log=$$(mktemp); failed=""; \
	for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    { $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$pkg; echo $$? >$$log.rc; } 2>&1 | tee $$log; \
	    if [ "$$(cat $$log.rc)" = 0 ]; then :; \
	    elif grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written to' $$log; then \
	      echo "fuzz $$pkg $$f: context deadline exceeded, no failing input: the go fuzzer's time-out flake, not a finding"; \
	    else failed="$$failed $$pkg.$$f"; fi; \
	  done; \
	done; \
	rm -f $$log $$log.rc; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed"; exit 1; fi

mutate:
	scripts/mutate

# The crash and load tests in full: 50 rounds of kill -9 of serve under a
# stream of calls, and 8 hosts x 1,000 calls through serve processes sharing
# one ledger. `make test` runs them short (3 rounds; 4 x 100 calls).
soak:
	MCP_GUARD_SOAK=1 $(GO) test -race -count=1 -timeout 30m -v -run '^(TestCrash|TestLoad)_' ./cmd/mcp-guard

clean:
	rm -rf bin coverdata
