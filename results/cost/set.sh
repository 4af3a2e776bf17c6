#!/usr/bin/env bash
# Issue 47's "one plain SET": the client's CPU per SET through mux against
# redis-benchmark's (C) per SET, side by side in one run, rounds
# alternating:
#  1. redis-benchmark -P 16 -c 50 -t set on one local redis-server this
#     script starts (a free loopback port, never 6379; stopped by pid on
#     exit), N requests: its user+sys CPU per request;
#  2. mux's BenchmarkSet256 (256 goroutines sharing one client, a
#     one-command batch each, on one redis-server the benchmark starts),
#     built from each checkout DIR given (default: this one; an older
#     commit needs the benchmark's function copied into its
#     mux/bench_test.go): its cpu-ns/op, the process's user+sys per SET.
#  3. mux's BenchmarkHandoffFloor (no I/O, no mux code: 256 goroutines
#     each queue a call and park until one serving goroutine wakes them),
#     from the first checkout whose tests have it: what the Go runtime
#     alone charges a goroutine-per-caller client per call, each round
#     once, beside the two above ("floor", and floor/rb).
# "hop ns" is the cores' cache-line round trip before the round
# (BenchmarkCoreHop, from the first checkout that has it; ceiling-lib.sh):
# compare rounds of the same class only.
# Each round prints one line per checkout (their order flips every round),
# then the medians of CPU per SET and of the rounds' ratios.
# SET_CPU=1 runs both benchmarks at GOMAXPROCS=1 (-test.cpu; default: the
# machine's cores).
# Usage: set.sh [ROUNDS [N [DIR...]]]   (run from the repository root)
set -euo pipefail
rounds=${1:-3} n=${2:-1000000}
shift $(($# < 2 ? $# : 2))
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(.)
cpu=()
[ -z "${SET_CPU:-}" ] || cpu=(-test.cpu "$SET_CPU")
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT

floorbin= hopbin=
for i in "${!dirs[@]}"; do
	(cd "${dirs[$i]}" && go test -c -o "$tmp/mux$i.test" ./mux)
	if [ -z "$floorbin" ] && "$tmp/mux$i.test" -test.list '^BenchmarkHandoffFloor$' | grep -q .; then
		floorbin="$tmp/mux$i.test"
	fi
	if [ -z "$hopbin" ] && "$tmp/mux$i.test" -test.list '^BenchmarkCoreHop$' | grep -q .; then
		hopbin="$tmp/mux$i.test"
	fi
done
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
[ "$port" != 6379 ] || { echo "set.sh: drew port 6379; run again" >&2; exit 1; }
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
	--dir "$tmp" --logfile '' --loglevel warning --protected-mode no >/dev/null &
pid=$!
for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

printf '%-6s %-24s %10s %11s %7s %6s %9s %8s %7s\n' round checkout "rb us/SET" "mux us/SET" mux/rb load \
	"floor us" floor/rb "hop ns"
for r in $(seq "$rounds"); do
	TIMEFORMAT='%U %S'
	hop=-
	if [ -n "$hopbin" ]; then
		hop=$("$hopbin" -test.run '^$' -test.bench '^BenchmarkCoreHop$' -test.benchtime 1000000x |
			awk '/^BenchmarkCoreHop/ {printf "%.0f", $3}')
	fi
	rb=$({ time redis-benchmark -p "$port" -P 16 -c 50 -n "$n" -r 100000000 -t set -q >/dev/null; } 2>&1 |
		awk -v n="$n" '{printf "%.3f", ($1 + $2) / n * 1e6}')
	redis-cli -p "$port" FLUSHALL >/dev/null
	floor=-
	if [ -n "$floorbin" ]; then
		floor=$("$floorbin" -test.run '^$' -test.bench '^BenchmarkHandoffFloor$' -test.benchtime "${n}x" "${cpu[@]}" |
			awk '/^BenchmarkHandoffFloor/ {for (i = 1; i <= NF; i++) if ($(i+1) == "cpu-ns/op") printf "%.3f", $i / 1000}')
	fi
	order=("${!dirs[@]}")
	if [ $((r % 2)) -eq 0 ]; then mapfile -t order < <(printf '%s\n' "${order[@]}" | tac); fi
	for i in "${order[@]}"; do
		mux=$(cd "${dirs[$i]}/mux" && "$tmp/mux$i.test" -test.run '^$' -test.bench '^BenchmarkSet256$' -test.benchtime "${n}x" "${cpu[@]}" |
			awk '/^BenchmarkSet256/ {for (i = 1; i <= NF; i++) if ($(i+1) == "cpu-ns/op") printf "%.3f", $i / 1000}')
		[ -n "$mux" ] || { echo "set.sh: BenchmarkSet256 in ${dirs[$i]} reported no cpu-ns/op" >&2; exit 1; }
		load=$(cut -d' ' -f1 /proc/loadavg)
		awk -v r="$r" -v d="${dirs[$i]}" -v a="$rb" -v b="$mux" -v l="$load" -v f="$floor" -v h="$hop" \
			'BEGIN {printf "%-6s %-24s %10.3f %11.3f %7.2f %6s %9s %8s %7s\n", r, d, a, b, b/a, l, f,
				(f == "-" ? "-" : sprintf("%.2f", f/a)), h}' | tee -a "$tmp/rows"
	done
done
for d in "${dirs[@]}"; do
	printf 'median %-24s' "$d"
	for col in 3 4 5 7 8; do printf " %10s" "$(awk -v d="$d" -v c=$col '$2 == d {print $c}' "$tmp/rows" | median)"; done
	echo
done
