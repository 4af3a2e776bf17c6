#!/usr/bin/env bash
# Interleaved before/after runs of redmux-bench against the same 5
# redis-servers: for each round and each -c, OLD then NEW (mux), and at
# -c 1 fanout too (from NEW's binary: fanout does not use mux). Rounds past
# the third run -c 1 only.
# Usage: [CS="1 4 16 64 256"] latency.sh OLD_BINARY NEW_BINARY NODES [ROUNDS] [DURATION]
# Prints one line per run: label, -c, then redmux-bench's mux/fanout row.
# OLD_FLAGS/NEW_FLAGS add flags to each side's mux runs, OLD_LABEL/NEW_LABEL
# name them (default old, new): transports.sh compares one binary's
# transports that way.
set -euo pipefail
old=$1 new=$2 nodes=$3 rounds=${4:-3} dur=${5:-3s}
for r in $(seq "$rounds"); do
	for c in ${CS:-1 4 16 64 256}; do
		if [ "$r" -gt 3 ] && [ "$c" != 1 ]; then continue; fi
		for v in old new; do
			bin=$old flags=${OLD_FLAGS:-} label=${OLD_LABEL:-old}
			[ "$v" = new ] && bin=$new flags=${NEW_FLAGS:-} label=${NEW_LABEL:-new}
			# shellcheck disable=SC2086 # flags split into words on purpose
			"$bin" -nodes "$nodes" -strategy mux $flags -c "$c" -d "$dur" -warmup 500ms -out "" 2>&1 |
				awk -v v="$label" -v c="$c" '$1=="mux" {print v, "c=" c, $0}'
		done
		if [ "$c" = 1 ]; then
			"$new" -nodes "$nodes" -strategy fanout -c 1 -d "$dur" -warmup 500ms -out "" 2>&1 |
				awk '$1=="fanout" {print "fanout", "c=1", $0}'
		fi
	done
done
