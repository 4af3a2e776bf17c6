#!/bin/sh
# Plaintext vs TLS on 5 local redis-servers, back to back in one run of this
# script (same machine, same binaries, same minutes), plus mux on the
# net.Conn transport without TLS (built with -tags redmux_portable), which
# separates the transport's share from TLS's. Writes one JSON summary per
# case into results/tls/json/ and prints the tables of results/tls/README.md.
# Usage, from the repository root:
#   sh results/tls/run.sh [duration]
set -eu
d=${1:-5s}
out=results/tls/json
mkdir -p "$out"
go build -o /tmp/redmux-bench-tls ./cmd/redmux-bench
go build -tags redmux_portable -o /tmp/redmux-bench-tls-portable ./cmd/redmux-bench
for c in 1 16 64; do
	/tmp/redmux-bench-tls -real-local 5 -c "$c" -d "$d" -strategy all -quiet -out "" -json "$out/c$c-plain.json"
	/tmp/redmux-bench-tls -real-local 5 -tls -c "$c" -d "$d" -strategy all -quiet -out "" -json "$out/c$c-tls.json"
	/tmp/redmux-bench-tls-portable -real-local 5 -c "$c" -d "$d" -strategy mux -quiet -out "" -json "$out/c$c-plain-netconn.json"
done
sh results/tls/table.sh
