#!/usr/bin/env bash
# Benchmark: wall time of upgrade.yml per upgraded host against fleet size.
#
#   bash bench/upgrade_per_host.sh            (SIZES="2 4" replicas by default, RUNS=1)
#
# For each size N: boots N SGLang replicas and a router (regular mode) on 198.18.9.0/24 with their
# own state dir, deploys tests/e2e/cards/upgrade-v1.json (not timed), then times upgrade.yml to
# upgrade-v2.json and back (each moves every replica, one per batch, with a 2 s drain) while
# bench/upgrade_load.py sends completions through the router, and prints seconds per host and the
# requests that failed. Results are appended to bench/results/upgrade_per_host.tsv (date, replicas,
# card, seconds, seconds per host, requests ok, requests failed, 1-minute load average before). The
# hosts share this machine's cores: compare sizes measured in one run, not absolute times across machines.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export ANSIBLE_CONFIG=$root/ansible.cfg PATH=$root/.venv/bin:$PATH
state=.sandbox-bench-upgrade
inv_dir=inventories/.bench-upgrade
load_pid=
cleanup() {
  if [ -n "$load_pid" ]; then kill "$load_pid" 2>/dev/null || true; fi
  python tests/sandbox/fleet.py down --state-dir "$state" >/dev/null 2>&1 || true; rm -rf "$inv_dir"
}
trap cleanup EXIT
secs() {
  local t0 log; t0=$(date +%s.%N); log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then echo "bench: failed: $*" >&2; tail -30 "$log" >&2; rm -f "$log"; return 1; fi
  rm -f "$log"; python -c "import sys,time; print(time.time() - float(sys.argv[1]))" "$t0"
}
mkdir -p bench/results "$inv_dir/group_vars"
sed "s|\.sandbox-upgrade/|$state/|" inventories/upgrade/group_vars/launchcard_fleet.yml > "$inv_dir/group_vars/launchcard_fleet.yml"
cp inventories/upgrade/group_vars/all.yml "$inv_dir/group_vars/all.yml"
for n in ${SIZES:-2 4}; do
  {
    echo "[sglang_replicas]"
    for i in $(seq "$n"); do
      echo "lc-ub-w$i ansible_host=198.18.9.$((10 + i)) sandbox_gpus=1 sandbox_gpu_model=\"NVIDIA B200\" sandbox_gpu_memory_mib=183359"
    done
    echo "[sglang_router]"; echo "lc-ub-router ansible_host=198.18.9.20 sandbox_gpus=0"
    echo "[sglang_replicas:vars]"; echo 'launchcard_recipes=["sglang-aggregated"]'
    echo "[sglang_router:vars]"; echo 'launchcard_recipes=["sglang-router"]'
    echo "[launchcard_fleet:children]"; echo sglang_replicas; echo sglang_router
  } > "$inv_dir/gpus.ini"
  python tests/sandbox/fleet.py up -i "$inv_dir/gpus.ini" --state-dir "$state" >/dev/null
  ansible-playbook playbooks/deploy.yml -i "$inv_dir/gpus.ini" >/dev/null
  for card in upgrade-v2 upgrade-v1; do
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    load_out=$(mktemp)
    python bench/upgrade_load.py http://198.18.9.20:30080 launchcard-test/Upgrade-Tiny >"$load_out" &
    load_pid=$!
    sleep 2
    t=$(secs ansible-playbook playbooks/upgrade.yml -i "$inv_dir/gpus.ini" -e launchcard_upgrade_drain_s=2 \
        -e "launchcard_card_src=$root/tests/e2e/cards/$card.json") || exit 1
    sleep 2
    kill "$load_pid"; wait "$load_pid" || true; load_pid=
    read -r ok failed < <(sed -E 's/ok=([0-9]+) failed=([0-9]+)/\1 \2/' "$load_out"); rm -f "$load_out"
    per=$(python -c "import sys; print(float(sys.argv[1]) / int(sys.argv[2]))" "$t" "$n")
    printf 'replicas=%s to=%s upgrade=%.1fs per_host=%.1fs requests ok=%s failed=%s (load %s)\n' \
      "$n" "$card" "$t" "$per" "$ok" "$failed" "$load_before"
    printf '%s\t%s\t%s\t%.1f\t%.1f\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$n" "$card" "$t" "$per" "$ok" "$failed" \
      "$load_before" >> bench/results/upgrade_per_host.tsv
  done
  python tests/sandbox/fleet.py down --state-dir "$state" >/dev/null
done
