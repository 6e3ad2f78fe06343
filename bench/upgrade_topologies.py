#!/usr/bin/env python
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: an upgrade under load for each topology of the example card (issue 26, item 5).

    python bench/upgrade_topologies.py [CASE ...]     (every case of CASES by default; make bench-upgrade)

Boots one sandbox fleet on 198.18.19.0/24 (state dir .sandbox-bench-topologies) holding every case's hosts, then
per case, on an inventory of that case's hosts only: deploys cards/glm-5.3-flash.json (not timed), runs
upgrade.yml in check mode to a copy of the card with one env value of the case's recipe changed (its outage lines
are recorded), then runs it for real (with launchcard_upgrade_allow_outage=true only when check mode named an
outage) while bench/upgrade_load.py sends completions to the entry point users hit (the router, or the instance
itself when there is none) and the serving endpoints' /health is sampled every 0.5 s. Appends one line per case to
bench/results/upgrade_topologies.tsv (COLUMNS, no header) and prints it. Every engine is the sandbox's stand-in
(native runtime), the vLLM one included. The fleet is taken down at the end, also on error (BENCH_KEEP_FLEET=1
leaves it up for another run; then `python tests/sandbox/fleet.py down --state-dir .sandbox-bench-topologies`).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARD = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
RESULTS = os.path.join(ROOT, "bench", "results", "upgrade_topologies.tsv")
SUBNET = "198.18.19"
STATE = ".sandbox-bench-topologies"
INVENTORIES = os.path.join("inventories", ".bench-topologies")
COLUMNS = ["date", "commit", "case", "hosts", "ok", "failed", "min_capacity", "s_per_host", "outage_allowed",
           "load_before", "outages"]
B200 = 'sandbox_gpu_model="NVIDIA B200" sandbox_gpu_memory_mib=183359'
H100 = ""  # the sandbox's default GPU, 8 x H100 80GB, as inventories/sandbox gives the vLLM TP8 host
# the regular PD router instead of the card's --mini-lb: a worker API, so a decode can surge (docs/upgrades.md)
REGULAR_PD = {"sglang-router": {"remove": ["--mini-lb"]}}
ENV_KEY = "LAUNCHCARD_BENCH_GENERATION"
if os.path.join(ROOT, ".collections") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, ".collections"))  # the planner and card model, as bench/render_and_plan.py

# case, the recipe whose env changes, hosts: (name, last address byte, GPUs, GPU model, recipes); GPU counts as
# inventories/sandbox gives them, except pd-one-host: the card's own layout (prefill, decode, router on one 8-GPU host)
CASES = [
    ("vllm-tp8", "vllm-aggregated", [("lc-bt-vllm", 11, 8, H100, ["vllm-aggregated"])]),
    ("sglang-encoder-language", "sglang-language", [
        ("lc-bt-encoder", 12, 4, B200, ["sglang-encoder"]),
        ("lc-bt-language", 13, 4, B200, ["sglang-language"])]),
    ("sglang-context-parallel", "sglang-aggregated", [("lc-bt-cp", 14, 4, B200, ["sglang-aggregated"])]),
    ("pd-three-hosts", "sglang-decode", [
        ("lc-bt-prefill", 15, 2, B200, ["sglang-prefill"]),
        ("lc-bt-decode", 16, 2, B200, ["sglang-decode"]),
        ("lc-bt-router", 17, 0, B200, ["sglang-router"])]),
    ("pd-one-host", "sglang-decode", [
        ("lc-bt-pd", 18, 8, B200, ["sglang-prefill", "sglang-decode", "sglang-router"])]),
]


def inventory_text(hosts):
    """gpus.ini for ``hosts`` (CASES' host tuples): one group per host, named after it."""
    lines = []
    for name, byte, gpus, model, recipes in hosts:
        group = name.replace("-", "_")
        lines += ["[%s]" % group, " ".join(x for x in ("%s ansible_host=%s.%d sandbox_gpus=%d" % (
            name, SUBNET, byte, gpus), model if gpus else "") if x), "[%s:vars]" % group,
            "launchcard_recipes=%s" % json.dumps(recipes), ""]
    lines += ["[launchcard_fleet:children]"] + [h[0].replace("-", "_") for h in hosts]
    return "\n".join(lines) + "\n"


def group_vars(root, state):
    """group_vars/all.yml (JSON is YAML) for every case's inventory, paths absolute."""
    return {
        "launchcard_card_src": CARD,
        "launchcard_argv_overrides": REGULAR_PD,
        "launchcard_runtime": "native",
        "launchcard_runtime_native_packages": ["launchcard-standin-engine", "sglang-router"],
        "launchcard_runtime_native_pip_extra_args": "--no-index --find-links /srv/launchcard-wheels",
        "launchcard_weights_dir": "/var/lib/launchcard/models",
        "launchcard_hf_endpoint": "http://%s.1:8470" % SUBNET,
        "launchcard_install_accelerator_stack": False,
        "ansible_user": "root",
        "ansible_ssh_private_key_file": os.path.join(root, state, "ssh", "id_ed25519"),
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        "ansible_python_interpreter": "/usr/bin/python3",
    }


def write_inventory(directory, hosts):
    os.makedirs(os.path.join(directory, "group_vars"), exist_ok=True)
    with open(os.path.join(directory, "gpus.ini"), "w") as f:
        f.write(inventory_text(hosts))
    with open(os.path.join(directory, "group_vars", "all.yml"), "w") as f:
        json.dump(group_vars(ROOT, STATE), f, indent=1)
    return os.path.join(directory, "gpus.ini")


def changed_card(doc, recipe, value="2"):
    """A copy of card ``doc`` with env ``ENV_KEY`` of the env whose recipe name is ``recipe`` set to ``value``."""
    doc = json.loads(json.dumps(doc))
    names = recipe_names(doc)
    doc["envs"][names.index(recipe)].setdefault("env", {})[ENV_KEY] = value
    return doc


def recipe_names(doc):
    from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
    return [r["name"] for r in load_card(json.dumps(doc).encode(), source=CARD)["recipes"]]


def case_plan(hosts):
    """The planner's instances for a case's hosts: what the entry point and the serving endpoints are."""
    from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
    from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
    with open(CARD, "rb") as f:
        card = load_card(f.read(), source=CARD)
    placement = normalize_placement([(name, {"address": "%s.%d" % (SUBNET, byte), "recipes": recipes, "gpus": gpus,
                                             "argv_overrides": REGULAR_PD})
                                     for name, byte, gpus, model, recipes in hosts])
    return [i for h in plan(card, placement)["hosts"].values() for i in h["instances"]]


def entry_point(instances, recipe):
    """The URL users hit: the router's, else the changed recipe's instance's; and the model name to ask for."""
    routers = [i for i in instances if i["role"] == "router"]
    entry = routers[0] if routers else next(i for i in instances if i["recipe"] == recipe)
    model = next(i["served_model"] for i in instances if i.get("served_model"))
    return entry["url"], model


def capacity(healthy):
    """Serving capacity of one sample: ``{role: healthy endpoints}`` -> the fewest of any role (a request needs one
    of each: a prefill and a decode, an encoder and a language server)."""
    return min(healthy.values()) if healthy else 0


def min_fraction(samples):
    """Minimum capacity over a run's samples as a fraction of the first sample's (taken before the upgrade)."""
    if not samples or samples[0] == 0:
        return 0.0
    return round(min(samples) / float(samples[0]), 2)


def tsv_line(row):
    """One line of bench/results/upgrade_topologies.tsv: ``row``'s COLUMNS, tabs and newlines in text made spaces."""
    return "\t".join(" ".join(str(row[c]).split()) for c in COLUMNS)


def rollout_lines(out):
    """The lines of the rollout report upgrade.yml prints (its ``Upgrade | The rollout`` task; results as YAML)."""
    m = re.search(r"^TASK \[Upgrade \| The rollout\].*\n(?:.*\n)*?ok: \[[^\]]+\] => *\n((?:[ \t]+.*\n?)*)", out, re.M)
    return yaml.safe_load(m.group(1))["msg"] if m else []


def outage_lines(lines):
    """The rollout's outage lines (``outage: host: unit (batch N): why``)."""
    return [line for line in lines if line.startswith("outage: ")]


def batch_hosts(lines):
    """The hosts the rollout moves, from its ``batch N (tier): host, host`` lines."""
    found = []
    for line in lines:
        m = re.match(r"batch \d+ \([^)]*\): (.+)$", line)
        found += [h.strip() for h in m.group(1).split(",") if h.strip() not in found] if m else []
    return found


def _get(url, timeout=2.0):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as resp:
        return resp.status, resp.read().decode()


def healthy_by_role(instances):
    """One sample: per role, the serving endpoints answering /health 200. Behind a router, its worker list (a
    surge's twin included), else the planned instances."""
    routers = [i for i in instances if i["role"] == "router"]
    endpoints = []
    if routers:
        try:
            status, body = _get(routers[0]["url"].rstrip("/") + "/workers")
            # a router on the workers' host lists them by loopback URLs; they listen on every address (--host 0.0.0.0)
            address = routers[0]["address"]
            endpoints = [(w.get("worker_type") or "regular",
                          re.sub(r"//(127\.0\.0\.1|localhost)([:/])", r"//%s\2" % address, w["url"]))
                         for w in json.loads(body)["workers"]]
        except (OSError, ValueError, KeyError):
            endpoints = []
        if not endpoints:
            return {"prefill": 0, "decode": 0} if any(i["role"] == "decode" for i in instances) else {"regular": 0}
    else:
        endpoints = [(i["role"], i["url"]) for i in instances if i.get("health_url")]
    healthy = {}
    for role, url in endpoints:
        try:
            ok = _get(url.rstrip("/") + "/health")[0] == 200
        except OSError:
            ok = False
        healthy[role] = healthy.get(role, 0) + (1 if ok else 0)
    return healthy


class Sampler(threading.Thread):
    def __init__(self, instances, every=0.5):
        super().__init__(daemon=True)
        self.instances, self.every, self.samples, self.stop = instances, every, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.samples.append(capacity(healthy_by_role(self.instances)))
            self.stop.wait(self.every)


def run(cmd, log):
    log.write("$ %s\n" % " ".join(cmd))
    log.flush()
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    log.write(p.stdout)
    if p.returncode:
        raise RuntimeError("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stdout[-3000:]))
    return p.stdout


def bench_case(name, recipe, hosts, log):
    inv = write_inventory(os.path.join(ROOT, INVENTORIES, name), hosts)
    instances = case_plan(hosts)
    url, model = entry_point(instances, recipe)
    with open(CARD) as f:
        new = changed_card(json.load(f), recipe)
    new_path = os.path.join(ROOT, INVENTORIES, name, "card-new.json")
    with open(new_path, "w") as f:
        json.dump(new, f, indent=1)
    run(["ansible-playbook", "playbooks/deploy.yml", "-i", inv], log)
    upgrade = ["ansible-playbook", "playbooks/upgrade.yml", "-i", inv, "-e", "launchcard_card_src=" + new_path,
               "-e", "launchcard_upgrade_drain_s=2"]
    checked = run(upgrade + ["--check"], log)
    report = rollout_lines(checked)
    outages, moved = outage_lines(report), batch_hosts(report)
    if outages:
        upgrade += ["-e", "launchcard_upgrade_allow_outage=true"]
    load_before = open("/proc/loadavg").read().split()[0]
    sampler = Sampler(instances)
    sampler.start()
    time.sleep(1.0)
    client = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "upgrade_load.py"), url, model],
                              stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        time.sleep(2.0)
        start = time.time()
        run(upgrade, log)
        wall = time.time() - start
        time.sleep(2.0)
    finally:
        client.send_signal(signal.SIGTERM)
        counts = dict(kv.split("=") for kv in client.communicate(timeout=60)[0].split())
        sampler.stop.set()
        sampler.join()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, check=False).stdout.strip()
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit, "case": name,
            "hosts": len(moved), "ok": counts["ok"], "failed": counts["failed"],
            "min_capacity": min_fraction(sampler.samples), "s_per_host": "%.1f" % (wall / max(len(moved), 1)),
            "outage_allowed": "yes" if outages else "no", "load_before": load_before,
            "outages": " | ".join(outages) or "none"}


def main(argv):
    wanted = argv[1:] or [c[0] for c in CASES]
    unknown = set(wanted) - {c[0] for c in CASES}
    if unknown:
        sys.exit("no such case: %s (cases: %s)" % (", ".join(sorted(unknown)), ", ".join(c[0] for c in CASES)))
    cases = [c for c in CASES if c[0] in wanted]
    os.environ["PATH"] = os.path.join(ROOT, ".venv", "bin") + os.pathsep + os.environ["PATH"]
    os.environ.setdefault("ANSIBLE_CONFIG", os.path.join(ROOT, "ansible.cfg"))
    # every case's hosts, whichever cases run: `fleet.py up` stops a booted host its inventory no longer names
    fleet = write_inventory(os.path.join(ROOT, INVENTORIES, "fleet"), [h for c in CASES for h in c[2]])
    fleet_py = [sys.executable, "tests/sandbox/fleet.py"]
    log_path = os.path.join(tempfile.gettempdir(), "bench-upgrade-topologies.log")
    print("bench: log in %s" % log_path)
    with open(log_path, "a") as log:
        try:
            run(fleet_py + ["up", "-i", fleet, "--state-dir", STATE], log)
            for name, recipe, hosts in cases:
                try:
                    row = bench_case(name, recipe, hosts, log)
                except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
                    print("bench: %s: %s" % (name, str(exc).splitlines()[0]), file=sys.stderr)
                    continue
                line = tsv_line(row)
                with open(RESULTS, "a") as f:
                    f.write(line + "\n")
                print(line, flush=True)
        finally:
            if os.environ.get("BENCH_KEEP_FLEET") != "1":  # "1": several runs on one boot; `fleet.py down` after them
                subprocess.run(fleet_py + ["down", "--state-dir", STATE], cwd=ROOT, stdout=log, stderr=log, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
