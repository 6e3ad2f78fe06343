#!/usr/bin/env bash
# Benchmark: wall time of a no-op re-run of deploy divided by `ansible all -m
# ping`, on the same sandbox hosts, measured in one run (the hosts share this
# machine's cores, so only ratios measured together mean anything).
#
#   bash bench/noop_vs_ping.sh [inventory]      (default: inventories/bench8/gpus.ini)
#
# Boots the inventory's hosts, deploys once (not timed), then times N pings
# and N no-op deploys alternately and prints the median of each and the ratio.
# Results are appended to bench/results/noop_vs_ping.tsv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
inv=${1:-inventories/bench8/gpus.ini}
runs=${RUNS:-3}
export ANSIBLE_CONFIG=$root/ansible.cfg PATH=$root/.venv/bin:$PATH
python tests/sandbox/fleet.py up -i "$inv" --state-dir .sandbox-bench >/dev/null
trap 'python tests/sandbox/fleet.py down --state-dir .sandbox-bench >/dev/null' EXIT
ansible-playbook playbooks/deploy.yml -i "$inv" >/dev/null
secs() {
  local t0 log; t0=$(date +%s.%N); log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then echo "bench: failed: $*" >&2; tail -20 "$log" >&2; rm -f "$log"; return 1; fi
  rm -f "$log"; python -c "import sys,time; print(time.time() - float(sys.argv[1]))" "$t0"
}
pings=(); deploys=()
for _ in $(seq "$runs"); do
  t=$(secs ansible all -i "$inv" -m ansible.builtin.ping) || exit 1; pings+=("$t")
  t=$(secs ansible-playbook playbooks/deploy.yml -i "$inv") || exit 1; deploys+=("$t")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(median "${pings[@]}"); d=$(median "${deploys[@]}")
ratio=$(python -c "import sys; print(float(sys.argv[1]) / float(sys.argv[2]))" "$d" "$p")
hosts=$(ansible-inventory -i "$inv" --list | python -c 'import json,sys; print(len(json.load(sys.stdin)["_meta"]["hostvars"]))')
printf 'hosts=%s ping=%.2fs noop_deploy=%.2fs ratio=%.2fx (median of %s)\n' "$hosts" "$p" "$d" "$ratio" "$runs"
mkdir -p bench/results
printf '%s\t%s\t%.2f\t%.2f\t%.2f\n' "$(date -u +%FT%TZ)" "$hosts" "$p" "$d" "$ratio" >> bench/results/noop_vs_ping.tsv
