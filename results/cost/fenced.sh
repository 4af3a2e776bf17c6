#!/usr/bin/env bash
# Issue 47's fenced against plain pairs/s: redmux-bench -strategy mux with
# -workload fenced and -workload acquire-release, adjacent in each round
# (the order flips every round), on one set of 5 local redis-servers this
# script starts (free loopback ports, never 6379; stopped by pid on exit),
# at each -c given. Each run prints its pairs/s and the client's CPU per
# pair; each round the fenced/plain ratio; then the median ratio per -c.
# Usage: fenced.sh BINARY [ROUNDS [DURATION [C...]]]   (C: 64 256 by default)
set -euo pipefail
# shellcheck source=results/cost/ceiling-lib.sh
. "$(dirname "$(readlink -f "$0")")/ceiling-lib.sh"
bin=$1 rounds=${2:-3} dur=${3:-6s}
shift $(($# < 3 ? $# : 3))
cs=("$@")
[ ${#cs[@]} -gt 0 ] || cs=(64 256)
tmp=$(mktemp -d)
pids=()
trap stop_local EXIT

local_servers "$tmp" fenced.sh
corehop_setup "$tmp"

# one WORKLOAD C: prints "pairs/s cpu_us_per_pair failed"
one() {
	"$bin" -nodes "$nodes" -fresh-nodes -strategy mux -workload "$1" -c "$2" -d "$dur" \
		-out "$tmp/rm" -force -quiet >/dev/null
	python3 -c '
import json, sys
s = [x for x in json.load(open(sys.argv[1]))["strategies"] if x["name"] == "mux"][0]
print(round(s["ops_per_sec"]), round(s["cpu_us_per_op"], 2), s.get("failed", 0))' "$tmp/rm/summary.json"
}

printf '%-6s %5s %12s %10s %12s %10s %7s %6s %7s\n' round -c plain/s "plain cpu" fenced/s "fenced cpu" ratio load "hop ns"
for r in $(seq "$rounds"); do
	for c in "${cs[@]}"; do
		hop=$(corehop) # the cores' round trip (ceiling-lib.sh): compare rounds of one class
		if [ $((r % 2)) -eq 1 ]; then
			read -r pr pc pf < <(one acquire-release "$c")
			read -r fr fc ff < <(one fenced "$c")
		else
			read -r fr fc ff < <(one fenced "$c")
			read -r pr pc pf < <(one acquire-release "$c")
		fi
		[ "$pf" = 0 ] && [ "$ff" = 0 ] || echo "fenced.sh: round $r -c $c: failed plain $pf, fenced $ff" >&2
		load=$(cut -d' ' -f1 /proc/loadavg)
		awk -v r="$r" -v c="$c" -v pr="$pr" -v pc="$pc" -v fr="$fr" -v fc="$fc" -v l="$load" -v hop="$hop" \
			'BEGIN {printf "%-6s %5s %12s %10s %12s %10s %7.2f %6s %7s\n", r, c, pr, pc, fr, fc, fr/pr, l, hop}' | tee -a "$tmp/rows"
	done
done
for c in "${cs[@]}"; do
	printf 'median -c %s: fenced/plain %s\n' "$c" "$(awk -v c="$c" '$2 == c {print $7}' "$tmp/rows" | median)"
done
