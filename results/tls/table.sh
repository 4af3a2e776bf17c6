#!/bin/sh
# Prints results/tls/README.md's tables from results/tls/json/ (run.sh calls it).
set -eu
out=results/tls/json
echo
printf '| -c | strategy | plain ops/s | TLS ops/s | TLS/plain | plain acq+rel p50 | TLS acq+rel p50 | plain p99 | TLS p99 | client CPU µs/op plain → TLS | servers CPU µs/op plain → TLS | TLS allocs/op |\n'
printf '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for c in 1 16 64; do
	jq -r --slurpfile t "$out/c$c-tls.json" --arg c "$c" '
		def srv: if .server then (.server.cpu_us_per_op_per_node * .server.nodes_reporting | floor | tostring) else "-" end;
		.strategies[] as $p | ($t[0].strategies[] | select(.name == $p.name)) as $q |
		"| \($c) | \($p.name) | \($p.ops_per_sec|floor) | \($q.ops_per_sec|floor) | \(($q.ops_per_sec / $p.ops_per_sec * 100 | floor) / 100) | \($p.acquire_release.p50_us|floor) µs | \($q.acquire_release.p50_us|floor) µs | \($p.acquire_release.p99_us|floor) µs | \($q.acquire_release.p99_us|floor) µs | \($p.cpu_us_per_op|floor) → \($q.cpu_us_per_op|floor) | \($p|srv) → \($q|srv) | \($q.allocs_per_op*10|floor/10) |"' "$out/c$c-plain.json"
done
echo
printf '| -c | mux transport | ops/s | acq+rel p50 | acq+rel p99 | client CPU µs/op | servers CPU µs/op | allocs/op |\n'
printf '|---:|---|---:|---:|---:|---:|---:|---:|\n'
for c in 1 16 64; do
	for f in plain:"epoll, plaintext" plain-netconn:"net.Conn, plaintext" tls:"net.Conn, TLS"; do
		jq -r --arg c "$c" --arg lab "${f#*:}" '
			.strategies[] | select(.name == "mux") |
			"| \($c) | \($lab) | \(.ops_per_sec|floor) | \(.acquire_release.p50_us|floor) µs | \(.acquire_release.p99_us|floor) µs | \(.cpu_us_per_op|floor) | \(if .server then (.server.cpu_us_per_op_per_node * .server.nodes_reporting | floor | tostring) else "-" end) | \(.allocs_per_op*10|floor/10) |"' "$out/c$c-${f%%:*}.json"
	done
done
