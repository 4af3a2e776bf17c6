#!/bin/bash
# Issue 35, run 3 on the 16-core machine (results/cost/README.md): io_uring with
# IORING_SETUP_COOP_TASKRUN (redmux-bench-coop: 89ec362 with 1<<8 added to
# NewRing's setup flags, not committed) vs main (auto: io_uring) vs main on epoll.
set -u
out=$1; mkdir -p "$out"; D=$(dirname "$(readlink -f "$0")")
sleep 11
run() { local name=$1 bin=$2; shift 2
  "$bin" -nodes "$NODES" -strategy mux -d 4s -warmup 500ms -out "" -json "$out/$name.json" "$@" 2>&1 | awk -v n="$name" '$1=="mux" {print n, $0}'; }
for r in 1 2 3; do
  run c1-auto-$r $D/redmux-bench -c 1
  run c1-coop-$r $D/redmux-bench-coop -c 1
  run c1-epoll-$r $D/redmux-bench -c 1 -transport epoll
  run c256-auto-$r $D/redmux-bench -c 256
  run c256-coop-$r $D/redmux-bench-coop -c 256
done
echo done
