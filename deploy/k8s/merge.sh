#!/bin/sh
# merge.sh [JOB [DIR]]: while the Indexed Job JOB (default redmux-bench) runs,
# copy each pod's interval log into DIR/segment-<k>.hlog as soon as the pod
# says it is ready ("=== redmux-bench hlog ready": kubectl cp, then kubectl
# exec ... touch /out/fetched lets the pod exit), and once the Job has
# finished merge them with redmux-bench merge into DIR/merged (merged.hlog,
# merged.json, merged.csv, merged.svg). A pod nobody fetched from within its
# HLOG_WAIT prints its interval log between "=== redmux-bench hlog" markers
# instead, where merge.sh takes it from the pod's output. merge refuses a
# segment given twice and warns about a missing one. Copying needs RBAC for
# pods/exec (kubectl cp and exec) besides pods/log.
#
# It stops waiting as soon as the Job is Complete or Failed (a pod that exits
# non-zero fails the Job: backoffLimit 0), or after MERGE_TIMEOUT seconds
# (default 1800). A failed Job (or a timeout) names the failed pods, merges
# the segments it has, and exits 1.
#
# The Job's name is fixed and its pod template immutable: to run it again,
# delete it first (kubectl delete job redmux-bench), then apply it again with
# a new START_AT (docs/LOAD-MACHINES.md).
#
# Needs kubectl (pods labelled batch.kubernetes.io/job-completion-index:
# Kubernetes 1.28 or later) and redmux-bench on the PATH, or run from the
# repository root (go run ./cmd/redmux-bench).
set -eu
job=${1:-redmux-bench}
dir=${2:-results/k8s}
timeout=${MERGE_TIMEOUT:-1800}
n=$(kubectl get job "$job" -o jsonpath='{.spec.completions}')
mkdir -p "$dir"
fetched=" "
# fetch K: copy segment K's interval log from its pod once the pod says it
# is ready, and let the pod go.
fetch() {
	case "$fetched" in *" $1 "*) return 0 ;; esac
	pod=$(kubectl get pods -l "job-name=$job,batch.kubernetes.io/job-completion-index=$1" \
		-o jsonpath='{.items[0].metadata.name}' 2>/dev/null) || return 0
	[ -n "$pod" ] || return 0
	kubectl logs --tail=5 "$pod" 2>/dev/null | grep -q '^=== redmux-bench hlog ready' || return 0
	kubectl cp "$pod:/out/bench.hlog" "$dir/segment-$1.hlog" >/dev/null 2>&1 || return 0
	[ -s "$dir/segment-$1.hlog" ] || return 0
	kubectl exec "$pod" -- touch /out/fetched >/dev/null 2>&1 || true
	fetched="$fetched$1 "
}
fetch_all() {
	k=0
	while [ "$k" -lt "$n" ]; do
		fetch "$k"
		k=$((k + 1))
	done
}
failed=
waited=0
while :; do
	fetch_all
	state=$(kubectl get job "$job" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
	case " $state " in
	*" Complete "*) break ;;
	*" Failed "* | *" FailureTarget "*)
		echo "merge.sh: job $job failed; its failed pods:" >&2
		kubectl get pods -l "job-name=$job" --field-selector=status.phase=Failed \
			-o jsonpath='{range .items[*]}{.metadata.name} (segment {.metadata.labels.batch\.kubernetes\.io/job-completion-index}){"\n"}{end}' >&2 || true
		echo "merge.sh: merging the segments it has (kubectl logs POD for why a pod failed)" >&2
		fetch_all
		failed=1
		break
		;;
	esac
	if [ "$waited" -ge "$timeout" ]; then
		echo "merge.sh: job $job did not finish within ${timeout}s (MERGE_TIMEOUT): merging the segments it has" >&2
		failed=1
		break
	fi
	sleep 5
	waited=$((waited + 5))
done
files=
k=0
while [ "$k" -lt "$n" ]; do
	f="$dir/segment-$k.hlog"
	case "$fetched" in
	*" $k "*)
		files="$files $f"
		k=$((k + 1))
		continue
		;;
	esac
	# Not copied: the pod printed it (nobody fetched within its HLOG_WAIT).
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
[ -z "$failed" ] || exit 1
