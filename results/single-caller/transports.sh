#!/usr/bin/env bash
# Interleaved runs of one redmux-bench binary against the same 5
# redis-servers: for each round and each -c, mux on epoll, then mux on
# io_uring, and at -c 1 fanout too. Rounds past the third run -c 1 only.
# Usage: [CS="1 4 16 64 256"] transports.sh BINARY NODES [ROUNDS] [DURATION]
# Prints one line per run: label, -c, then redmux-bench's mux/fanout row.
set -euo pipefail
bin=$1 nodes=$2 rounds=${3:-3} dur=${4:-3s}
for r in $(seq "$rounds"); do
	for c in ${CS:-1 4 16 64 256}; do
		if [ "$r" -gt 3 ] && [ "$c" != 1 ]; then continue; fi
		for t in epoll io_uring; do
			"$bin" -nodes "$nodes" -strategy mux -transport "$t" -c "$c" -d "$dur" -warmup 500ms -out "" 2>&1 |
				awk -v v="$t" -v c="$c" '$1=="mux" {print v, "c=" c, $0}'
		done
		if [ "$c" = 1 ]; then
			"$bin" -nodes "$nodes" -strategy fanout -c 1 -d "$dur" -warmup 500ms -out "" 2>&1 |
				awk '$1=="fanout" {print "fanout", "c=1", $0}'
		fi
	done
done
