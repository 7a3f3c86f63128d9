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
#   S2b       128 B, 1 connection x 64 in flight
#   Sjava     128 B from RocketMQ's own Java benchmark producer with 64
#             threads sending synchronously, Spool only (see JAVA below); the
#             Java client carries all 64 threads on one connection per broker,
#             so this is 1 connection x up to 64 in flight, S2b's shape
#   S3        S2 with a sync per write (Spool SYNC_FLUSH group commit,
#             NATS sync_interval always, Redis appendfsync always)
#   S4        1 KiB, 4 connections x 256 in flight, then one consumer drains;
#             Spool also with --batch 32
#
# The ceiling system is `spool bench ceiling`: the broker's transport with
# its default configuration answering every send with SEND_OK and storing
# nothing, driven by `spool bench produce --broker` in both serializations.
# Its rows (S1, S2, S2b, S4 and S4 batch32; S3 would be S2 again) are what
# the transport, the codecs and the load generator allow on the machine,
# and their json/it and rmq/it columns are Spool's share of that ceiling.
#
# Every Spool row runs twice, with JSON and with ROCKETMQ (binary) request
# headers (`spool bench produce --serialize`), shown in the ser column; the
# drains (`spool bench consume`) use JSON headers and run after the JSON
# produce only.
#
# JAVA: the Sjava row runs RocketMQ's benchmark Producer (Maven artifact
# org.apache.rocketmq:rocketmq-example, ROCKETMQ_JAVA_VERSION) with sync
# sends from 64 threads, 128 B bodies, for the run's duration plus the 10 s
# its first report needs. Its sends are SEND_MESSAGE_V2 (code 310, the short
# field names of SendMessageRequestHeaderV2), the Java client's default. The
# Producer sets rocketmq.serialize.type=ROCKETMQ itself, so bench/java/
# WithSerializeType.java starts it with the serialization fixed first: once
# JSON (the Java client's own default) and once ROCKETMQ. msg/s and the
# average and maximum RT come from the Producer's last periodic report (its
# TPS and average over the last 9 s; max RT since start, in ms); the server
# CPU and the message count (the topic's queue offsets) cover the whole run.
# The jars are resolved with mvn into COMPARE_MAVEN_REPO; the row is skipped,
# with a line saying why, without java, javac and mvn or when they cannot
# be resolved. COMPARE_JAVA_CLASSPATH instead names the jars (for example
# "$ROCKETMQ_HOME/lib/*" of a RocketMQ distribution) and skips mvn.
#
# Usage: bench/compare.sh [--quick] [--only S1,S3] [--systems spool] [--runs N] [--duration SECS]
#   --quick         one run each, 3 s per run (smoke test)
#   --only LIST     comma-separated workloads (default S1,S2,S2b,Sjava,S3,S4)
#   --systems LIST  comma-separated systems (default spool,nats,redis,ceiling);
#                   the peers' tools are installed only when they are selected
#   --log FILE      keep every tool's raw output there, with Spool's warnings
#                   and errors of each run (the scratch directory, and
#                   everything else in it, is deleted at exit)
# Environment: COMPARE_DIR (parent of the scratch directory, default /var/tmp),
#   INSTALL_TIMEOUT (seconds per install step, default 900),
#   COMPARE_SPOOL_NAMESRV_PORT, COMPARE_SPOOL_BROKER_PORT, COMPARE_NATS_PORT,
#   COMPARE_REDIS_PORT, COMPARE_CEILING_PORT (loopback ports, default 19876,
#   19911, 14222, 16379, 19915),
#   NATS_SERVER_VERSION, NATSCLI_VERSION,
#   ROCKETMQ_JAVA_VERSION (default 5.3.1), COMPARE_MAVEN_REPO (Maven local
#   repository, default the scratch directory's m2, so every run resolves
#   afresh; name a lasting directory to reuse it), COMPARE_JAVA_CLASSPATH,
#   COMPARE_JAVA_OPTS (JVM options, default -Xms256m -Xmx1g).
set -euo pipefail

NATS_SERVER_VERSION=${NATS_SERVER_VERSION:-v2.15.2}
NATSCLI_VERSION=${NATSCLI_VERSION:-v0.5.0}
INSTALL_TIMEOUT=${INSTALL_TIMEOUT:-900}
ROCKETMQ_JAVA_VERSION=${ROCKETMQ_JAVA_VERSION:-5.3.1}
MAVEN_DEPENDENCY_PLUGIN=3.6.1

RUNS=3
DUR=10
ONLY="S1,S2,S2b,Sjava,S3,S4"
SYSTEMS="spool,nats,redis,ceiling"
QUICK=0
KEEP_LOG=
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--only) ONLY=${2:?--only needs a list}; shift ;;
	--only=*) ONLY=${1#--only=} ;;
	--systems) SYSTEMS=${2:?--systems needs a list}; shift ;;
	--systems=*) SYSTEMS=${1#--systems=} ;;
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
# selected LIST ITEM: whether ITEM is in the comma-separated LIST.
selected() { case ",$1," in *",$2,"*) return 0 ;; esac; return 1; }
for sys in ${SYSTEMS//,/ }; do
	case "$sys" in spool | nats | redis | ceiling) ;; *) echo "unknown system $sys (spool, nats, redis, ceiling)" >&2; exit 2 ;; esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d "${COMPARE_DIR:-/var/tmp}/spool-compare.XXXXXX")
BIN=$WORK/bin
RES=$WORK/results.tsv
RSS=$WORK/rss.tsv
JAVA_RES=$WORK/java.tsv
LOG=$WORK/runs.log
mkdir -p "$BIN"
: >"$RES"
: >"$RSS"
: >"$JAVA_RES"

# Loopback ports, below the kernel's ephemeral range so that other programs'
# outgoing connections cannot hold them; the Spool broker's VIP channel is its
# port minus 2.
SP_NS=${COMPARE_SPOOL_NAMESRV_PORT:-19876}
SP_BR=${COMPARE_SPOOL_BROKER_PORT:-19911}
NATS_PORT=${COMPARE_NATS_PORT:-14222}
REDIS_PORT=${COMPARE_REDIS_PORT:-16379}
CEIL_PORT=${COMPARE_CEILING_PORT:-19915}
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
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"; }
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
	if selected "$SYSTEMS" nats && ! command -v nats-server >/dev/null; then
		say "installing nats-server $NATS_SERVER_VERSION (at most ${INSTALL_TIMEOUT}s)"
		timeout "$INSTALL_TIMEOUT" go install "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
	fi
	if selected "$SYSTEMS" nats && ! command -v nats >/dev/null; then
		say "installing nats CLI $NATSCLI_VERSION (at most ${INSTALL_TIMEOUT}s)"
		timeout "$INSTALL_TIMEOUT" go install "github.com/nats-io/natscli/nats@$NATSCLI_VERSION"
	fi
	local pkgs=()
	if selected "$SYSTEMS" redis; then
		command -v redis-server >/dev/null || pkgs+=(redis-server)
		command -v redis-benchmark >/dev/null || pkgs+=(redis-tools)
	fi
	[ -x /usr/bin/time ] || pkgs+=(time)
	if [ ${#pkgs[@]} -gt 0 ]; then
		say "installing ${pkgs[*]} with apt-get (at most ${INSTALL_TIMEOUT}s)"
		timeout "$INSTALL_TIMEOUT" apt-get update -qq
		DEBIAN_FRONTEND=noninteractive timeout "$INSTALL_TIMEOUT" apt-get install -y -qq "${pkgs[@]}" >/dev/null
	fi
	say "building spool and redisdrain"
	(cd "$ROOT" && go build -o "$BIN/spool" ./cmd/spool && go build -o "$BIN/redisdrain" ./bench/redisdrain)
}

# java_setup: the classpath of RocketMQ's benchmark Producer and the compiled
# bench/java wrapper in JAVA_CP, or JAVA_SKIP with the reason.
JAVA_CP=
JAVA_SKIP=
JAVA_DIR=$WORK/java
java_setup() {
	local cp m2=${COMPARE_MAVEN_REPO:-$WORK/m2} t
	for t in java javac; do
		command -v "$t" >/dev/null || { JAVA_SKIP="no $t on PATH"; return 1; }
	done
	mkdir -p "$JAVA_DIR/classes" "$JAVA_DIR/home"
	if [ -n "${COMPARE_JAVA_CLASSPATH:-}" ]; then
		cp=$COMPARE_JAVA_CLASSPATH
	else
		command -v mvn >/dev/null || { JAVA_SKIP="no mvn on PATH (or set COMPARE_JAVA_CLASSPATH)"; return 1; }
		cat >"$JAVA_DIR/pom.xml" <<-POM
			<project xmlns="http://maven.apache.org/POM/4.0.0">
			  <modelVersion>4.0.0</modelVersion>
			  <groupId>spool.bench</groupId>
			  <artifactId>rocketmq-benchmark-producer</artifactId>
			  <version>1</version>
			  <packaging>pom</packaging>
			  <dependencies>
			    <dependency>
			      <groupId>org.apache.rocketmq</groupId>
			      <artifactId>rocketmq-example</artifactId>
			      <version>$ROCKETMQ_JAVA_VERSION</version>
			    </dependency>
			  </dependencies>
			</project>
		POM
		say "resolving org.apache.rocketmq:rocketmq-example:$ROCKETMQ_JAVA_VERSION with mvn into $m2 (at most ${INSTALL_TIMEOUT}s)"
		if ! timeout "$INSTALL_TIMEOUT" mvn -B -q -f "$JAVA_DIR/pom.xml" -Dmaven.repo.local="$m2" \
			"org.apache.maven.plugins:maven-dependency-plugin:$MAVEN_DEPENDENCY_PLUGIN:build-classpath" \
			-Dmdep.outputFile="$JAVA_DIR/classpath.txt" >"$JAVA_DIR/mvn.log" 2>&1; then
			local why
			why=$(sed 's/\x1b\[[0-9;]*m//g' "$JAVA_DIR/mvn.log" | grep -m1 -o 'Unknown host [^ :]*' || true)
			[ -z "$why" ] || why="the Maven repository is not reachable ($why)"
			[ -n "$why" ] || why=$(sed 's/\x1b\[[0-9;]*m//g' "$JAVA_DIR/mvn.log" | grep -m1 '^\[ERROR\]' | cut -c9-240)
			JAVA_SKIP="mvn could not resolve org.apache.rocketmq:rocketmq-example:$ROCKETMQ_JAVA_VERSION: $why"
			cat "$JAVA_DIR/mvn.log" >>"$LOG"
			return 1
		fi
		cp=$(cat "$JAVA_DIR/classpath.txt")
	fi
	javac -d "$JAVA_DIR/classes" "$ROOT/bench/java/WithSerializeType.java" 2>>"$LOG" ||
		{ JAVA_SKIP="javac failed on bench/java/WithSerializeType.java"; return 1; }
	JAVA_CP="$cp:$JAVA_DIR/classes"
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
	if [ -f "$SRV_DIR/err" ]; then
		# Spool's warnings and errors go to the log (a displaced event
		# loop, a busy page cache); the count is printed.
		local warns
		warns=$(grep -cE 'level=(WARN|ERROR)' "$SRV_DIR/err" || true)
		if [ "${warns:-0}" != 0 ]; then
			grep -E 'level=(WARN|ERROR)' "$SRV_DIR/err" | sed 's/^/  server: /' >>"$LOG"
			say "  server warnings and errors: $warns (in the log)"
		fi
	fi
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
	record "$wl" spool "$ser" "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
		"$p50" "$p99" "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$ok" "$errs"
	say "  spool $wl $ser: $(printf '%.0f' "$rate") msg/s p50 ${p50}us p99 ${p99}us errors $errs"
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
			record "$wl drain" spool json "$run" "$drate" "$(awk -v r="$drate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
				- - "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$dok" "$(jget errors <<<"$out")"
			say "  spool $wl drain: $dok of $ok msgs, $(printf '%.0f' "$drate") msg/s"
		else
			say "  spool drain gave no summary: $out"
		fi
		stop_pid "$sampler"
		rss=$(awk 'BEGIN{a=0; f=0} {if ($1>a) a=$1; if ($2>f) f=$2} END{printf "%.0f\t%.0f", a/1024, f/1024}' "$WORK/rss.samples")
		# What stays resident once the load is over: ten seconds after
		# the drain's last receipt.
		sleep 10
		local after
		after=$(awk '/^RssAnon:/{printf "%.0f", $2/1024}' "/proc/$SRV_PID/status")
		printf '%s\t%s\t%.0f\t%s\t%s\n' "$wl" "$run" "$(awk -v i="$idle" 'BEGIN{print i/1024}')" "$rss" "$after" >>"$RSS"
	fi
	stop_server
}

# java_run WL RUN SER(JSON|ROCKETMQ): RocketMQ's benchmark Producer against a
# fresh ASYNC_FLUSH Spool for DUR seconds plus the 10 s its first report needs.
java_run() {
	local wl=$1 run=$2 ser=$3 topic=CmpJava out=$JAVA_DIR/producer.out tf=$WORK/time c0 c1 secs
	local line tps avg max fails stored
	start_spool ASYNC_FLUSH || return 1
	"$BIN/spool" admin create-topic "$topic" -n "127.0.0.1:$SP_NS" --queues 8 >>"$LOG" 2>&1 ||
		{ say "  could not create topic $topic"; stop_server; return 1; }
	secs=$((DUR + 10))
	[ "$secs" -ge 13 ] || secs=13
	c0=$(cpu_of "$SRV_PID")
	# timeout ends the Producer (it sends until stopped); exit status 124 is the normal end.
	# shellcheck disable=SC2086 # COMPARE_JAVA_OPTS is a list of options
	/usr/bin/time -f '%U %S' -o "$tf" timeout -k 10 "$secs" java ${COMPARE_JAVA_OPTS:--Xms256m -Xmx1g} \
		-Duser.home="$JAVA_DIR/home" -Drocketmq.log.root="$JAVA_DIR/logs" -cp "$JAVA_CP" \
		WithSerializeType "$ser" org.apache.rocketmq.example.benchmark.Producer \
		-n "127.0.0.1:$SP_NS" -t "$topic" -w 64 -s 128 -ri 1000 >"$out" 2>&1 || true
	c1=$(cpu_of "$SRV_PID")
	{ echo "java $ser $wl run $run:"; grep -v '^Current Time' "$out" | head -20; grep '^Current Time' "$out" | tail -3; } >>"$LOG"
	# Current Time: ... | Send TPS: N | Max RT(ms): N | Average RT(ms): X | Send Failed: N | Response Failed: N
	line=$(grep 'Send TPS:' "$out" | tail -1 || true)
	if [ -z "$line" ] || ! grep -q "^header serialization: $ser\$" "$out"; then
		say "  java producer gave no report: $(grep -v '^\s*at ' "$out" | tail -3 | tr '\n' ' ')"
		stop_server
		return 1
	fi
	tps=$(sed -n 's/.*Send TPS: \([0-9]*\).*/\1/p' <<<"$line")
	max=$(sed -n 's/.*Max RT(ms): \([0-9]*\).*/\1/p' <<<"$line")
	avg=$(sed -n 's/.*Average RT(ms): *\([0-9.]*\).*/\1/p' <<<"$line")
	fails=$(sed -n 's/.*Send Failed: \([0-9]*\) | Response Failed: \([0-9]*\).*/\1 \2/p' <<<"$line" | awk '{print $1+$2}')
	stored=$("$BIN/spool" admin topicStatus -t "$topic" -n "127.0.0.1:$SP_NS" -o json 2>>"$LOG" |
		sed -n 's/.*"maxOffset": *\([0-9]*\).*/\1/p' | awk '{n+=$1} END{print n+0}')
	record "$wl" spool "${ser,,}" "$run" "$tps" "$(awk -v r="$tps" 'BEGIN{printf "%.1f", r*128/1e6}')" \
		- - "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$stored" "${fails:-0}"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$wl" "${ser,,}" "$run" "$tps" "$avg" "$max" "$stored" "$secs" >>"$JAVA_RES"
	say "  java producer $ser $wl: $tps msg/s, average RT ${avg} ms, max RT ${max} ms, $stored stored in ${secs}s, failures ${fails:-0}"
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
	record "$wl" nats - "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
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
			record "$wl drain" nats - "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
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
	record "$wl" redis - "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
		"$p50" "$p99" "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$xlen" 0
	say "  redis $wl: $rate msg/s p50 ${p50}us p99 ${p99}us ($xlen entries)"
	if [ "$drain" = 1 ]; then
		c0=$(cpu_of "$SRV_PID")
		out=$(/usr/bin/time -f '%U %S' -o "$tf" timeout 300 "$BIN/redisdrain" -addr "127.0.0.1:$REDIS_PORT" -key cmp 2>&1 | tail -1) || out=""
		c1=$(cpu_of "$SRV_PID")
		echo "redis $wl drain run $run: $out" >>"$LOG"
		rate=$(jget msgs_per_sec <<<"$out")
		if [ -n "$rate" ]; then
			record "$wl drain" redis - "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
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
SKIPPED=()
attempt() { # LABEL CMD...
	local label=$1
	shift
	"$@" || FAILED+=("$label")
}
# ceiling_run WL RUN SIZE PRODUCERS INFLIGHT BATCH SERIALIZE: spool bench
# produce --broker against spool bench ceiling, started afresh.
ceiling_run() {
	local wl=$1 run=$2 size=$3 prod=$4 infl=$5 batch=$6 ser=$7 out tf=$WORK/time c0 c1 pid
	"$BIN/spool" bench ceiling --listen "127.0.0.1:$CEIL_PORT" >"$WORK/ceiling.out" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 100); do
		grep -q '^ceiling responder on' "$WORK/ceiling.out" 2>/dev/null && break
		sleep 0.1
	done
	grep -q '^ceiling responder on' "$WORK/ceiling.out" || { say "  spool bench ceiling did not start: $(tail -2 "$WORK/ceiling.out")"; stop_pid "$pid"; forget_pid "$pid"; return 1; }
	c0=$(cpu_of "$pid")
	out=$(/usr/bin/time -f '%U %S' -o "$tf" "$BIN/spool" bench produce --broker "127.0.0.1:$CEIL_PORT" \
		--size "$size" --producers "$prod" --inflight "$infl" --batch "$batch" --serialize "$ser" \
		--duration "${DUR}s" --json 2>>"$LOG" | tail -1) || { say "  spool bench produce --broker failed"; stop_pid "$pid"; forget_pid "$pid"; return 1; }
	c1=$(cpu_of "$pid")
	stop_pid "$pid"
	forget_pid "$pid"
	echo "ceiling $wl $ser run $run: $out" >>"$LOG"
	local rate
	rate=$(jget msgs_per_sec <<<"$out")
	[ -n "$rate" ] || { say "  no summary from spool bench: $out"; return 1; }
	record "$wl" ceiling "$ser" "$run" "$rate" "$(awk -v r="$rate" -v s="$size" 'BEGIN{printf "%.1f", r*s/1e6}')" \
		"$(jget p50_us <<<"$out")" "$(jget p99_us <<<"$out")" "$(gen_cpu "$tf")" "$(fsub "$c1" "$c0")" "$(jget ok <<<"$out")" "$(jget errors <<<"$out")"
	say "  ceiling $wl $ser: $(printf '%.0f' "$rate") msg/s"
}
# ceiling_both LABEL WL RUN SIZE PRODUCERS INFLIGHT BATCH: ceiling_run in
# both serializations.
ceiling_both() {
	local label=$1 wl=$2 run=$3 size=$4 prod=$5 infl=$6 batch=$7
	selected "$SYSTEMS" ceiling || return 0
	attempt "ceiling $label json #$run" ceiling_run "$wl" "$run" "$size" "$prod" "$infl" "$batch" json
	attempt "ceiling $label rocketmq #$run" ceiling_run "$wl" "$run" "$size" "$prod" "$infl" "$batch" rocketmq
}
# spool_both LABEL WL RUN SIZE PRODUCERS INFLIGHT BATCH FLUSH DRAIN: spool_run
# with JSON headers, then with ROCKETMQ headers (without the drain, whose
# spool bench consume speaks JSON).
spool_both() {
	local label=$1 wl=$2 run=$3 size=$4 prod=$5 infl=$6 batch=$7 flush=$8 drain=$9
	selected "$SYSTEMS" spool || return 0
	attempt "spool $label json #$run" spool_run "$wl" "$run" "$size" "$prod" "$infl" "$batch" json "$flush" "$drain"
	attempt "spool $label rocketmq #$run" spool_run "$wl" "$run" "$size" "$prod" "$infl" "$batch" rocketmq "$flush" 0
}
peer() { # SYS LABEL CMD...: run a peer's CMD when SYS is selected
	local sys=$1 label=$2
	shift 2
	selected "$SYSTEMS" "$sys" || return 0
	attempt "$sys $label" "$@"
}
JAVA_TRIED=0
workload() { # WL
	local wl=$1 run
	if [ "$wl" = Sjava ]; then
		selected "$SYSTEMS" spool || return 0
		if [ "$JAVA_TRIED" = 0 ]; then
			JAVA_TRIED=1
			java_setup || true
		fi
		if [ -n "$JAVA_SKIP" ]; then
			say "Sjava skipped: $JAVA_SKIP"
			SKIPPED+=("Sjava: $JAVA_SKIP")
			return 0
		fi
	fi
	for run in $(seq "$RUNS"); do
		say "$wl run $run/$RUNS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
		case "$wl" in
		S1)
			spool_both S1 S1 "$run" 128 1 1 1 ASYNC_FLUSH 0
			peer nats "S1 #$run" nats_run S1 "$run" 128 1 sync 1 default 0
			peer redis "S1 #$run" redis_run S1 "$run" 128 1 1 everysec 0
			ceiling_both S1 S1 "$run" 128 1 1 1
			;;
		S2)
			spool_both S2 S2 "$run" 128 64 1 1 ASYNC_FLUSH 0
			peer nats "S2 #$run" nats_run S2 "$run" 128 64 sync 1 default 0
			peer redis "S2 #$run" redis_run S2 "$run" 128 64 1 everysec 0
			ceiling_both S2 S2 "$run" 128 64 1 1
			;;
		S2b)
			spool_both S2b S2b "$run" 128 1 64 1 ASYNC_FLUSH 0
			peer nats "S2b #$run" nats_run S2b "$run" 128 1 async 64 default 0
			peer redis "S2b #$run" redis_run S2b "$run" 128 1 64 everysec 0
			ceiling_both S2b S2b "$run" 128 1 64 1
			;;
		Sjava)
			attempt "java Sjava JSON #$run" java_run Sjava "$run" JSON
			attempt "java Sjava ROCKETMQ #$run" java_run Sjava "$run" ROCKETMQ
			;;
		S3)
			spool_both S3 S3 "$run" 128 64 1 1 SYNC_FLUSH 0
			peer nats "S3 #$run" nats_run S3 "$run" 128 64 sync 1 always 0
			peer redis "S3 #$run" redis_run S3 "$run" 128 64 1 always 0
			;;
		S4)
			spool_both S4 S4 "$run" 1024 4 256 1 ASYNC_FLUSH 1
			spool_both S4b32 "S4 batch32" "$run" 1024 4 256 32 ASYNC_FLUSH 1
			peer nats "S4 #$run" nats_run S4 "$run" 1024 4 async 256 default 1
			peer redis "S4 #$run" redis_run S4 "$run" 1024 4 256 everysec 1
			ceiling_both S4 S4 "$run" 1024 4 256 1
			ceiling_both S4b32 "S4 batch32" "$run" 1024 4 256 32
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
	function ratio(w, ser, m,   k) {
		k = w SUBSEP "spool" SUBSEP ser
		if (!(k in cnt) || m <= 0) return "-"
		return sprintf("%.2f", stat(k, 5) / m)
	}
	# Fields: workload, system, ser, run, msg/s, MB/s, p50, p99, gen CPU s, server CPU s, messages, errors.
	{
		key = $1 SUBSEP $2 SUBSEP $3
		if (!(key in cnt)) { order[++nk] = key; wl[nk] = $1; sys[nk] = $2; ser[nk] = $3 }
		c = ++cnt[key]
		for (f = 5; f <= 12; f++) val[key, c, f] = $f
		val[key, c, 13] = ($11 > 0) ? $10 / $11 * 1e6 : "-"
	}
	END {
		printf "%-17s %-7s %-8s %4s %-26s %8s %8s %8s %7s %7s %8s %9s %5s\n", "workload", "system", "ser", "runs", "msg/s median [min-max]", "MB/s", "p50 us", "p99 us", "json/it", "rmq/it", "gen CPUs", "srv CPUs/1M", "errs"
		for (k = 1; k <= nk; k++) {
			key = order[k]
			m = stat(key, 5); rng = sprintf("%s [%s-%s]", fmt(m), fmt(lo), fmt(hi))
			mb = stat(key, 6); p50 = stat(key, 7); p99 = stat(key, 8); gc = stat(key, 9); sc = stat(key, 13)
			e = 0; for (i = 1; i <= cnt[key]; i++) e += val[key, i, 12]
			rj = rr = "-"
			# A peer row against both Spool rows; a ceiling row (one
			# serialization) against the Spool row of the same one.
			if (sys[k] != "spool") {
				if (ser[k] != "rocketmq") rj = ratio(wl[k], "json", m)
				if (ser[k] != "json") rr = ratio(wl[k], "rocketmq", m)
			}
			printf "%-17s %-7s %-8s %4d %-26s %8.1f %8s %8s %7s %7s %8.2f %11s %5d\n", wl[k], sys[k], ser[k], cnt[key], rng, mb,
				(p50 == "-" ? "-" : sprintf("%.0f", p50)), (p99 == "-" ? "-" : sprintf("%.0f", p99)), rj, rr, gc,
				(sc == "-" ? "-" : sprintf("%.2f", sc)), e
		}
	}' "$RES"
}
# print_java: the Java benchmark producer's own figures, median [min-max].
print_java() {
	awk -F'\t' '
	function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t } }
	function span(key, col,   i, a, n) {
		n = cnt[key]
		for (i = 1; i <= n; i++) a[i] = val[key, i, col] + 0
		sortn(a, n)
		return sprintf("%g [%g-%g]", n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2, a[1], a[n])
	}
	# Fields: workload, ser, run, TPS, average RT ms, max RT ms, messages stored, seconds.
	{
		key = $1 SUBSEP $2
		if (!(key in cnt)) { order[++nk] = key; wl[nk] = $1; ser[nk] = $2 }
		c = ++cnt[key]
		for (f = 4; f <= 8; f++) val[key, c, f] = $f
	}
	END {
		printf "%-8s %-8s %4s %-24s %-24s %-18s %s\n", "workload", "ser", "runs", "TPS (last 9 s)", "average RT ms (9 s)", "max RT ms (run)", "stored / run seconds"
		for (k = 1; k <= nk; k++) {
			key = order[k]
			printf "%-8s %-8s %4d %-24s %-24s %-18s %s\n", wl[k], ser[k], cnt[key], span(key, 4), span(key, 5), span(key, 6), span(key, 7) " / " val[key, 1, 8]
		}
	}' "$JAVA_RES"
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
# The commit built, and whether the work tree differed from it.
spool_rev() {
	local rev
	rev=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
	if [ -n "$(cd "$ROOT" && git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		rev="$rev (+ changes in the work tree)"
	fi
	echo "$rev"
}
echo "spool: $(spool_rev)"
if selected "$SYSTEMS" nats; then
	echo "nats-server: $(nats-server --version 2>&1)"
	echo "nats CLI: $(nats --version 2>&1)"
fi
selected "$SYSTEMS" redis && echo "redis-server: $(redis-server --version | awk '{print $3}')"
if selected "$ONLY" Sjava && selected "$SYSTEMS" spool; then
	echo "java: $(java -version 2>&1 | head -1); mvn: $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'); RocketMQ benchmark Producer $ROCKETMQ_JAVA_VERSION${COMPARE_JAVA_CLASSPATH:+ from COMPARE_JAVA_CLASSPATH}"
fi
echo "runs: $RUNS, ${DUR}s per produce run, workloads: $ONLY, systems: $SYSTEMS"

ports=()
selected "$SYSTEMS" spool && ports+=("$SP_NS" "$SP_BR" $((SP_BR - 2)))
selected "$SYSTEMS" nats && ports+=("$NATS_PORT")
selected "$SYSTEMS" redis && ports+=("$REDIS_PORT")
selected "$SYSTEMS" ceiling && ports+=("$CEIL_PORT")
for port in "${ports[@]}"; do
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
echo "== results: medians of $RUNS run(s) [min-max]; ser = Spool's request headers (json, rocketmq)"
echo "   json/it, rmq/it = Spool's median msg/s with JSON / ROCKETMQ headers over this system's;"
echo "   gen CPUs = load generator's user+sys seconds per run (/usr/bin/time);"
echo "   srv CPUs/1M = server's CPU seconds per million messages"
print_table
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -s "$RSS" ]; then
	echo
	echo "== Spool resident memory in S4 (MiB; idle RssAnon before the run, peak RssAnon and RssFile during produce+drain, RssAnon 10 s after the drain)"
	printf '%-17s %4s %12s %12s %12s %12s\n' workload run idleRssAnon peakRssAnon peakRssFile afterRssAnon
	awk -F'\t' '{printf "%-17s %4s %12s %12s %12s %12s\n", $1, $2, $3, $4, $5, $6}' "$RSS"
fi
if [ -s "$JAVA_RES" ]; then
	echo
	echo "== RocketMQ's Java benchmark Producer against Spool (-w 64 -s 128, sync SEND_MESSAGE_V2, one connection)"
	print_java
fi
if [ ${#SKIPPED[@]} -gt 0 ]; then
	echo
	for s in "${SKIPPED[@]}"; do echo "== skipped $s"; done
fi
if [ ${#FAILED[@]} -gt 0 ]; then
	echo
	echo "== failed: ${FAILED[*]}"
	echo "== log tail:"
	tail -20 "$LOG"
fi
