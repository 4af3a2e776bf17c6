#!/usr/bin/env bash
# Issue 35's 16-core figures, in one call on a lent machine (devbench-kit:
# 5 redis-servers pinned one per core, this script pinned to the rest):
#   .devbench/run.sh bash results/cost/device.sh "$OUT"
# .devbench/ must hold redmux-bench (after) and redmux-bench-406c010 (before:
# the commit before issue 35's first change), both built with CGO_ENABLED=0.
#  1. the floor: one redis-benchmark connection (-c 1 -P 1) on one node, SET
#     then DEL (the issue's floor), and SET NX PX then the release script by
#     EVALSHA (the lock's own commands on one node); p50 of each;
#  2. the servers' pipelined ceiling (ceiling-lib.sh, as ceiling.sh): one redis-benchmark
#     (-P 16 -c 50) per node, all 5 at once, SET NX PX then EVALSHA release;
#     the processes' CPU (user+sys) per 10 commands;
#  3. -c 1, defaults: before, after, after on epoll; interleaved rounds;
#  4. -c 64 and -c 256: before and after interleaved (after on epoll too at
#     -c 256), then after at -c 256 with GOMAXPROCS 1, 2 and 4.
#  5. (part c1wait) -c 1 on the new binary only: how a lone caller waits
#     (io_uring/epoll, direct wait or parked, GOMAXPROCS 2), interleaved.
# PARTS picks parts (default "floor ceiling c1 cN gmp"; also c1wait).
# Every redmux-bench run writes its summary to OUT/<name>.json and prints its
# table row (the tables in results/cost/README.md are medians of those).
# Env: NODES (run.sh sets it), ROUNDS (3), DUR (5s), FLOOR_N (20000),
# CEIL_N (1000000 requests per node per redis-benchmark run).
set -u
# shellcheck source=results/cost/ceiling-lib.sh
. "$(dirname "$(readlink -f "$0")")/ceiling-lib.sh"
parts=" ${PARTS:-floor ceiling c1 cN gmp} "
want() { [[ $parts == *" $1 "* ]]; }
out=${1:?usage: device.sh OUTDIR}
mkdir -p "$out"
D=$(dirname "$(readlink -f "$0")")/../../.devbench
new=$D/redmux-bench old=$D/redmux-bench-406c010
rounds=${ROUNDS:-3} dur=${DUR:-5s}
IFS=, read -r -a addrs <<<"$NODES"
ports=()
for a in "${addrs[@]}"; do ports+=("${a##*:}"); done
{
	echo "date: $(date -u +%FT%TZ)"; uname -r; echo "nproc: $(nproc)"
	lscpu | grep -E 'Model name|^CPU\(s\)|Thread|NUMA node\(s\)' | sed 's/  */ /g'
	echo "io_uring_disabled: $(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo n/a)"
	echo "affinity: $(taskset -pc $$ 2>/dev/null)"
	redis-server --version
} | tee "$out/machine.txt"

load_release

# 1. floor
p0=${ports[0]}
want floor && for r in $(seq "$rounds"); do
	for t in "set:SET floor:k v" "del:DEL floor:k" "setnx:SET floor:k v NX PX 30000" "rel:EVALSHA $sha 1 floor:k v"; do
		# shellcheck disable=SC2086 # the command splits into words on purpose
		redis-benchmark -p "$p0" -c 1 -P 1 -n "${FLOOR_N:-20000}" --csv ${t#*:} 2>/dev/null |
			tail -1 | awk -v r="$r" -v t="${t%%:*}" -F, '{gsub(/"/, ""); print "floor", r, t, "rps", $2, "p50_ms", $5}'
	done
done | tee "$out/floor.txt"

# 2. ceiling (ceiling-lib.sh)
want ceiling && for r in $(seq "$rounds"); do
	read -r s e c u < <(ceiling_round "$sha" "${CEIL_N:-1000000}")
	echo "ceiling $r set/s $s rel/s $e pairs/s $c rb_us_per_10cmd $u"
	flush_all
done | tee "$out/ceiling.txt"

run() { # NAME BINARY FLAG...: one redmux-bench mux run
	local name=$1 bin=$2
	shift 2
	"$bin" -nodes "$NODES" -strategy mux -d "$dur" -warmup 500ms -out "" -json "$out/$name.json" "$@" 2>&1 |
		awk -v n="$name" '$1=="mux" {print n, $0}'
}
# the lock quarantines nodes up for less than the TTL (10s): the steps
# above take longer than that (alone, a part waits)
want floor || want ceiling || sleep 11
want c1 && for r in $(seq "$rounds"); do
	run "c1-old-$r" "$old" -c 1
	run "c1-new-$r" "$new" -c 1
	run "c1-newepoll-$r" "$new" -c 1 -transport epoll
done | tee "$out/c1.txt"
want c1wait && for r in $(seq "$rounds"); do
	run "c1-auto-$r" "$new" -c 1
	run "c1-epoll-$r" "$new" -c 1 -transport epoll
	run "c1-epolldw-$r" "$new" -c 1 -transport epoll -direct-wait 1ms
	run "c1-uringpark-$r" "$new" -c 1 -transport io_uring -direct-wait 1us
	GOMAXPROCS=2 run "c1-auto-gmp2-$r" "$new" -c 1
	GOMAXPROCS=2 run "c1-epoll-gmp2-$r" "$new" -c 1 -transport epoll
done | tee "$out/c1wait.txt"
want cN && for r in $(seq "$rounds"); do
	for c in 64 256; do
		run "c$c-old-$r" "$old" -c "$c"
		run "c$c-new-$r" "$new" -c "$c"
	done
	run "c256-newepoll-$r" "$new" -c 256 -transport epoll
done | tee "$out/cN.txt"
want gmp && for r in 1 2; do
	for g in 1 2 4; do GOMAXPROCS=$g run "c256-new-gmp$g-$r" "$new" -c 256; done
done | tee "$out/gmp.txt"
echo done
