#!/bin/sh
# merge.sh [JOB [DIR]]: wait for the Indexed Job JOB (default redmux-bench) to
# finish, take each pod's interval log from its output (between the
# "=== redmux-bench hlog" markers that deploy/k8s/redmux-bench-job.yaml
# prints) into DIR/segment-<k>.hlog, and merge them with redmux-bench merge
# into DIR/merged (merged.hlog, merged.json, merged.csv, merged.svg). merge
# refuses a segment given twice and warns about a missing one.
# Needs kubectl (pods labelled batch.kubernetes.io/job-completion-index:
# Kubernetes 1.28 or later) and redmux-bench on the PATH, or run from the
# repository root (go run ./cmd/redmux-bench).
set -eu
job=${1:-redmux-bench}
dir=${2:-results/k8s}
n=$(kubectl get job "$job" -o jsonpath='{.spec.completions}')
kubectl wait --for=condition=complete --timeout=30m "job/$job" ||
	echo "merge.sh: job $job did not complete: merging the segments that logged" >&2
mkdir -p "$dir"
files=
k=0
while [ "$k" -lt "$n" ]; do
	f="$dir/segment-$k.hlog"
	kubectl logs --tail=-1 -l "job-name=$job,batch.kubernetes.io/job-completion-index=$k" |
		sed -n '/^=== redmux-bench hlog begin/,/^=== redmux-bench hlog end/p' | sed '1d;$d' >"$f"
	if [ -s "$f" ]; then
		files="$files $f"
	else
		echo "merge.sh: no interval log from segment $k/$n" >&2
		rm -f "$f"
	fi
	k=$((k + 1))
done
[ -n "$files" ] || { echo "merge.sh: no segment logged an interval log" >&2; exit 1; }
if command -v redmux-bench >/dev/null 2>&1; then
	bench="redmux-bench"
else
	bench="go run ./cmd/redmux-bench"
fi
# shellcheck disable=SC2086 # $files and $bench are lists
$bench merge -out "$dir/merged" $files
