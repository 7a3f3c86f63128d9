# Spool's build and test entry points. `make test` is what CI runs.

GO ?= go
# The official RocketMQ Go client reads this at package init; keep its
# broadcasting offset files out of $HOME.
CLIENT_OFFSETS ?= $(shell mktemp -d 2>/dev/null || echo /tmp/spool-client-offsets)

.PHONY: build test test-unit test-e2e test-failover failover-long test-soak vet fuzz fuzz-list incidents clean

build:
	$(GO) build -o spool ./cmd/spool

vet:
	$(GO) vet ./...

# Every package but the end-to-end and failover suites runs under the race
# detector. Those two drive broker processes with the official client,
# which has data races of its own, and so run without -race.
test: vet test-unit test-e2e test-failover

# The transport's tests run a second time with their servers on event
# loops (the broker's default) instead of reader and writer goroutines.
# The allocation counts of the send and pull paths are held without the
# race detector, whose sync.Pool drops a quarter of what is put back.
test-unit:
	$(GO) test -race -timeout 8m $$($(GO) list ./... | grep -v -e /test/e2e -e '/test/failover$$')
	SPOOL_TEST_EVENT_LOOPS=1 $(GO) test -race -count=1 -timeout 4m ./remoting/transport/
	$(GO) test -count=1 -timeout 2m -run '^TestSendAndPullAllocations$$' ./internal/broker/

# -count=1: the suite builds the broker binary itself, which the test
# cache cannot see, so a cached pass could hide a changed broker.
test-e2e:
	env 'rocketmq.client.localOffsetStoreDir=$(CLIENT_OFFSETS)' $(GO) test -count=1 -timeout 8m ./test/e2e/

# The failover suite's short form (one SIGKILL of a controller-mode master)
# and the harness's own test; the checker runs in test-unit.
test-failover:
	env 'rocketmq.client.localOffsetStoreDir=$(CLIENT_OFFSETS)' $(GO) test -count=1 -timeout 8m ./test/failover/

# The failover suite's long form: at least 50 faults, each alone and in
# pairs, and the table of failover times.
failover-long:
	env 'rocketmq.client.localOffsetStoreDir=$(CLIENT_OFFSETS)' $(GO) test -tags failover -count=1 -timeout 120m -run TestFailoverLong -v ./test/failover/

# The long forms of the replication tests (build tag soak): the
# SYNC_MASTER kill-and-restart loop five times, a 2 GiB catch-up.
test-soak:
	$(GO) test -tags soak -count=1 -timeout 30m -run 'TestNewSlaveCatchesUp' ./internal/ha/
	env 'rocketmq.client.localOffsetStoreDir=$(CLIENT_OFFSETS)' $(GO) test -tags soak -count=1 -timeout 15m -run 'TestReplicationSyncMasterKillLoop' ./test/e2e/

# Short fuzzing passes over every fuzz target of the module (go test takes
# one target per run), FUZZTIME each. The list is found, not written down,
# so a new target is fuzzed without editing this file.
FUZZTIME ?= 10s
FUZZ_LIST = grep -r --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' . | sed 's|/[^/]*_test\.go:func | |' | sort

fuzz:
	@$(FUZZ_LIST) | while read -r dir target; do \
		echo "fuzz $$dir $$target ($(FUZZTIME))"; \
		$(GO) test "$$dir" -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

# Every fuzz target: package directory and name, one a line.
fuzz-list:
	@$(FUZZ_LIST)

clean:
	rm -f spool
