#!/bin/bash
# Issue 35, run 4 on the 16-core machine: io_uring sends with IOSQE_ASYNC
# (redmux-bench-async: 89ec362 with the flag on every send entry, not
# committed: the kernel's io-wq threads send in parallel) vs main (auto:
# io_uring) vs main on epoll; and -c 16, auto against epoll.
set -u
out=$1; mkdir -p "$out"; D=$(dirname "$(readlink -f "$0")")
sleep 11
run() { local name=$1 bin=$2; shift 2
  "$bin" -nodes "$NODES" -strategy mux -d 4s -warmup 500ms -out "" -json "$out/$name.json" "$@" 2>&1 | awk -v n="$name" '$1=="mux" {print n, $0}'; }
for r in 1 2 3; do
  run c1-auto-$r $D/redmux-bench -c 1
  run c1-async-$r $D/redmux-bench-async -c 1
  run c1-epoll-$r $D/redmux-bench -c 1 -transport epoll
done
for r in 1 2; do
  run c256-auto-$r $D/redmux-bench -c 256
  run c256-async-$r $D/redmux-bench-async -c 256
  run c16-auto-$r $D/redmux-bench -c 16
  run c16-epoll-$r $D/redmux-bench -c 16 -transport epoll
done
echo done
