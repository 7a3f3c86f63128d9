# Spool's build and test entry points. `make test` is what CI runs.

GO ?= go
# The official RocketMQ Go client reads this at package init; keep its
# broadcasting offset files out of $HOME.
CLIENT_OFFSETS ?= $(shell mktemp -d 2>/dev/null || echo /tmp/spool-client-offsets)

.PHONY: build test test-unit test-e2e vet fuzz incidents clean

build:
	$(GO) build -o spool ./cmd/spool

vet:
	$(GO) vet ./...

# Every package but the end-to-end suite runs under the race detector. The
# end-to-end suite drives a race-built broker with the official client,
# which has data races of its own and so runs without -race.
test: vet test-unit test-e2e

test-unit:
	$(GO) test -race -timeout 8m $$($(GO) list ./... | grep -v /test/e2e)

# -count=1: the suite builds the broker binary itself, which the test
# cache cannot see, so a cached pass could hide a changed broker.
test-e2e:
	env 'rocketmq.client.localOffsetStoreDir=$(CLIENT_OFFSETS)' $(GO) test -count=1 -timeout 8m ./test/e2e/

# Short fuzzing passes over every decoder of network and disk bytes.
fuzz:
	$(GO) test ./remoting -run '^$$' -fuzz FuzzDecodeFrame -fuzztime 30s
	$(GO) test ./message -run '^$$' -fuzz FuzzDecodeRecord -fuzztime 30s

clean:
	rm -f spool
