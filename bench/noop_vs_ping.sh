#!/usr/bin/env bash
# Benchmark: wall time of a no-op re-run of deploy divided by `ansible all -m ping`, on the same
# sandbox hosts, measured in one run (the hosts share this machine's cores, so only ratios
# measured together mean anything).
#
#   bash bench/noop_vs_ping.sh [inventory ...]   (default: inventories/bench8 and inventories/bench24)
#
# Per inventory: boots its hosts, deploys once (not timed), then times RUNS (default 3) pings and
# RUNS no-op deploys alternately, prints the median of each and the ratio, and stops the hosts.
# Each result is appended to bench/results/noop_vs_ping.tsv with what the machine was doing (its
# cores, the 1-minute load average before and after, other sandbox guests running beside it);
# bench/docs_tables.py --write makes docs/speed.md's table from that file. PROFILE=1 adds one more
# no-op deploy with ansible.posix.profile_tasks, its output in bench/results/profile-<hosts>.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-3}
export ANSIBLE_CONFIG=$root/ansible.cfg PATH=$root/.venv/bin:$PATH
state=.sandbox-bench
results=bench/results/noop_vs_ping.tsv
header=$'date\thosts\tping_s\tnoop_deploy_s\tratio\truns\tforks\tcores\tload_before\tload_after\tother_guests'
(( $# )) || set -- inventories/bench8/gpus.ini inventories/bench24/gpus.ini

secs() {
  local t0 log; t0=$(date +%s.%N); log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then echo "bench: failed: $*" >&2; tail -20 "$log" >&2; rm -f "$log"; return 1; fi
  rm -f "$log"; python -c "import sys,time; print(time.time() - float(sys.argv[1]))" "$t0"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
load1() { cut -d' ' -f1 /proc/loadavg; }
# sandbox guests (systemd-nspawn machines) of other fleets running beside this one
guests() { pgrep -c -x systemd-nspawn || true; }

# purged: the next boot starts fresh hosts (a bench stopped mid-run would leave its run locks behind)
down() { python tests/sandbox/fleet.py down --purge --state-dir "$state" >/dev/null; }
trap down EXIT
mkdir -p bench/results
[[ -s $results ]] || printf '%s\n' "$header" >"$results"
summary=()
for inv in "$@"; do
  hosts=$(ansible-inventory -i "$inv" --list | python -c 'import json,sys; print(len(json.load(sys.stdin)["_meta"]["hostvars"]))')
  forks=$(ansible-config dump 2>/dev/null | sed -n 's/^DEFAULT_FORKS([^)]*) = //p')
  python tests/sandbox/fleet.py up -i "$inv" --state-dir "$state" >/dev/null
  ansible-playbook playbooks/deploy.yml -i "$inv" >/dev/null
  others=$(( $(guests) - hosts )); (( others >= 0 )) || others=0
  before=$(load1)
  pings=(); deploys=()
  for _ in $(seq "$runs"); do
    t=$(secs ansible all -i "$inv" -m ansible.builtin.ping) || exit 1; pings+=("$t")
    t=$(secs ansible-playbook playbooks/deploy.yml -i "$inv") || exit 1; deploys+=("$t")
  done
  after=$(load1)
  if [[ ${PROFILE:-0} == 1 ]]; then
    ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks ANSIBLE_NOCOLOR=1 \
      ansible-playbook playbooks/deploy.yml -i "$inv" >"bench/results/profile-$hosts.txt" 2>&1 || true
  fi
  down
  p=$(median "${pings[@]}"); d=$(median "${deploys[@]}")
  ratio=$(python -c "import sys; print(float(sys.argv[1]) / float(sys.argv[2]))" "$d" "$p")
  line=$(printf 'hosts=%s ping=%.2fs noop_deploy=%.2fs ratio=%.2fx (median of %s, forks %s, load %s -> %s on %s cores, %s other guests)' \
    "$hosts" "$p" "$d" "$ratio" "$runs" "$forks" "$before" "$after" "$(nproc)" "$others")
  echo "$line"; summary+=("$line")
  printf '%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$hosts" "$p" "$d" "$ratio" \
    "$runs" "$forks" "$(nproc)" "$before" "$after" "$others" >>"$results"
done
(( ${#summary[@]} > 1 )) && printf '%s\n' "${summary[@]}"
true
