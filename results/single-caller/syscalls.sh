#!/usr/bin/env bash
# System calls per acquire+release pair, one goroutine, by strace -f -c:
# a run of 10,001 pairs minus a run of 1 pair (start-up, dials, set-up),
# divided by 10,000. Usage: syscalls.sh BINARY NODES [LABEL [FLAG...]]
# (FLAGs go to the binary: -transport io_uring, say)
# (NODES: comma-separated host:port of 5 redis-servers already running, so
# only the client is traced.)
set -euo pipefail
bin=$1 nodes=$2 label=${3:-$(basename "$1")}
shift $(($# < 3 ? $# : 3))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1 10001; do
	strace -f -c -o "$tmp/st.$n" "$bin" -nodes "$nodes" -strategy mux -c 1 -n "$n" -warmup 0 -out "" "$@" >/dev/null 2>&1
done
# strace -c rows: % time, seconds, usecs/call, calls, [errors], syscall.
calls() { awk '$NF!="total" && $NF!="syscall" && NF>=5 && $4 ~ /^[0-9]+$/ {c[$NF]+=$4} END {for (k in c) print k, c[k]}' "$1" | sort; }
join -a1 -a2 -e0 -o 0,1.2,2.2 <(calls "$tmp/st.1") <(calls "$tmp/st.10001") |
	awk -v label="$label" '{d=($3-$2)/10000; if (d >= 0.05) {printf "%s %-16s %6.2f\n", label, $1, d}; t+=d} END {printf "%s %-16s %6.2f\n", label, "TOTAL", t}'
