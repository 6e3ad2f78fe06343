# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/units/tasks/converge.yml run by ansible-playbook on three local hosts whose converge is settled (the
systemd_units action plugin returns each host's reading on the controller, as on a no-op deploy): the second gate
stage is skipped, units_summary prints one table for the fleet, and only the host whose gate found an unhealthy
endpoint is stopped, with its gate's message. No host is contacted."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
INVENTORY = "[fleet]\nh1\nh2\nh3\n\n[fleet:vars]\nansible_connection=local\nansible_python_interpreter=%s\n" % sys.executable


def instance(host, port):
    unit = "launchcard-c-vllm-aggregated-%s.service" % host
    return {"unit": unit, "recipe": "vllm-aggregated", "engine": "vllm", "role": "aggregated", "port": port,
            "host": host, "address": "127.0.0.1", "health_url": "http://127.0.0.1:%d/health" % port, "probe": "health",
            "served_model": "m", "argv": []}


PLAN = {"hosts": dict((h, {"card": "c.json", "instances": [instance(h, 8000 + i)]}) for i, h in enumerate(("h1", "h2", "h3")))}


def settled(host, healthy, then_gated=None):
    unit = PLAN["hosts"][host]["instances"][0]["unit"]
    return {"settled": True, "changed": False, "units": [{"name": unit, "active_state": "active"}], "written": [],
            "removed": [], "health": {"endpoints": [{"name": unit, "healthy": healthy, "detail": "ok" if healthy else "engine exited"}],
                                      "unhealthy": [] if healthy else [unit], "then_gated": then_gated,
                                      "msg": "" if healthy else "%s: engine exited" % unit}}


def run(tmp_path, *extra, then_gated=None):
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    book = [{"hosts": "fleet", "gather_facts": False, "tasks": [
        {"name": "The plan", "ansible.builtin.set_fact": {"launchcard_plan": PLAN}, "run_once": True},
        {"name": "The units role's converge", "ansible.builtin.import_role": {
            "name": "launchcard.inference.units", "tasks_from": "converge", "rolespec_validate": False},
         "vars": {"units_settled_result": "{{ settled[inventory_hostname] }}", "units_summary_notes": ["a note"]}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(book))
    (tmp_path / "settled.json").write_text(json.dumps({"settled": dict((h, settled(h, h != "h2", then_gated)) for h in PLAN["hosts"])}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_DISPLAY_SKIPPED_HOSTS="true")
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml"),
                           "-e", "@%s" % (tmp_path / "settled.json")] + list(extra),
                          env=env, capture_output=True, text=True, cwd=ROOT, check=False)


def test_one_summary_for_the_fleet_then_only_the_unhealthy_host_stops(tmp_path):
    # then_gated null: the converge call found no endpoint for the second stage (skipped by the task's condition);
    # false: its action plugin finds none on the host and skips it
    for extra, then_gated in (((), None), (("--check", "--diff"), None), ((), False)):
        res = run(tmp_path, *extra, then_gated=then_gated)
        assert res.returncode == 2, res.stdout[-3000:] + res.stderr[-2000:]
        out = res.stdout
        recap = dict((m.group(1), (int(m.group(2)), int(m.group(3)), int(m.group(4))))
                     for m in re.finditer(r"^(\S+)\s*: ok=(\d+)\s+changed=\d+\s+unreachable=\d+\s+failed=(\d+)\s+skipped=(\d+)", out, re.M))
        # per host: the converge (settled), the second stage (skipped), the stop; the plan and summary once, on h1
        assert recap == {"h1": (3, 0, 2), "h2": (1, 1, 1), "h3": (1, 0, 2)}, (extra, recap)
        summary = out.split("Units | Summary of every planned instance]", 1)[1].split("\nTASK [", 1)[0]
        assert summary.count("ok: [") == 1 and "msg: |-" in summary
        # the hosts whose gate failed, in the summary's result (what the stop reads)
        assert yaml.safe_load(summary.split("=>", 1)[1])["failures"] == {"h2": "launchcard-c-vllm-aggregated-h2.service: engine exited"}
        table = yaml.safe_load(summary.split("=>", 1)[1])["msg"].splitlines()
        rows = dict((line.split()[0], line.split(None, 5)[5]) for line in table[2:table.index("")])
        assert rows == {"h1": "healthy", "h2": "unhealthy: engine exited", "h3": "healthy"}, table
        assert table[-3:] == ["", "3 instances on 3 hosts: 1 unhealthy, 2 healthy", "a note"]
        stop = out.split("Units | Stop the hosts whose endpoints are not healthy]", 1)[1].split("\nPLAY RECAP", 1)[0]
        assert re.findall(r"^fatal: \[(\S+)\]", stop, re.M) == ["h2"]
        assert "launchcard-c-vllm-aggregated-h2.service: engine exited" in stop
        assert "skipping: [h1]" in stop and "skipping: [h3]" in stop
        # the second stage: every host skipped on the controller's decision (the converge found no endpoint for it)
        second = out.split("Gate on the health of the endpoints that answer through their peers]", 1)[1].split("\nTASK [", 1)[0]
        assert sorted(re.findall(r"^skipping: \[(\S+)\]", second, re.M)) == ["h1", "h2", "h3"]
