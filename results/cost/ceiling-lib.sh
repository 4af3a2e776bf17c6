# shellcheck shell=bash
# Sourced by ceiling.sh, fenced.sh, device.sh and inturn.sh: 5 local servers
# (local_servers) and the servers' pipelined ceiling for a lock's commands,
# on the nodes whose ports are in the array "ports".

# local_servers DIR NAME: starts 5 redis-servers on free loopback ports
# (never 6379; NAME says who drew it), their files under DIR, and waits
# until each answers PING. Sets the arrays "ports" and "pids" (the caller
# stops them by pid) and "nodes" (host:port,...).
local_servers() {
	local dir=$1 name=$2 p
	mapfile -t ports < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(5)]
for s in ss: s.bind(("127.0.0.1", 0))
for s in ss: print(s.getsockname()[1])
for s in ss: s.close()')
	nodes=""
	for p in "${ports[@]}"; do
		[ "$p" != 6379 ] || { echo "$name: drew port 6379; run again" >&2; exit 1; }
		mkdir -p "$dir/$p"
		redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
			--dir "$dir/$p" --logfile '' --loglevel warning --protected-mode no >/dev/null &
		pids+=($!)
		nodes+="${nodes:+,}127.0.0.1:$p"
	done
	for p in "${ports[@]}"; do
		for _ in $(seq 100); do redis-cli -p "$p" PING >/dev/null 2>&1 && break; sleep 0.1; done
	done
}

# stop_local: stops the processes in "pids" by pid and removes the
# directory "tmp" (the scripts' EXIT trap).
stop_local() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}

# load_release: loads the lock's release script (the check-and-delete
# redis-benchmark runs by EVALSHA) on every node in "ports" and sets "sha".
load_release() {
	local p release='if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end'
	for p in "${ports[@]}"; do sha=$(redis-cli -p "$p" SCRIPT LOAD "$release"); done
}

# flush_all: FLUSHALL on every node in "ports".
flush_all() {
	local p
	for p in "${ports[@]}"; do redis-cli -p "$p" FLUSHALL >/dev/null; done
}

# median: the median of the numbers on stdin, one per line.
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
#
# ceiling_round SHA [N]: one redis-benchmark (C, -P 16 -c 50, N requests,
# default 200000, random keys) per node, all 5 at once, first
# "SET key v NX PX 30000", then the release script by EVALSHA SHA. Prints
# "SET/s RELEASE/s PAIRS/s US_PER_10_COMMANDS": each command's rate on the
# slowest node; the ceiling in pairs/s, the slowest node's
# 1/(1/set + 1/release) (a node serves a pair, one of each, in that time);
# redis-benchmark's own CPU (user+sys of its processes) per 10 commands,
# the commands of one pair on 5 nodes. The release run's keys are random,
# so it mostly finds no key (GET, no DEL): the ceiling is a little high.
ceiling_round() {
	local sha=$1 n=${2:-200000} d set rel
	d=$(mktemp -d)
	set=$(ceiling_bench "$d" "$n" SET 'k:__rand_int__' v NX PX 30000)
	rel=$(ceiling_bench "$d" "$n" EVALSHA "$sha" 1 'k:__rand_int__' v)
	awk -v s="$set" -v r="$rel" -v n="$n" -v k="${#ports[@]}" '{c += $1 + $2} END {
		printf "%.0f %.0f %.0f %.2f\n", s, r, 1/(1/s + 1/r), c / (2*k*n) * 1e6 * 10}' "$d/cpu"
	rm -rf "$d"
}

# ceiling_bench DIR N CMD...: CMD on every node at once; prints the slowest
# node's requests/s and appends the processes' CPU seconds to DIR/cpu.
ceiling_bench() {
	local d=$1 n=$2 p
	shift 2
	TIMEFORMAT='%U %S'
	{ time (
		for p in "${ports[@]}"; do
			redis-benchmark -p "$p" -P 16 -c 50 -n "$n" -r 100000000 --csv "$@" >"$d/rb.$p" 2>/dev/null &
		done
		wait
	); } 2>>"$d/cpu"
	for p in "${ports[@]}"; do tail -1 "$d/rb.$p" | cut -d, -f2 | tr -d '"'; done | sort -g | head -1
}

# corehop_setup DIR: builds mux's test binary into DIR for corehop (once
# per script; the repository is this script's ../..).
corehop_setup() {
	(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && go test -c -o "$1/mux.test" ./mux)
	hopbin=$1/mux.test
}

# corehop: ns per cache-line round trip between two cores now
# (mux.BenchmarkCoreHop, 1,000,000 trips, about 0.1-0.4 s). On the
# 2-vCPU VMs it is ~80 ns or ~400 ns as the hypervisor places the vCPUs,
# and mux's CPU per pair follows it: a round is comparable only with
# rounds of the same class (results/cost/README.md, ninth session).
corehop() {
	"$hopbin" -test.run '^$' -test.bench '^BenchmarkCoreHop$' -test.benchtime 1000000x 2>/dev/null |
		awk '/^BenchmarkCoreHop/ {printf "%.0f\n", $3}'
}
