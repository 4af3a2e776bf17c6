#!/usr/bin/env bash
# Issue 47's "one plain SET": the client's CPU per SET through mux against
# redis-benchmark's (C) per SET, side by side in one run, rounds
# alternating:
#  1. redis-benchmark -P 16 -c 50 -t set on one local redis-server this
#     script starts (a free loopback port, never 6379; stopped by pid on
#     exit), N requests: its user+sys CPU per request;
#  2. mux's BenchmarkSet256 (256 goroutines sharing one client, a
#     one-command batch each, on one redis-server the benchmark starts):
#     its cpu-ns/op, the process's user+sys per SET.
# Each round prints one line, then the medians and the median of the
# rounds' ratios.
# Usage: set.sh [ROUNDS [N]]   (run from the repository root)
set -euo pipefail
rounds=${1:-3} n=${2:-1000000}
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT

go test -c -o "$tmp/mux.test" ./mux
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
[ "$port" != 6379 ] || { echo "set.sh: drew port 6379; run again" >&2; exit 1; }
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
	--dir "$tmp" --logfile '' --loglevel warning --protected-mode no >/dev/null &
pid=$!
for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

printf '%-6s %14s %15s %9s %7s\n' round "rb us/SET" "mux us/SET" mux/rb load
for r in $(seq "$rounds"); do
	TIMEFORMAT='%U %S'
	rb=$({ time redis-benchmark -p "$port" -P 16 -c 50 -n "$n" -r 100000000 -t set -q >/dev/null; } 2>&1 |
		awk -v n="$n" '{printf "%.3f", ($1 + $2) / n * 1e6}')
	redis-cli -p "$port" FLUSHALL >/dev/null
	mux=$(cd mux && "$tmp/mux.test" -test.run '^$' -test.bench '^BenchmarkSet256$' -test.benchtime "${n}x" |
		awk '/^BenchmarkSet256/ {for (i = 1; i <= NF; i++) if ($(i+1) == "cpu-ns/op") printf "%.3f", $i / 1000}')
	[ -n "$mux" ] || { echo "set.sh: BenchmarkSet256 reported no cpu-ns/op" >&2; exit 1; }
	load=$(cut -d' ' -f1 /proc/loadavg)
	awk -v r="$r" -v a="$rb" -v b="$mux" -v l="$load" \
		'BEGIN {printf "%-6s %14.3f %15.3f %9.2f %7s\n", r, a, b, b/a, l}' | tee -a "$tmp/rows"
done
printf '%-6s' median
for col in 2 3 4; do printf " %14s" "$(awk -v c=$col '{print $c}' "$tmp/rows" | median)"; done
echo
