#!/usr/bin/env bash
# Replication figures on this machine, over loopback only: a name server, a
# master and a slave of one broker name, driven by `spool bench produce`.
#
#   sync    SYNC_MASTER + ASYNC_FLUSH with its slave: 128 B, 64 connections
#           x 1 in flight (every SEND_OK waits for the slave's acknowledgement)
#   async   ASYNC_MASTER + ASYNC_FLUSH, the same load, with a slave attached
#           and then without one (the slave stopped), for the send p99 ratio
#
# Each master and slave starts on a fresh store directory, deleted at exit.
#
# Usage: bench/replication.sh [--bin PATH] [--duration SECS] [--only sync,async]
#   --bin PATH       spool binary (default: go build -o a temporary file)
#   --duration SECS  seconds per bench run (default 20)
# Environment: REPL_DIR (parent of the scratch directory, default /var/tmp),
#   REPL_NAMESRV_PORT, REPL_MASTER_PORT, REPL_SLAVE_PORT (default 29876,
#   29911, 30911; the master's HA port is its port + 1).
set -euo pipefail

bin="" duration=20 only="sync,async"
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) bin="$2"; shift 2 ;;
	--duration) duration="$2"; shift 2 ;;
	--only) only="$2"; shift 2 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done

scratch=$(mktemp -d "${REPL_DIR:-/var/tmp}/spool-repl-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$scratch"
}
trap cleanup EXIT

if [ -z "$bin" ]; then
	bin="$scratch/spool"
	go build -o "$bin" ./cmd/spool
fi

ns="127.0.0.1:${REPL_NAMESRV_PORT:-29876}"
mport=${REPL_MASTER_PORT:-29911}
sport=${REPL_SLAVE_PORT:-30911}
master="127.0.0.1:$mport"
slave="127.0.0.1:$sport"

"$bin" namesrv --listen "$ns" >"$scratch/namesrv.log" 2>&1 &
pids+=($!)

# start_broker NAME ROLE ID ADDR ARGS...: starts a broker in this shell (so
# that wait can reap it) and leaves its pid in $started.
start_broker() {
	local name=$1 role=$2 id=$3 addr=$4
	shift 4
	"$bin" broker --listen "$addr" --namesrv "$ns" --store "$scratch/$name" \
		--set brokerName=broker-bench --set brokerClusterName=BenchCluster \
		--set brokerRole="$role" --set brokerId="$id" --set flushDiskType=ASYNC_FLUSH \
		--set haSendHeartbeatInterval=1000 "$@" >"$scratch/$name.log" 2>&1 &
	started=$!
	pids+=("$started")
}

# wait_in_sync: until the master reports one in-sync slave.
wait_in_sync() {
	for _ in $(seq 1 300); do
		if "$bin" admin brokerStatus -n "$ns" -b "$master" 2>/dev/null | grep -Eq 'inSyncSlaveNums *: *1'; then
			return 0
		fi
		sleep 0.1
	done
	echo "the slave did not get in sync within 30 s; the brokers' logs end:" >&2
	tail -n 5 "$scratch"/*.log >&2
	exit 1
}

run_bench() {
	local label=$1 topic=$2
	echo "== $label"
	"$bin" bench produce -n "$ns" --topic "$topic" --size 128 --producers 64 --inflight 1 --duration "${duration}s"
}

stop_pid() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

echo "date: $(date -u)  nproc: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"

if [[ ",$only," == *",sync,"* ]]; then
	start_broker master-sync SYNC_MASTER 0 "$master" --set haListenPort=$((mport + 1))
	m=$started
	start_broker slave-sync SLAVE 1 "$slave" --set slaveReadEnable=true
	s=$started
	wait_in_sync
	run_bench "SYNC_MASTER + ASYNC_FLUSH with a slave (load: $(cut -d' ' -f1-3 /proc/loadavg))" BenchSync
	stop_pid "$s"
	stop_pid "$m"
fi

if [[ ",$only," == *",async,"* ]]; then
	start_broker master-async ASYNC_MASTER 0 "$master" --set haListenPort=$((mport + 1))
	m=$started
	start_broker slave-async SLAVE 1 "$slave"
	s=$started
	wait_in_sync
	run_bench "ASYNC_MASTER with a slave attached (load: $(cut -d' ' -f1-3 /proc/loadavg))" BenchAsync
	stop_pid "$s"
	run_bench "ASYNC_MASTER without a slave (load: $(cut -d' ' -f1-3 /proc/loadavg))" BenchAsync
	stop_pid "$m"
fi

if [[ ",$only," == *",controller,"* ]]; then
	ctls="127.0.0.1:31876;127.0.0.1:31877;127.0.0.1:31878"
	for i in 0 1 2; do
		cat >"$scratch/controller-n$i.conf" <<EOF
controllerDLegerGroup=bench
controllerDLegerPeers=n0-127.0.0.1:31888;n1-127.0.0.1:31889;n2-127.0.0.1:31890
controllerDLegerSelfId=n$i
controllerStorePath=$scratch/controller-n$i
listenPort=$((31876 + i))
EOF
		"$bin" controller -c "$scratch/controller-n$i.conf" >"$scratch/controller-n$i.log" 2>&1 &
		pids+=($!)
	done
	ports=("$mport" "$sport" "$((sport + 1000))")
	for i in 0 1 2; do
		"$bin" broker --listen "127.0.0.1:${ports[$i]}" --namesrv "$ns" --store "$scratch/ctl-broker-n$i" \
			--set brokerName=broker-ctl --set brokerClusterName=BenchCluster \
			--set enableControllerMode=true --set "controllerAddr=$ctls" \
			--set allAckInSyncStateSet=true --set flushDiskType=ASYNC_FLUSH \
			--set haListenPort=$((ports[i] + 1)) >"$scratch/ctl-broker-n$i.log" 2>&1 &
		pids+=($!)
	done
	in_sync=""
	for _ in $(seq 1 600); do
		if "$bin" admin getSyncStateSet -a "$ctls" -c BenchCluster -b broker-ctl 2>/dev/null | grep -Eq '#SyncStateSetNums[[:space:]]+3'; then
			in_sync=1
			break
		fi
		sleep 0.1
	done
	if [ -z "$in_sync" ]; then
		echo "the three replicas were not in the sync-state set within 60 s; getSyncStateSet says:" >&2
		"$bin" admin getSyncStateSet -a "$ctls" -c BenchCluster -b broker-ctl >&2 || true
		tail -n 5 "$scratch"/ctl-*.log "$scratch"/controller-*.log >&2
		exit 1
	fi
	run_bench "controller mode, 3 replicas, allAckInSyncStateSet=true + ASYNC_FLUSH (load: $(cut -d' ' -f1-3 /proc/loadavg))" BenchController
fi
