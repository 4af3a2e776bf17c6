#!/usr/bin/env bash
# Interleaved runs of one redmux-bench binary against the same 5
# redis-servers: for each round and each -c, mux on epoll, then mux on
# io_uring, and at -c 1 fanout too (latency.sh with the transport flags).
# Usage: [CS="1 4 16 64 256"] transports.sh BINARY NODES [ROUNDS] [DURATION]
# Prints one line per run: label, -c, then redmux-bench's mux/fanout row.
set -euo pipefail
here=$(dirname "$0")
OLD_FLAGS="-transport epoll" NEW_FLAGS="-transport io_uring" OLD_LABEL=epoll NEW_LABEL=io_uring \
	exec "$here/latency.sh" "$1" "$1" "$2" "${3:-3}" "${4:-3s}"
