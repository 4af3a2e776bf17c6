#!/usr/bin/env bash
# Several redmux-bench binaries in turn on one set of 5 local redis-servers
# (started here on free loopback ports, stopped by pid on exit), for
# end-to-end A/B figures that see the same machine state: per round,
# redis-benchmark's CPU per 10 commands (ceiling_round, the issue's
# yardstick), then each binary once, the order rotating from round to
# round. A BIN may be a wrapper script (GOMAXPROCS=1 exec BIN "$@", say).
# One line per run: round, binary, redis-benchmark's µs per 10 commands,
# the core hop (ns) just before the run, pairs/s, the client's µs per pair
# (cpu_us_per_op) and its ratio to redis-benchmark's. Compare binaries by
# their ratios within a round (the state moves 2x within minutes on the
# shared 2-vCPU machine).
# Usage: inturn.sh ROUNDS C DURATION BIN...
# Example: inturn.sh 12 256 5s /tmp/rb-a /tmp/rb-b
set -euo pipefail
# shellcheck source=results/cost/ceiling-lib.sh
. "$(dirname "$(readlink -f "$0")")/ceiling-lib.sh"
rounds=$1 c=$2 dur=$3
shift 3
bins=("$@")
tmp=$(mktemp -d)
pids=()
trap stop_local EXIT

local_servers "$tmp" inturn.sh
corehop_setup "$tmp" >/dev/null
load_release

printf '%-5s %-16s %11s %6s %9s %11s %7s\n' round binary "rb us/10cmd" "hop ns" pairs/s "mux us/pair" mux/rb
for r in $(seq "$rounds"); do
	read -r _ _ _ rb < <(ceiling_round "$sha" "${CEILING_N:-200000}")
	flush_all
	for i in $(seq 0 $((${#bins[@]} - 1))); do
		b=${bins[$(((i + r) % ${#bins[@]}))]}
		hop=$(corehop)
		"$b" -nodes "$nodes" -fresh-nodes -strategy mux -c "$c" -d "$dur" -out "$tmp/rm" -force -quiet >/dev/null
		read -r ops cpu < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["strategies"][0]
print(s["ops_per_sec"], s["cpu_us_per_op"])' "$tmp/rm/summary.json")
		awk -v r="$r" -v b="$(basename "$b")" -v rb="$rb" -v h="$hop" -v o="$ops" -v m="$cpu" \
			'BEGIN {printf "%-5s %-16s %11.2f %6s %9.0f %11.2f %7.3f\n", r, b, rb, h, o, m, m/rb}'
		flush_all
	done
done
