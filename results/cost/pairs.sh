#!/usr/bin/env bash
# Two builds of one Go benchmark, side by side in one run, for changes
# smaller than one round's noise on a shared 2-vCPU machine: PAIRS pairs of
# short runs, A then B in odd pairs and B then A in even ones, each pair
# back to back (so both see the same machine: the same core-hop class, the
# same neighbours), then the median of the pairs' ratios B/A of the
# benchmark's cpu-ns/op (its client CPU per op), with the quartiles and the
# number of pairs in which B cost less. A change that moves the median by
# less than the quartiles' spread, or wins about half the pairs, is inside
# the noise.
#
# A and B are test binaries (go test -c -o A.test ./mux at each commit);
# they run in DIR (default: mux, for its benchmarks' test data). Rows go to
# $PAIRS_ROWS when it is set.
# Usage: pairs.sh PAIRS BENCHMARK BENCHTIME A.test B.test [DIR]
# Example: pairs.sh 40 BenchmarkSet256 300000x /tmp/base.test /tmp/new.test
set -euo pipefail
pairs=$1 bench=$2 bt=$3 a=$(readlink -f "$4") b=$(readlink -f "$5") dir=${6:-mux}
cd "$(dirname "$(readlink -f "$0")")/../../$dir"
rows=${PAIRS_ROWS:-$(mktemp)}
: >"$rows"
one() {
	"$1" -test.run '^$' -test.bench "^$bench\$" -test.benchtime "$bt" |
		awk -v b="$bench" '$1 ~ "^" b {for (i = 1; i <= NF; i++) if ($(i+1) == "cpu-ns/op") print $i}'
}
for r in $(seq "$pairs"); do
	if [ $((r % 2)) -eq 1 ]; then x=$(one "$a"); y=$(one "$b"); else y=$(one "$b"); x=$(one "$a"); fi
	[ -n "$x" ] && [ -n "$y" ] || { echo "pairs.sh: $bench reported no cpu-ns/op" >&2; exit 1; }
	echo "$x $y" >>"$rows"
done
python3 - "$rows" <<'PY'
import statistics as st, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
r = sorted(y / x for x, y in rows)
q = st.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
print("pairs %d  A median %.0f  B median %.0f cpu-ns/op  B/A median %.3f (quartiles %.3f-%.3f)  B cheaper in %d"
      % (len(r), st.median(x for x, _ in rows), st.median(y for _, y in rows), st.median(r), q[0], q[2],
         sum(y < x for x, y in rows)))
PY
