#!/usr/bin/env bash
# System calls and context switches per message of a Spool broker, per
# workload shape: figures that do not move with the machine's load the way
# msg/s does, for comparing two builds of the transport or the store.
#
# For each shape it starts `spool standalone` on a fresh store under
# `strace -f -c` (seccomp filtered, so only the counted calls stop), drives
# it with `spool bench produce`, and prints the counted calls per
# acknowledged message. A second pass without strace reads the broker's
# voluntary and involuntary context switches (summed over its threads) and
# its read/write system calls (/proc/PID/io syscr, syscw) per message.
#
#   shape  producers x in flight, body size
#   S1     1 x 1, 128 B
#   S2b    1 x 64, 128 B
#   S2     64 x 1, 128 B
#   S4     4 x 256, 1 KiB
#
# Usage: bench/syscalls.sh [SPOOL_BINARY] (default: builds ./cmd/spool)
# Environment: DURATION (per shape, default 3s), SHAPES (default
#   "S1,1,1,128 S2b,1,64,128 S2,64,1,128 S4,4,256,1024"),
#   SYSCALLS_NAMESRV_PORT, SYSCALLS_BROKER_PORT (loopback, default 29876,
#   29911).
set -euo pipefail

DURATION=${DURATION:-3s}
SHAPES=${SHAPES:-"S1,1,1,128 S2b,1,64,128 S2,64,1,128 S4,4,256,1024"}
NS=127.0.0.1:${SYSCALLS_NAMESRV_PORT:-29876}
BR=127.0.0.1:${SYSCALLS_BROKER_PORT:-29911}
CALLS=read,write,writev,pwrite64,futex,epoll_pwait,nanosleep

command -v strace >/dev/null || { echo "syscalls.sh: strace is needed" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
BIN=${1:-}
if [[ -z $BIN ]]; then
	BIN=$WORK/spool
	go build -o "$BIN" ./cmd/spool
fi

# wait_port HOST:PORT: until something listens there (10 s at most).
wait_port() {
	for _ in $(seq 100); do
		if (echo >"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "syscalls.sh: nothing listens on $1" >&2
	return 1
}

# produce P I SIZE: runs the load, prints the acknowledged messages.
produce() {
	"$BIN" bench produce -n "$NS" --producers "$1" --inflight "$2" --size "$3" \
		--duration "$DURATION" --json 2>/dev/null | tail -1 |
		python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["ok"])'
}

# ctx PID: voluntary and involuntary switches summed over the threads.
ctx() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/^voluntary_ctxt/{v+=$2} /^nonvoluntary_ctxt/{n+=$2} END{print v+0, n+0}'
}

printf '%-4s %9s  %s\n' shape messages "per message"
for shape in $SHAPES; do
	IFS=, read -r name p i size <<<"$shape"

	# Pass 1: strace counts (the topic is created by this run's first
	# requests, a few dozen calls).
	rm -rf "$WORK/store"
	strace -f --seccomp-bpf -qq -c -e trace=$CALLS -o "$WORK/strace.txt" \
		"$BIN" standalone --store "$WORK/store" --listen "$BR" --namesrv-listen "$NS" \
		>"$WORK/broker.log" 2>&1 &
	sp=$!
	wait_port "$BR"
	ok=$(produce "$p" "$i" "$size")
	kill "$(pgrep -P "$sp" | head -1 || echo "$sp")" 2>/dev/null || true
	wait "$sp" 2>/dev/null || true
	traced=$(awk -v ok="$ok" 'NF >= 5 && $NF ~ /^[a-z_0-9]+$/ && $NF != "total" && $NF != "syscall" {
		err = (NF == 6) ? $5 : 0
		printf "%s=%.3f", $NF, $4 / ok
		if (err > 0) printf "(EAGAIN etc. %.3f)", err / ok
		printf " "
	}' "$WORK/strace.txt")

	# Pass 2: untraced, context switches and /proc I/O call counters.
	rm -rf "$WORK/store"
	"$BIN" standalone --store "$WORK/store" --listen "$BR" --namesrv-listen "$NS" \
		>"$WORK/broker.log" 2>&1 &
	bp=$!
	wait_port "$BR"
	"$BIN" bench produce -n "$NS" --producers 1 --duration 1s >/dev/null 2>&1 # creates the topic
	read -r v0 n0 <<<"$(ctx $bp)"
	read -r r0 w0 <<<"$(awk '/^syscr|^syscw/{printf "%s ", $2}' /proc/$bp/io)"
	ok2=$(produce "$p" "$i" "$size")
	read -r v1 n1 <<<"$(ctx $bp)"
	read -r r1 w1 <<<"$(awk '/^syscr|^syscw/{printf "%s ", $2}' /proc/$bp/io)"
	kill "$bp"
	wait "$bp" 2>/dev/null || true
	untraced=$(awk -v ok="$ok2" -v v=$((v1 - v0)) -v n=$((n1 - n0)) -v r=$((r1 - r0)) -v w=$((w1 - w0)) \
		'BEGIN{printf "vcs=%.3f ivcs=%.3f syscr=%.3f syscw=%.3f", v/ok, n/ok, r/ok, w/ok}')

	printf '%-4s %9s  traced: %s\n' "$name" "$ok" "$traced"
	printf '%-4s %9s  untraced: %s (load %s)\n' "$name" "$ok2" "$untraced" "$(cut -d' ' -f1 /proc/loadavg)"
done
