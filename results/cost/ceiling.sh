#!/usr/bin/env bash
# Issue 35's same-run comparison on 5 local redis-servers (started here on
# free loopback ports, stopped by pid on exit):
#  1. the servers' pipelined ceiling for a lock's commands: one
#     redis-benchmark (C, -P 16 -c 50) per node, all 5 at once, first
#     "SET key v NX PX 30000", then the release script by EVALSHA; a node
#     serves a pair (one of each) in 1/set + 1/release seconds, so the
#     ceiling in pairs/s is the slowest node's 1/(1/set + 1/release).
#     The release run's keys are random, so it mostly finds no key (GET,
#     no DEL): the ceiling is a little high, the ratio below conservative;
#  2. redis-benchmark's own CPU (user+sys of its 5 processes) per 10
#     commands, the commands of one pair on 5 nodes;
#  3. redmux-bench -strategy mux on the same servers: pairs/s and the
#     library's client CPU per pair (cpu_us_per_op: the harness's share is
#     reported apart, harness_cpu_us_per_op).
# Rounds alternate 1-2 and 3; each round prints one line, then the medians.
# "hop ns" is the cache line's round trip between the two cores just before
# the mux run (corehop): compare rounds of the same class only.
# Usage: ceiling.sh BINARY [ROUNDS [C [DURATION [FLAG...]]]]
# (FLAGs go to redmux-bench: -transport epoll, say.)
set -euo pipefail
# shellcheck source=results/cost/ceiling-lib.sh
. "$(dirname "$(readlink -f "$0")")/ceiling-lib.sh"
bin=$1 rounds=${2:-3} c=${3:-256} dur=${4:-8s}
shift $(($# < 4 ? $# : 4))
n=${CEILING_N:-200000} # requests per node per redis-benchmark run
tmp=$(mktemp -d)
pids=()
trap stop_local EXIT

local_servers "$tmp" ceiling.sh
corehop_setup "$tmp"
load_release

printf '%-6s %9s %9s %9s %9s %11s %15s %15s %9s %13s %7s\n' round set/s rel/s ceiling mux/s mux/ceiling "rb us/10cmd" "mux us/pair" mux/rb "harness us/op" "hop ns"
for r in $(seq "$rounds"); do
	read -r set_rate rel_rate ceiling rb_us10 < <(ceiling_round "$sha" "$n")
	flush_all
	hop=$(corehop)
	"$bin" -nodes "$nodes" -fresh-nodes -strategy mux -c "$c" -d "$dur" -out "$tmp/rm" -force -quiet "$@" >/dev/null
	read -r mux_ops mux_cpu harness < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["strategies"][0]
print(s["ops_per_sec"], s["cpu_us_per_op"], s.get("harness_cpu_us_per_op", 0))' "$tmp/rm/summary.json")
	awk -v r="$r" -v a="$set_rate" -v b="$rel_rate" -v ce="$ceiling" -v m="$mux_ops" -v rb="$rb_us10" -v mc="$mux_cpu" -v h="$harness" -v hop="$hop" \
		'BEGIN {printf "%-6s %9.0f %9.0f %9.0f %9.0f %11.2f %15.2f %15.2f %9.2f %13.2f %7s\n", r, a, b, ce, m, m/ce, rb, mc, mc/rb, h, hop}' | tee -a "$tmp/rows"
	flush_all
done
printf '%-6s' median
w=(0 0 9 9 9 9 11 15 15 9 13 7)
for col in 2 3 4 5 6 7 8 9 10 11; do printf " %${w[$col]}s" "$(awk -v c=$col '{print $c}' "$tmp/rows" | median)"; done
echo
