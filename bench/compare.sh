#!/usr/bin/env bash
# Side-by-side comparison of Spool, NATS JetStream (file storage) and Redis
# Streams (AOF on) on this machine, over loopback only.
#
# For each workload it starts each system on a fresh data directory, drives it
# with that system's own load tool (spool bench, nats bench, redis-benchmark;
# bench/redisdrain for the Redis drain), stops it and deletes the directory.
# Every workload runs three times per system; the script prints one table of
# medians with [min-max] ranges, Spool/peer ratios and CPU seconds.
#
#   workload  shape
#   S1        128 B, 1 connection x 1 in flight, asynchronous flush
#   S2        128 B, 64 connections x 1 in flight, asynchronous flush
#   S2b       128 B, 1 connection x 64 in flight (Spool: ROCKETMQ headers)
#   S3        S2 with a sync per write (Spool SYNC_FLUSH group commit,
#             NATS sync_interval always, Redis appendfsync always)
#   S4        1 KiB, 4 connections x 256 in flight, then one consumer drains;
#             Spool also with --batch 32
#
# Usage: bench/compare.sh [--quick] [--only S1,S3] [--runs N] [--duration SECS]
#   --quick      one run each, 3 s per run (smoke test)
#   --only LIST  comma-separated workloads (default S1,S2,S2b,S3,S4)
#   --log FILE   keep every tool's raw output there (the scratch directory,
#                and everything else in it, is deleted at exit)
# Environment: COMPARE_DIR (parent of the scratch directory, default /var/tmp),
#   INSTALL_TIMEOUT (seconds per install step, default 900),
#   COMPARE_SPOOL_NAMESRV_PORT, COMPARE_SPOOL_BROKER_PORT, COMPARE_NATS_PORT,
#   COMPARE_REDIS_PORT (loopback ports, default 19876, 19911, 14222, 16379),
#   NATS_SERVER_VERSION, NATSCLI_VERSION.
set -euo pipefail

NATS_SERVER_VERSION=${NATS_SERVER_VERSION:-v2.15.2}
NATSCLI_VERSION=${NATSCLI_VERSION:-v0.5.0}
INSTALL_TIMEOUT=${INSTALL_TIMEOUT:-900}

RUNS=3
DUR=10
ONLY="S1,S2,S2b,S3,S4"
QUICK=0
KEEP_LOG=
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--only) ONLY=${2:?--only needs a list}; shift ;;
	--only=*) ONLY=${1#--only=} ;;
	--log) KEEP_LOG=${2:?--log needs a file}; shift ;;
	--runs) RUNS=${2:?--runs needs a number}; shift ;;
	--duration) DUR=${2:?--duration needs seconds}; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "unknown option $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
if [ "$QUICK" = 1 ]; then
	RUNS=1
	DUR=3
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d "${COMPARE_DIR:-/var/tmp}/spool-compare.XXXXXX")
BIN=$WORK/bin
RES=$WORK/results.tsv
RSS=$WORK/rss.tsv
LOG=$WORK/runs.log
mkdir -p "$BIN"
: >"$RES"
: >"$RSS"

# Loopback ports, below the kernel's ephemeral range so that other programs'
# outgoing connections cannot hold them; the Spool broker's VIP channel is its
# port minus 2.
SP_NS=${COMPARE_SPOOL_NAMESRV_PORT:-19876}
SP_BR=${COMPARE_SPOOL_BROKER_PORT:-19911}
NATS_PORT=${COMPARE_NATS_PORT:-14222}
REDIS_PORT=${COMPARE_REDIS_PORT:-16379}
CLK_TCK=$(getconf CLK_TCK)

PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	if [ -n "$KEEP_LOG" ] && [ -f "$LOG" ]; then cp "$LOG" "$KEEP_LOG" || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
forget_pid() {
	local keep=() p
	for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}
# stop_pid PID: SIGTERM, wait up to 15 s, then SIGKILL.
stop_pid() {
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	forget_pid "$pid"
}
# cpu_of PID: user+system CPU seconds of a live process.
cpu_of() {
	sed 's/^.*) //' "/proc/$1/stat" | awk -v t="$CLK_TCK" '{printf "%.2f", ($12+$13)/t}'
}
# jget KEY: a number from the one-line JSON on stdin.
jget() { sed -n 's/.*"'"$1"'":\([^,}]*\).*/\1/p' | head -1; }
# gen_cpu FILE: user+system seconds written by /usr/bin/time -f '%U %S'.
gen_cpu() { tail -1 "$1" | awk '{printf "%.2f", $1+$2}'; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a-b}'; }
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"; }
wait_port() {
	for _ in $(seq 300); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# ---------------------------------------------------------------- installs
install_tools() {
	local gobin
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin=$(go env GOPATH)/bin
	export PATH="$gobin:$PATH"
	if ! command -v nats-server >/dev/null; then
		say "installing nats-server $NATS_SERVER_VERSION (at most ${INSTALL_TIMEOUT}s)"
		timeout "$INSTALL_TIMEOUT" go install "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
	fi
	if ! command -v nats >/dev/null; then
		say "installing nats CLI $NATSCLI_VERSION (at most ${INSTALL_TIMEOUT}s)"
		timeout "$INSTALL_TIMEOUT" go install "github.com/nats-io/natscli/nats@$NATSCLI_VERSION"
	fi
	local pkgs=()
	command -v redis-server >/dev/null || pkgs+=(redis-server)
	command -v redis-benchmark >/dev/null || pkgs+=(redis-tools)
	[ -x /usr/bin/time ] || pkgs+=(time)
	if [ ${#pkgs[@]} -gt 0 ]; then
		say "installing ${pkgs[*]} with apt-get (at most ${INSTALL_TIMEOUT}s)"
		timeout "$INSTALL_TIMEOUT" apt-get update -qq
		DEBIAN_FRONTEND=noninteractive timeout "$INSTALL_TIMEOUT" apt-get install -y -qq "${pkgs[@]}" >/dev/null
	fi
	say "building spool and redisdrain"
	(cd "$ROOT" && go build -o "$BIN/spool" ./cmd/spool && go build -o "$BIN/redisdrain" ./bench/redisdrain)
}

# ---------------------------------------------------------------- servers
# Each start_* sets SRV_PID and SRV_DIR; stop_server prints the directory's
# disk usage and deletes it.
SRV_PID=
SRV_DIR=
start_spool() { # flushDiskType
	SRV_DIR=$WORK/data-spool
	rm -rf "$SRV_DIR"
	mkdir -p "$SRV_DIR"
	"$BIN/spool" standalone --store "$SRV_DIR/store" --namesrv-listen "127.0.0.1:$SP_NS" \
		--listen "127.0.0.1:$SP_BR" --set "flushDiskType=$1" >"$SRV_DIR/out" 2>"$SRV_DIR/err" &
	SRV_PID=$!
	PIDS+=("$SRV_PID")
	for _ in $(seq 300); do
		grep -q '^ready' "$SRV_DIR/out" 2>/dev/null && return 0
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	say "spool did not get ready: $(tail -3 "$SRV_DIR/err")"
	return 1
}
start_nats() { # always|default
	SRV_DIR=$WORK/data-nats
	rm -rf "$SRV_DIR"
	mkdir -p "$SRV_DIR/js"
	{
		echo "listen: 127.0.0.1:$NATS_PORT"
		echo "jetstream {"
		echo "  store_dir: \"$SRV_DIR/js\""
		echo "  max_file_store: 64GB"
		[ "$1" = always ] && echo "  sync_interval: always"
		echo "}"
	} >"$SRV_DIR/nats.conf"
	nats-server -c "$SRV_DIR/nats.conf" >"$SRV_DIR/log" 2>&1 &
	SRV_PID=$!
	PIDS+=("$SRV_PID")
	wait_port "$NATS_PORT" || { say "nats-server did not listen: $(tail -3 "$SRV_DIR/log")"; return 1; }
}
start_redis() { # everysec|always
	SRV_DIR=$WORK/data-redis
	rm -rf "$SRV_DIR"
	mkdir -p "$SRV_DIR/db"
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$SRV_DIR/db" --appendonly yes \
		--appendfsync "$1" --save '' --daemonize no --logfile "$SRV_DIR/log" &
	SRV_PID=$!
	PIDS+=("$SRV_PID")
	for _ in $(seq 300); do
		[ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.1
	done
	say "redis-server did not answer: $(tail -3 "$SRV_DIR/log")"
	return 1
}
stop_server() {
	[ -n "$SRV_PID" ] || return 0
	stop_pid "$SRV_PID"
	SRV_PID=
	say "  data on disk: $(du -sh "$SRV_DIR" | cut -f1)"
	rm -rf "$SRV_DIR"
}

# rss_sampler PID FILE: RssAnon and RssFile (kB) every 0.5 s while PID lives.
rss_sampler() {
	while kill -0 "$1" 2>/dev/null; do
		awk '/^RssAnon:/{a=$2} /^RssFile:/{f=$2} END{print a, f}' "/proc/$1/status" 2>/dev/null >>"$2" || true
		sleep 0.5
	done
}

# ---------------------------------------------------------------- one run each
# spool_run WL RUN SIZE PRODUCERS INFLIGHT BATCH SERIALIZE FLUSH DRAIN(0|1)
spool_run() {
	local wl=$1 run=$2 size=$3 prod=$4 infl=$5 batch=$6 ser=$7 flush=$8 drain=$9
	local topic="Cmp${wl// /_}" out tf=$WORK/time c0 c1 rss="" idle="" sampler=""
	start_spool "$flush" || return 1
	if [ "$drain" = 1 ]; then
		idle=$(awk '/^RssAnon:/{print $2}' "/proc/$SRV_PID/status")
		: >"$WORK/rss.samples"
		rss_sampler "$SRV_PID" "$WORK/rss.samples" &
		sampler=$!
		PIDS+=("$sampler")
	fi
	c0=$(cpu_of "$SRV_PID")
	out=$(/usr/bin/time -f '%U %S' -o "$tf" "$BIN/spool" bench produce -n "127.0.0.1:$SP_NS" --topic "$topic" \
		--size "$size" --producers "$prod" --inflight "$infl" --batch "$batch" --serialize "$ser" \
		--duration "${DUR}s" --json 2>>"$LOG" | tail -1) || { say "  spool bench produce failed"; stop_server; return 1; }
	c1=$(cpu_of "$SRV_PID")
	echo "spool $wl run $run: $out" >>"$LOG"
	local ok rate p50 p99 errs
	ok=$(jget ok <<<"$out")
	rate=$(jget msgs_per_sec <<<"$out")
	p50=$(jget p50_us <<<"$out")
	p99=$(jget p99_us <<<"$out")
	errs=$(jget errors <<<"$out")
	[ -n "$rate" ] || { say "  no summary from spool bench: $out"; stop_server; return 1; }
	record "$wl" spool "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
		"$p50" "$p99" "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$ok" "$errs"
	say "  spool $wl: $(printf '%.0f' "$rate") msg/s p50 ${p50}us p99 ${p99}us errors $errs"
	[ "${errs:-0}" = 0 ] || say "  first error: $(sed -n 's/.*"first_error":"\([^"]*\)".*/\1/p' <<<"$out")"
	if [ "$drain" = 1 ]; then
		local idle_exit=1 secs dok drate
		c0=$(cpu_of "$SRV_PID")
		out=$(/usr/bin/time -f '%U %S' -o "$tf" "$BIN/spool" bench consume -n "127.0.0.1:$SP_NS" --topic "$topic" \
			--duration 180s --idle-exit "${idle_exit}s" --json 2>>"$LOG" | tail -1) || out=""
		c1=$(cpu_of "$SRV_PID")
		echo "spool $wl drain run $run: $out" >>"$LOG"
		dok=$(jget ok <<<"$out")
		secs=$(jget seconds <<<"$out")
		if [ -n "$dok" ] && [ -n "$secs" ]; then
			# In drain mode the summary's seconds end at the last receipt.
			drate=$(awk -v n="$dok" -v s="$secs" 'BEGIN{if (s<=0) s=1; printf "%.1f", n/s}')
			record "$wl drain" spool "$run" "$drate" "$(awk -v r="$drate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
				- - "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$dok" "$(jget errors <<<"$out")"
			say "  spool $wl drain: $dok of $ok msgs, $(printf '%.0f' "$drate") msg/s"
		else
			say "  spool drain gave no summary: $out"
		fi
		stop_pid "$sampler"
		rss=$(awk 'BEGIN{a=0; f=0} {if ($1>a) a=$1; if ($2>f) f=$2} END{printf "%.0f\t%.0f", a/1024, f/1024}' "$WORK/rss.samples")
		printf '%s\t%s\t%.0f\t%s\n' "$wl" "$run" "$(awk -v i="$idle" 'BEGIN{print i/1024}')" "$rss" >>"$RSS"
	fi
	stop_server
}

# Message counts for the count-based peer tools: the first run uses a guess
# of the rate, later runs the rate the previous run measured, so each run
# lasts about DUR seconds.
declare -A RATE_GUESS=(
	[nats_S1]=8000 [nats_S2]=40000 [nats_S2b]=60000 [nats_S3]=6000 [nats_S4]=100000
	[redis_S1]=40000 [redis_S2]=100000 [redis_S2b]=200000 [redis_S3]=60000 [redis_S4]=60000
)
declare -A LAST_RATE=()
peer_count() { # SYS WL
	local r=${LAST_RATE["$1_$2"]:-${RATE_GUESS["$1_$2"]}}
	awk -v r="$r" -v d="$DUR" 'BEGIN{n=int(r*d); if (n<1000) n=1000; print n}'
}

# nats_run WL RUN SIZE CLIENTS MODE(sync|async) BATCH SYNC(always|default) DRAIN
nats_run() {
	local wl=$1 run=$2 size=$3 clients=$4 mode=$5 batch=$6 sync=$7 drain=$8
	local n out tf=$WORK/time c0 c1 rate p50 p99 line
	n=$(peer_count nats "$wl")
	start_nats "$sync" || return 1
	local args=(bench js pub "$mode" "cmp.$wl" --stream CMP --create --storage file --maxbytes 48GB
		--clients "$clients" --msgs "$n" --size "${size}B" --no-progress)
	[ "$mode" = async ] && args+=(--batch "$batch")
	c0=$(cpu_of "$SRV_PID")
	out=$(/usr/bin/time -f '%U %S' -o "$tf" timeout $((DUR * 6 + 60)) nats -s "nats://127.0.0.1:$NATS_PORT" "${args[@]}" 2>&1) ||
		{ say "  nats bench failed: $(tail -2 <<<"$out")"; stop_server; return 1; }
	c1=$(cpu_of "$SRV_PID")
	echo "nats $wl run $run: $out" >>"$LOG"
	if grep -q 'aggregated stats' <<<"$out"; then
		rate=$(grep 'aggregated stats' <<<"$out" | grep -o '[0-9,]* msgs/sec' | head -1 | tr -d ', a-z/')
		line=$(grep 'latencies per operation' <<<"$out" || true)
		p50=$(sed -n 's/.*| P50 \([0-9,.]*\)us.*/\1/p' <<<"$line" | tr -d ,)
		p99=$(sed -n 's/.*| P99 \([0-9,.]*\)us.*/\1/p' <<<"$line" | tr -d ,)
	else
		line=$(grep ' stats: ' <<<"$out" | head -1)
		rate=$(grep -o '[0-9,]* msgs/sec' <<<"$line" | head -1 | tr -d ', a-z/')
		p50=$(sed -n 's/.*P50: \([0-9,.]*\)us.*/\1/p' <<<"$line" | tr -d ,)
		p99=$(sed -n 's/.*P99: \([0-9,.]*\)us.*/\1/p' <<<"$line" | tr -d ,)
	fi
	[ -n "$rate" ] || { say "  no rate in nats bench output"; stop_server; return 1; }
	LAST_RATE["nats_$wl"]=$rate
	record "$wl" nats "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
		"${p50:-"-"}" "${p99:-"-"}" "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$n" 0
	say "  nats $wl: $rate msg/s p50 ${p50:-?}us p99 ${p99:-?}us ($n msgs)"
	if [ "$drain" = 1 ]; then
		c0=$(cpu_of "$SRV_PID")
		out=$(/usr/bin/time -f '%U %S' -o "$tf" timeout 300 nats -s "nats://127.0.0.1:$NATS_PORT" bench js ordered \
			--stream CMP --msgs "$n" --size "${size}B" --no-progress 2>&1) || out=""
		c1=$(cpu_of "$SRV_PID")
		echo "nats $wl drain run $run: $out" >>"$LOG"
		rate=$(grep ' stats: ' <<<"$out" | grep -o '[0-9,]* msgs/sec' | head -1 | tr -d ', a-z/')
		if [ -n "$rate" ]; then
			record "$wl drain" nats "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
				- - "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$n" 0
			say "  nats $wl drain: $rate msg/s"
		else
			say "  nats drain gave no rate: $(tail -2 <<<"$out")"
		fi
	fi
	stop_server
}

# redis_run WL RUN SIZE CLIENTS PIPELINE APPENDFSYNC DRAIN
redis_run() {
	local wl=$1 run=$2 size=$3 clients=$4 pipe=$5 fsync=$6 drain=$7
	local n out tf=$WORK/time c0 c1 rate p50 p99 val xlen
	n=$(peer_count redis "$wl")
	val=$(head -c "$size" /dev/zero | tr '\0' a)
	start_redis "$fsync" || return 1
	c0=$(cpu_of "$SRV_PID")
	out=$(/usr/bin/time -f '%U %S' -o "$tf" timeout $((DUR * 6 + 60)) redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" \
		-c "$clients" -P "$pipe" -n "$n" --csv XADD cmp '*' f "$val" 2>&1) ||
		{ say "  redis-benchmark failed: $(tail -c 300 <<<"$out")"; stop_server; return 1; }
	c1=$(cpu_of "$SRV_PID")
	xlen=$(redis-cli -p "$REDIS_PORT" XLEN cmp)
	# CSV columns: test, rps, avg, min, p50, p95, p99, max (latencies in ms).
	read -r rate p50 p99 < <(tail -1 <<<"$out" | tr -d '"' | awk -F, '{printf "%s %.0f %.0f\n", $(NF-6), $(NF-3)*1000, $(NF-1)*1000}')
	echo "redis $wl run $run: ${out: -200} xlen=$xlen" >>"$LOG"
	[ -n "$rate" ] || { say "  no rate in redis-benchmark output"; stop_server; return 1; }
	LAST_RATE["redis_$wl"]=$rate
	record "$wl" redis "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
		"$p50" "$p99" "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$xlen" 0
	say "  redis $wl: $rate msg/s p50 ${p50}us p99 ${p99}us ($xlen entries)"
	if [ "$drain" = 1 ]; then
		c0=$(cpu_of "$SRV_PID")
		out=$(/usr/bin/time -f '%U %S' -o "$tf" timeout 300 "$BIN/redisdrain" -addr "127.0.0.1:$REDIS_PORT" -key cmp 2>&1 | tail -1) || out=""
		c1=$(cpu_of "$SRV_PID")
		echo "redis $wl drain run $run: $out" >>"$LOG"
		rate=$(jget msgs_per_sec <<<"$out")
		if [ -n "$rate" ]; then
			record "$wl drain" redis "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
				- - "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$(jget ok <<<"$out")" 0
			say "  redis $wl drain: $(printf '%.0f' "$rate") msg/s"
		else
			say "  redis drain gave no rate: $out"
		fi
	fi
	stop_server
}

# ---------------------------------------------------------------- workloads
FAILED=()
attempt() { # LABEL CMD...
	local label=$1
	shift
	"$@" || FAILED+=("$label")
}
workload() { # WL
	local wl=$1 run
	for run in $(seq "$RUNS"); do
		say "$wl run $run/$RUNS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
		case "$wl" in
		S1)
			attempt "spool S1 #$run" spool_run S1 "$run" 128 1 1 1 json ASYNC_FLUSH 0
			attempt "nats S1 #$run" nats_run S1 "$run" 128 1 sync 1 default 0
			attempt "redis S1 #$run" redis_run S1 "$run" 128 1 1 everysec 0
			;;
		S2)
			attempt "spool S2 #$run" spool_run S2 "$run" 128 64 1 1 json ASYNC_FLUSH 0
			attempt "nats S2 #$run" nats_run S2 "$run" 128 64 sync 1 default 0
			attempt "redis S2 #$run" redis_run S2 "$run" 128 64 1 everysec 0
			;;
		S2b)
			attempt "spool S2b #$run" spool_run S2b "$run" 128 1 64 1 rocketmq ASYNC_FLUSH 0
			attempt "nats S2b #$run" nats_run S2b "$run" 128 1 async 64 default 0
			attempt "redis S2b #$run" redis_run S2b "$run" 128 1 64 everysec 0
			;;
		S3)
			attempt "spool S3 #$run" spool_run S3 "$run" 128 64 1 1 json SYNC_FLUSH 0
			attempt "nats S3 #$run" nats_run S3 "$run" 128 64 sync 1 always 0
			attempt "redis S3 #$run" redis_run S3 "$run" 128 64 1 always 0
			;;
		S4)
			attempt "spool S4 #$run" spool_run S4 "$run" 1024 4 256 1 json ASYNC_FLUSH 1
			attempt "spool S4b32 #$run" spool_run "S4 batch32" "$run" 1024 4 256 32 json ASYNC_FLUSH 1
			attempt "nats S4 #$run" nats_run S4 "$run" 1024 4 async 256 default 1
			attempt "redis S4 #$run" redis_run S4 "$run" 1024 4 256 everysec 1
			;;
		*) say "unknown workload $wl"; FAILED+=("$wl"); return ;;
		esac
	done
}

# ---------------------------------------------------------------- table
print_table() {
	awk -F'\t' '
	function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t } }
	function med(a, n) { sortn(a, n); return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
	function fmt(x) { return x >= 1e6 ? sprintf("%.2fM", x/1e6) : x >= 1e4 ? sprintf("%.0fk", x/1e3) : x >= 1e3 ? sprintf("%.1fk", x/1e3) : sprintf("%.0f", x) }
	function stat(key, col,   i, n, v, a) {
		n = 0
		for (i = 1; i <= cnt[key]; i++) { v = val[key, i, col]; if (v != "-" && v != "") a[++n] = v + 0 }
		if (n == 0) { lo = hi = "-"; return "-" }
		sortn(a, n); lo = a[1]; hi = a[n]
		return med(a, n)
	}
	{
		key = $1 SUBSEP $2
		if (!(key in cnt)) { order[++nk] = key; wl[nk] = $1; sys[nk] = $2 }
		c = ++cnt[key]
		for (f = 4; f <= 11; f++) val[key, c, f] = $f
		val[key, c, 12] = ($10 > 0) ? $9 / $10 * 1e6 : "-"
	}
	END {
		printf "%-17s %-6s %4s %-26s %8s %8s %8s %9s %8s %9s %5s\n", "workload", "system", "runs", "msg/s median [min-max]", "MB/s", "p50 us", "p99 us", "spool/it", "gen CPUs", "srv CPUs/1M", "errs"
		for (k = 1; k <= nk; k++) {
			key = order[k]
			m = stat(key, 4); rng = sprintf("%s [%s-%s]", fmt(m), fmt(lo), fmt(hi))
			mb = stat(key, 5); p50 = stat(key, 6); p99 = stat(key, 7); gc = stat(key, 8); sc = stat(key, 12)
			e = 0; for (i = 1; i <= cnt[key]; i++) e += val[key, i, 11]
			ratio = "-"
			if (sys[k] != "spool" && (wl[k] SUBSEP "spool") in cnt) {
				sm = stat(wl[k] SUBSEP "spool", 4)
				if (m > 0) ratio = sprintf("%.2f", sm / m)
			}
			printf "%-17s %-6s %4d %-26s %8.1f %8s %8s %9s %8.2f %9s %5d\n", wl[k], sys[k], cnt[key], rng, mb,
				(p50 == "-" ? "-" : sprintf("%.0f", p50)), (p99 == "-" ? "-" : sprintf("%.0f", p99)), ratio, gc,
				(sc == "-" ? "-" : sprintf("%.2f", sc)), e
		}
	}' "$RES"
}

# ---------------------------------------------------------------- main
say "scratch directory $WORK"
echo "== machine"
echo "date: $(date -u)"
echo "nproc: $(nproc); memory: $(free -h | awk '/^Mem:/{print $2}'); kernel: $(uname -r)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== disk"
df -h "$WORK"
echo "== dirty-page settings"
for f in /proc/sys/vm/dirty_*; do echo "$(basename "$f") = $(cat "$f")"; done
install_tools
echo "== versions"
echo "spool: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown) (+ work tree)"
echo "nats-server: $(nats-server --version 2>&1)"
echo "nats CLI: $(nats --version 2>&1)"
echo "redis-server: $(redis-server --version | awk '{print $3}')"
echo "runs: $RUNS, ${DUR}s per produce run, workloads: $ONLY"

for port in "$SP_NS" "$SP_BR" $((SP_BR - 2)) "$NATS_PORT" "$REDIS_PORT"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "port $port on 127.0.0.1 is in use; choose others with the COMPARE_*_PORT variables" >&2
		exit 1
	fi
done
IFS=, read -r -a WLS <<<"$ONLY"
for wl in "${WLS[@]}"; do
	workload "$wl"
done

echo
echo "== results: medians of $RUNS run(s) [min-max]; spool/it = Spool median msg/s / this system's"
echo "   gen CPUs = load generator's user+sys seconds per run (/usr/bin/time);"
echo "   srv CPUs/1M = server's CPU seconds per million messages"
print_table
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -s "$RSS" ]; then
	echo
	echo "== Spool resident memory in S4 (MiB; idle RssAnon before the run, peak RssAnon and RssFile during produce+drain)"
	printf '%-17s %4s %12s %12s %12s\n' workload run idleRssAnon peakRssAnon peakRssFile
	awk -F'\t' '{printf "%-17s %4s %12s %12s %12s\n", $1, $2, $3, $4, $5}' "$RSS"
fi
if [ ${#FAILED[@]} -gt 0 ]; then
	echo
	echo "== failed: ${FAILED[*]}"
	echo "== log tail:"
	tail -20 "$LOG"
fi
