# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The systemd_units module in-process, against a fake ``systemctl``.

The fake ``systemctl`` (and ``systemd-analyze``) is a small Python script on
the fake host's PATH. It keeps every unit's state in a JSON file, answers
``systemctl show -p ... -- UNIT...`` the way systemd does (one ``Key=Value``
block per unit, blocks separated by an empty line; ``LoadState=not-found``
for a unit without a file), applies enable/disable/start/stop/restart to that
state, and logs every call with which of the named unit files existed at that
moment. The tests read the log to see exactly which verbs the module issued.
"""

from __future__ import annotations

import builtins
import http.server
import json
import os
import stat
import sys
import threading

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.modules import systemd_units

MUTATING = ("start", "stop", "restart", "enable", "disable", "daemon-reload", "reload", "kill", "mask", "unmask",
            "reset-failed", "try-restart", "reload-or-restart", "link", "preset", "revert", "set-property")

FAKE_SYSTEMCTL = r'''#!{python}
import json, os, sys
STATE, LOG, UNITS = {state!r}, {log!r}, {units!r}
args = sys.argv[1:]
with open(STATE) as f:
    state = json.load(f)
names = args[args.index("--") + 1:] if "--" in args else []
QUADLET = state.get("_quadlet")  # a Quadlet directory: NAME.container there gives the generated NAME.service
def generated(n):
    return bool(QUADLET) and n.endswith(".service") and os.path.exists(os.path.join(QUADLET, n[:-8] + ".container"))
def exists(n):
    return os.path.exists(os.path.join(UNITS, n)) or generated(n)
with open(LOG, "a") as f:
    f.write(json.dumps({{"argv": args, "files": {{n: exists(n) for n in names}},
                         "dir": sorted(os.listdir(UNITS)) if os.path.isdir(UNITS) else []}}) + "\n")
verb = args[0]
fail = state.get("_fail", {{}})
if verb in fail:
    sys.stderr.write(fail[verb] + "\n")
    sys.exit(1)
def unit(n):
    return state.setdefault(n, {{"active": "inactive", "sub": "dead", "file": "disabled", "restarts": 0}})
if verb == "show":
    blocks = []
    for n in names:
        if exists(n) or n in state:
            u = unit(n)
            load = "loaded" if exists(n) else "not-found"
            pid = 4200 + u.get("starts", 0) if u["active"] == "active" else 0
            blocks.append("Id=%s\nLoadState=%s\nActiveState=%s\nSubState=%s\nUnitFileState=%s\nNRestarts=%d\nExecMainPID=%d"
                          "\nInvocationID=%s\nMainPID=%d"
                          % (n, load, u["active"], u["sub"], ("generated" if generated(n) else u["file"])
                             if load == "loaded" else "", u["restarts"],
                             pid, "inv%d" % u["starts"] if u.get("starts") else "", pid))
        else:
            blocks.append("Id=%s\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nUnitFileState=\n"
                          "NRestarts=0\nExecMainPID=0" % n)
    sys.stdout.write("\n\n".join(blocks) + "\n")
elif verb in ("start", "restart"):
    for n in names:
        if not exists(n):
            sys.stderr.write("Failed to %s %s: Unit %s not found.\n" % (verb, n, n))
            sys.exit(5)
        u = unit(n)
        u["starts"] = u.get("starts", 0) + 1  # a new InvocationID and MainPID per start
        u["active"], u["sub"] = ("failed", "failed") if n in state.get("_crash", []) else ("active", "running")
elif verb == "stop":
    for n in names:
        u = unit(n)
        # _stop_fails: the unit's main process exits non-zero on the stop (podman's 127), the unit ends failed
        u["active"], u["sub"] = ("failed", "failed") if n in state.get("_stop_fails", []) else ("inactive", "dead")
elif verb == "reset-failed":
    for n in names:
        if not exists(n) and n not in state:
            sys.stderr.write("Failed to reset failed state of unit %s: Unit %s not loaded.\n" % (n, n))
            sys.exit(1)
        u = unit(n)
        if u["active"] == "failed":
            u["active"], u["sub"] = "inactive", "dead"
elif verb in ("enable", "disable") and any(generated(n) for n in names):
    sys.stderr.write("Failed to %s unit: Unit is transient or generated.\n" % verb)
    sys.exit(1)
elif verb == "enable":
    for n in names:
        unit(n)["file"] = "enabled"
elif verb == "disable":
    for n in names:
        unit(n)["file"] = "disabled"
with open(STATE, "w") as f:
    json.dump(state, f)
'''

FAKE_ANALYZE = r'''#!{python}
import json, sys
with open({log!r}, "a") as f:
    f.write(json.dumps({{"argv": ["systemd-analyze"] + sys.argv[1:],
                         "contents": [open(p).read() for p in sys.argv[2:]]}}) + "\n")
for p in sys.argv[2:]:
    if "BadDirective" in open(p).read():
        sys.stderr.write("%s:3: Unknown key name 'BadDirective' in section 'Service', ignoring.\n" % p)
        sys.exit(1)
'''


def unit_text(cmd, description="demo"):
    return "[Unit]\nDescription=%s\n\n[Service]\nExecStart=%s\n\n[Install]\nWantedBy=multi-user.target\n" % (
        description, cmd)


class Systemd(object):
    """A fake systemd: a unit directory, a state file and a call log."""

    def __init__(self, host):
        tmp = host["tmp"]
        self.units = str(tmp / "etc-systemd-system")
        os.mkdir(self.units)
        self.state_path = str(tmp / "systemd-state.json")
        self.log_path = str(tmp / "systemctl.log")
        self.secrets = str(tmp / "etc" / "launchcard" / "secrets.env")
        self.save({})
        open(self.log_path, "w").close()
        for name, text in (("systemctl", FAKE_SYSTEMCTL), ("systemd-analyze", FAKE_ANALYZE)):
            path = os.path.join(host["bin"], name)
            with open(path, "w") as f:
                f.write(text.format(python=sys.executable, state=self.state_path, log=self.log_path, units=self.units))
            os.chmod(path, 0o755)

    def save(self, state):
        with open(self.state_path, "w") as f:
            json.dump(state, f)

    def state(self):
        with open(self.state_path) as f:
            return json.load(f)

    def running(self, *names):
        """Mark units as enabled and running (as after an earlier deploy)."""
        state = self.state()
        for n in names:
            state[n] = {"active": "active", "sub": "running", "file": "enabled", "restarts": 0}
        self.save(state)

    def put(self, name, text):
        with open(os.path.join(self.units, name), "w") as f:
            f.write(text)

    def calls(self):
        with open(self.log_path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def systemctl(self):
        return [c for c in self.calls() if c["argv"][0] != "systemd-analyze"]

    def mutating(self):
        return [c["argv"] for c in self.systemctl() if c["argv"][0] in MUTATING]

    def reset_log(self):
        open(self.log_path, "w").close()

    def listing(self):
        return sorted(os.listdir(self.units))


def run_module(capsys, systemd, units, rc=0, **args):
    args.setdefault("directory", systemd.units)
    args.setdefault("secrets_file", systemd.secrets)
    args["units"] = [{"name": n, "content": c} for n, c in units]
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            systemd_units.main()
    out = capsys.readouterr().out
    result = json.loads(out)
    assert info.value.code == rc, result
    return result, out


A = "launchcard-demo-vllm-aggregated-0.service"
B = "launchcard-demo-sglang-router-0.service"
OLD = "launchcard-old-sglang-decode-0.service"
FOREIGN = "nginx.service"


def test_first_run_writes_enables_and_starts(systemd, capsys):
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))])
    assert result["changed"] is True
    assert result["written"] == [B, A]
    assert result["daemon_reloaded"] is True
    assert systemd.mutating() == [["daemon-reload"], ["enable", "--", B, A], ["reset-failed", "--", B, A], ["start", "--no-block", "--", B, A]]
    # daemon-reload ran after both files were on disk, with their final content
    reload_call = [c for c in systemd.systemctl() if c["argv"] == ["daemon-reload"]][0]
    assert reload_call["dir"] == [B, A]
    with open(os.path.join(systemd.units, A)) as f:
        assert f.read() == unit_text("/bin/a")
    assert stat.S_IMODE(os.stat(os.path.join(systemd.units, A)).st_mode) == 0o644
    assert [(u["name"], u["active_state"], u["unit_file_state"]) for u in result["units"]] == [
        (B, "active", "enabled"), (A, "active", "enabled")]
    # verify saw both would-be files before anything was written
    analyze = [c for c in systemd.calls() if c["argv"][0] == "systemd-analyze"]
    assert len(analyze) == 1 and analyze[0]["argv"][1] == "verify"
    assert sorted(analyze[0]["contents"]) == sorted([unit_text("/bin/a"), unit_text("/bin/b")])
    assert systemd.calls().index(analyze[0]) < systemd.calls().index(reload_call)


def test_prune_stops_disables_and_deletes_a_stale_unit_and_leaves_foreign_units_alone(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.put(OLD, unit_text("/bin/old"))
    systemd.put(FOREIGN, unit_text("/usr/sbin/nginx"))
    systemd.running(A, OLD, FOREIGN)

    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))])

    assert result["changed"] is True
    assert result["removed"] == [OLD]
    assert result["written"] == []
    assert result["actions"]["stop"] == [OLD] and result["actions"]["disable"] == [OLD]
    assert systemd.listing() == [A, FOREIGN]
    mutating = systemd.mutating()
    assert mutating == [["stop", "--", OLD], ["disable", "--", OLD], ["daemon-reload"], ["reset-failed", "--", OLD]]
    calls = systemd.systemctl()
    by_verb = dict((c["argv"][0], c) for c in calls if c["argv"][0] in MUTATING)
    # stopped and disabled while its file still existed, reloaded once it was gone
    assert by_verb["stop"]["files"] == {OLD: True}
    assert by_verb["disable"]["files"] == {OLD: True}
    assert OLD not in by_verb["daemon-reload"]["dir"]
    # the foreign unit is never named in any call, and keeps running
    assert not [c for c in calls if FOREIGN in c["argv"]]
    assert systemd.state()[FOREIGN]["active"] == "active"
    assert systemd.state()[OLD] == {"active": "inactive", "sub": "dead", "file": "disabled", "restarts": 0}
    # the kept unit was neither restarted nor touched
    assert not [c for c in calls if A in c["argv"] and c["argv"][0] != "show"]


def test_prune_false_keeps_stale_units(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.put(OLD, unit_text("/bin/old"))
    systemd.running(A, OLD)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], prune=False)
    assert result["changed"] is False
    assert result["removed"] == []
    assert systemd.listing() == [A, OLD]
    assert systemd.mutating() == []


def test_a_changed_file_restarts_exactly_its_unit(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.put(B, unit_text("/bin/b"))
    systemd.running(A, B)

    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a --new-flag")), (B, unit_text("/bin/b"))])

    assert result["changed"] is True
    assert result["written"] == [A]
    assert result["actions"] == {"enable": [], "disable": [], "start": [], "restart": [A], "stop": []}
    assert systemd.mutating() == [["daemon-reload"], ["reset-failed", "--", A], ["restart", "--no-block", "--", A]]
    assert not [c for c in systemd.systemctl() if B in c["argv"] and c["argv"][0] != "show"]
    with open(os.path.join(systemd.units, A)) as f:
        assert f.read() == unit_text("/bin/a --new-flag")


def test_an_unchanged_run_changes_nothing(systemd, capsys):
    units = [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))]
    first, dummy = run_module(capsys, systemd, units, secrets={"HF_TOKEN": "hf_idempotent"})
    assert first["changed"] is True
    mtimes = dict((n, os.stat(os.path.join(systemd.units, n)).st_mtime_ns) for n in systemd.listing())
    secrets_mtime = os.stat(systemd.secrets).st_mtime_ns
    systemd.reset_log()

    second, dummy = run_module(capsys, systemd, units, secrets={"HF_TOKEN": "hf_idempotent"})

    assert second["changed"] is False
    assert second["written"] == [] and second["removed"] == []
    assert second["daemon_reloaded"] is False and second["secrets_changed"] is False
    assert all(v == [] for v in second["actions"].values())
    assert systemd.mutating() == []
    # one read of the units' states: a call that acted on nothing reports the states it read before
    assert [c["argv"][0] for c in systemd.calls()] == ["show"]
    assert dict((n, os.stat(os.path.join(systemd.units, n)).st_mtime_ns) for n in systemd.listing()) == mtimes
    assert os.stat(systemd.secrets).st_mtime_ns == secrets_mtime


def test_a_call_that_restarts_a_unit_reads_the_states_again(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.running(A)
    systemd.reset_log()

    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a --changed"))])

    assert result["actions"]["restart"] == [A]
    verbs = [c["argv"][0] for c in systemd.calls()]
    # the states it reports are read again after the restart was queued, not the ones read before it
    shows = [i for i, verb in enumerate(verbs) if verb == "show"]
    assert len(shows) == 2 and shows[-1] > verbs.index("restart")


def test_a_stopped_unit_is_started_not_restarted(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.running(A)
    state = systemd.state()
    state[A]["active"], state[A]["sub"] = "failed", "failed"
    systemd.save(state)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))])
    assert result["changed"] is True
    assert systemd.mutating() == [["reset-failed", "--", A], ["start", "--no-block", "--", A]]


def test_check_mode_reports_without_mutating_anything(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.put(OLD, unit_text("/bin/old"))
    systemd.running(A, OLD)
    before_state = systemd.state()
    before_files = dict((n, open(os.path.join(systemd.units, n)).read()) for n in systemd.listing())

    result, out = run_module(capsys, systemd, [(A, unit_text("/bin/a --changed")), (B, unit_text("/bin/b"))],
                             secrets={"HF_TOKEN": "hf_checkmodesecret"}, _ansible_check_mode=True, _ansible_diff=True)

    assert result["changed"] is True
    assert result["written"] == [B, A]
    assert result["removed"] == [OLD]
    assert result["actions"] == {"enable": [B], "disable": [OLD], "start": [B], "restart": [A], "stop": [OLD]}
    assert result["daemon_reloaded"] is False
    assert result["secrets_changed"] is True
    # no mutating verb, only reads
    assert systemd.mutating() == []
    assert set(c["argv"][0] for c in systemd.calls()) <= {"show", "systemd-analyze"}
    assert systemd.state() == before_state
    assert dict((n, open(os.path.join(systemd.units, n)).read()) for n in systemd.listing()) == before_files
    assert not os.path.exists(os.path.dirname(systemd.secrets))
    # the diff shows each file's change, headed by its path
    diffs = dict((d["after_header"], d) for d in result["diff"])
    assert diffs[os.path.join(systemd.units, A)]["before"] == unit_text("/bin/a")
    assert diffs[os.path.join(systemd.units, A)]["after"] == unit_text("/bin/a --changed")
    assert diffs[os.path.join(systemd.units, B)]["before_header"] == "(absent)"
    assert diffs["(removed)"]["before_header"] == os.path.join(systemd.units, OLD)
    assert "hf_checkmodesecret" not in out


def test_stopped_state_stops_and_disables(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.running(A)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], state="stopped")
    assert result["changed"] is True
    assert systemd.mutating() == [["stop", "--", A], ["disable", "--", A]]
    assert systemd.listing() == [A]


def test_verify_rejection_writes_nothing(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.running(A)
    bad = unit_text("/bin/a") + "BadDirective=1\n"
    result, dummy = run_module(capsys, systemd, [(A, bad), (B, unit_text("/bin/b"))], rc=1)
    assert result["failed"] is True
    assert "systemd-analyze verify rejected" in result["msg"] and "nothing was changed" in result["msg"]
    assert "Unknown key name 'BadDirective'" in result["msg"]
    assert systemd.listing() == [A]
    with open(os.path.join(systemd.units, A)) as f:
        assert f.read() == unit_text("/bin/a")
    assert systemd.mutating() == []


def test_a_unit_that_does_not_come_up_fails_the_module(systemd, capsys):
    state = systemd.state()
    state["_crash"] = [B]
    systemd.save(state)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))], rc=1)
    assert result["failed"] is True
    assert result["msg"].startswith("units failed at start: %s " % B)
    assert A not in result["msg"]


@pytest.mark.parametrize("name", ["../launchcard-x.service", "other-x.service", "launchcard-x.socket"])
def test_a_bad_unit_name_is_refused_before_any_call(systemd, capsys, name):
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a")), (name, unit_text("/bin/x"))], rc=1)
    assert result["msg"].startswith("units[1].name: expected launchcard-*.service")
    assert systemd.calls() == []
    assert systemd.listing() == []


class _Watched(object):
    """A file object that records the file's mode at each write."""

    def __init__(self, handle, seen):
        self._handle, self._seen = handle, seen

    def write(self, data):
        self._seen.append((self._handle.name if isinstance(self._handle.name, str) else None,
                           stat.S_IMODE(os.fstat(self._handle.fileno()).st_mode), data))
        return self._handle.write(data)

    def __enter__(self):
        self._handle.__enter__()
        return self

    def __exit__(self, *exc):
        return self._handle.__exit__(*exc)

    def __getattr__(self, attr):
        return getattr(self._handle, attr)


def test_secrets_file_is_0600_from_its_first_byte_and_never_printed(systemd, capsys, monkeypatch):
    token = "hf_s3cr3tT0kenValue"
    seen = []
    real_open, real_fdopen = builtins.open, os.fdopen
    # A permissive umask: a file created without an explicit mode would be 0666.
    old_umask = os.umask(0)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(os, "fdopen", lambda *a, **k: _Watched(real_fdopen(*a, **k), seen))
            patch.setattr(builtins, "open", lambda *a, **k: _Watched(real_open(*a, **k), seen)
                          if (len(a) > 1 and "w" in a[1]) or "w" in k.get("mode", "") else real_open(*a, **k))
            result, out = run_module(capsys, systemd, [(A, unit_text("/bin/a"))],
                                     secrets={"HF_TOKEN": token}, _ansible_diff=True)
    finally:
        os.umask(old_umask)

    secret_writes = [(mode, data) for dummy, mode, data in seen if token in data]
    assert secret_writes, "the secret was never written through a watched file object"
    assert [mode for mode, dummy in secret_writes] == [0o600] * len(secret_writes)
    assert stat.S_IMODE(os.stat(systemd.secrets).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(systemd.secrets)).st_mode) == 0o700
    with open(systemd.secrets) as f:
        assert f.read() == "HF_TOKEN=%s\n" % token
    assert result["secrets_changed"] is True
    # never in the module's output (result, diff, invocation), the unit files or any systemctl call
    assert token not in out
    assert "diff" in result
    for name in systemd.listing():
        with open(os.path.join(systemd.units, name)) as f:
            assert token not in f.read()
    assert token not in json.dumps(systemd.calls())


def test_a_readable_secrets_file_is_tightened_and_removed_only_when_asked(systemd, capsys):
    os.makedirs(os.path.dirname(systemd.secrets))
    with open(systemd.secrets, "w") as f:
        f.write("HF_TOKEN=hf_same\n")
    os.chmod(systemd.secrets, 0o644)
    result, out = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], secrets={"HF_TOKEN": "hf_same"})
    assert result["secrets_changed"] is True
    assert stat.S_IMODE(os.stat(systemd.secrets).st_mode) == 0o600
    assert "hf_same" not in out

    # a run without secrets (vault not loaded) leaves the file alone; only remove_secrets deletes it
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], secrets={})
    assert result["secrets_changed"] is False
    assert os.path.exists(systemd.secrets)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], secrets={}, remove_secrets=True)
    assert result["secrets_changed"] is True
    assert not os.path.exists(systemd.secrets)


def test_a_secret_that_needs_quoting_is_refused_without_echoing_it(systemd, capsys):
    result, out = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], rc=1,
                             secrets={"HF_TOKEN": "hf_with space"})
    assert result["msg"].startswith("secrets: secret HF_TOKEN holds whitespace")
    assert "hf_with space" not in out and "with space" not in out
    assert systemd.mutating() == []
    assert not os.path.exists(systemd.secrets)
    assert systemd.listing() == []


def test_queued_gives_what_each_started_or_restarted_unit_ran_before(systemd, capsys):
    # A ran (first start: invocation 1), B is new; A's file changes
    systemd.put(A, unit_text("/bin/a"))
    systemd.running(A)
    state = systemd.state()
    state[A]["starts"] = 1
    systemd.save(state)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a2")), (B, unit_text("/bin/b"))])
    assert result["actions"]["restart"] == [A] and result["actions"]["start"] == [B]
    assert result["queued"] == {A: {"verb": "restart", "invocation_id": "inv1", "main_pid": 4201},
                                B: {"verb": "start", "invocation_id": "", "main_pid": 0}}
    # the gate's reading afterwards: a different invocation, active
    assert systemd.state()[A]["starts"] == 2


def test_restart_option_restarts_an_unchanged_unit_and_queues_it(systemd, capsys):
    systemd.put(A, unit_text("/bin/a"))
    systemd.put(B, unit_text("/bin/b"))
    systemd.running(A, B)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))], restart=[A])
    assert result["changed"] is True and result["written"] == []
    assert systemd.mutating() == [["reset-failed", "--", A], ["restart", "--no-block", "--", A]]
    assert list(result["queued"]) == [A] and result["queued"][A]["verb"] == "restart"
    # without it, nothing happens
    systemd.reset_log()
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))])
    assert result["changed"] is False and result["queued"] == {} and systemd.mutating() == []


def test_restart_option_names_only_given_units(systemd, capsys):
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], rc=1, restart=[B])
    assert result["msg"] == "restart[0]: %r is not one of the units given" % B
    assert systemd.mutating() == [] and systemd.listing() == []


def test_check_mode_queues_nothing(systemd, capsys):
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], _ansible_check_mode=True)
    assert result["actions"]["start"] == [A] and result["queued"] == {}


# health: converge, then gate the converged units in the same call (real loopback servers answer /health as
# the engines do; the fake systemctl above gives a unit a new InvocationID and MainPID on each start).

def _server(status):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.server.probes += 1
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.probes = 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_restarted_unit_is_gated_on_its_new_process_in_the_same_call(systemd, servers, capsys):
    systemd.running(A)
    systemd.put(A, unit_text("/bin/old"))
    server, url = servers()
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/new"))],
                               health={"endpoints": [{"name": A, "unit": A, "url": url}], "timeout": 10, "interval": 0.1})
    assert result["actions"]["restart"] == [A]
    assert result["health"]["unhealthy"] == [] and result["health"]["msg"] == ""
    assert [(e["name"], e["healthy"]) for e in result["health"]["endpoints"]] == [(A, True)]
    assert server.probes >= 1
    # the gate read the unit's InvocationID after the restart: `previous` came from the converge's queued
    shows = [c["argv"] for c in systemd.systemctl() if c["argv"][0] == "show"]
    assert ["show", "-p", "Id,ActiveState,InvocationID,MainPID", "--", A] in shows, shows


def test_an_unhealthy_endpoint_does_not_fail_the_call_and_says_why(systemd, servers, capsys):
    dummy_server, url = servers(503)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))],
                               health={"endpoints": [{"name": "a", "url": url}], "timeout": 1, "interval": 0.2})
    assert result["changed"] is True
    assert result["health"]["unhealthy"] == ["a"]
    assert "a (health answered 503" in result["health"]["msg"]
    assert result["health"]["recorded"] is None


def test_check_mode_leaves_out_the_units_it_would_start(systemd, servers, capsys):
    systemd.running(B)
    systemd.put(B, unit_text("/bin/b"))
    server, url = servers()
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))],
                               _ansible_check_mode=True,
                               health={"endpoints": [{"name": A, "unit": A, "url": url}, {"name": B, "unit": B, "url": url}],
                                       "timeout": 10})
    assert result["actions"]["start"] == [A]
    assert [e["name"] for e in result["health"]["endpoints"]] == [B]
    assert systemd.mutating() == []


def test_a_wrong_health_option_is_named_and_nothing_is_changed(systemd, capsys):
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], rc=1,
                               health={"endpoints": [{"name": "a"}], "timeout": "soon"})
    assert result["msg"].startswith("health: ")
    assert "url" in result["msg"] and "timeout" in result["msg"]
    assert systemd.listing() == [] and systemd.mutating() == []


@pytest.mark.parametrize("status", [200, 503])
def test_the_record_is_written_only_when_every_endpoint_is_healthy(systemd, servers, capsys, tmp_path, status):
    dummy_server, url = servers(status)
    path = str(tmp_path / "state" / "state.json")
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], health={
        "endpoints": [{"name": "a", "url": url}], "timeout": 1, "interval": 0.2,
        "record": {"path": path, "directory": systemd.units, "card": {"key": "demo", "sha256": "0" * 64},
                   "runtime": {"kind": "native"}}})
    if status == 200:
        assert result["health"]["recorded"] is True
        with open(path) as f:
            record = state.parse(f.read())
        assert list(record["units"]) == [A]
    else:
        assert result["health"]["recorded"] is None
        assert not os.path.exists(path)
    # a second, unchanged run changes nothing, the record included
    if status == 200:
        again, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], health={
            "endpoints": [{"name": "a", "url": url}], "timeout": 1, "interval": 0.2,
            "record": {"path": path, "directory": systemd.units, "card": {"key": "demo", "sha256": "0" * 64},
                       "runtime": {"kind": "native"}}})
        assert again["changed"] is False and again["health"]["recorded"] is False
        assert json.loads(open(path).read()) == json.loads(state.dumps(record))


def test_check_mode_shows_a_record_that_would_change_as_the_only_diff(systemd, servers, capsys, tmp_path):
    """The units as they are, another card (deploy --check of it): changed, and --diff says it is the record."""
    dummy_server, url = servers(200)
    path = str(tmp_path / "state.json")

    def health(sha):
        return {"endpoints": [{"name": "a", "url": url}], "timeout": 1, "interval": 0.2,
                "record": {"path": path, "directory": systemd.units, "card": {"sha256": sha}, "runtime": {}}}
    run_module(capsys, systemd, [(A, unit_text("/bin/a"))], health=health("0" * 64))
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], health=health("1" * 64),
                               _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True and result["written"] == [] and result["health"]["recorded"] is True
    (diff,) = result["diff"]
    assert diff["before_header"] == path + " (recorded)" and "diff" not in result["health"]
    assert '"sha256": "%s"' % ("0" * 64) in diff["before"] and '"sha256": "%s"' % ("1" * 64) in diff["after"]


# -- Quadlet files (podman >= 4.4) ----------------------------------------------------------------
FAKE_QUADLET = r'''#!{python}
import os, sys
src = os.environ["QUADLET_UNIT_DIRS"]
assert sys.argv[1:] == ["-dryrun"], sys.argv
for name in sorted(os.listdir(src)):
    text = open(os.path.join(src, name)).read()
    if "BadKey" in text:
        sys.stderr.write("Error converting '%s', ignoring: unsupported key 'BadKey' in group 'Container'\n" % name)
        sys.exit(1)
    sys.stdout.write("---%s.service---\n%s\n[Service]\nExecStart=/usr/bin/podman run %s\n" % (
        name[:-len(".container")], text, name))
'''
QA = "launchcard-demo-sglang-decode-0.container"
QA_UNIT = "launchcard-demo-sglang-decode-0.service"


def container_text(exec_value):
    return "[Container]\nImage=x@sha256:%s\nExec=%s\n\n[Install]\nWantedBy=multi-user.target\n" % ("a" * 64, exec_value)


@pytest.fixture
def quadlet(systemd, host):
    qdir = str(host["tmp"] / "etc-containers-systemd")  # created by the module on its first write
    binary = os.path.join(host["bin"], "quadlet")
    with open(binary, "w") as f:
        f.write(FAKE_QUADLET.format(python=sys.executable))
    os.chmod(binary, 0o755)
    state = systemd.state()
    state["_quadlet"] = qdir
    systemd.save(state)
    return {"quadlet_directory": qdir, "quadlet_bin": binary}


def test_a_quadlet_file_is_checked_written_and_its_generated_unit_started_never_enabled(systemd, quadlet, capsys):
    result, dummy = run_module(capsys, systemd, [(QA, container_text("serve")), (B, unit_text("/bin/b"))], **quadlet)
    assert result["written"] == [QA, B]
    with open(os.path.join(quadlet["quadlet_directory"], QA)) as f:
        assert f.read() == container_text("serve")
    assert systemd.listing() == [B]  # the .container never lands among the .service files
    assert systemd.mutating() == [["daemon-reload"], ["enable", "--", B], ["reset-failed", "--", QA_UNIT, B],
                                  ["start", "--no-block", "--", QA_UNIT, B]]
    assert [(u["name"], u["unit_file_state"]) for u in result["units"]] == [(QA_UNIT, "generated"), (B, "enabled")]
    # what the generator made of the file went through systemd-analyze verify, before anything was written
    (analyze,) = [c for c in systemd.calls() if c["argv"][0] == "systemd-analyze"]
    assert any("ExecStart=/usr/bin/podman run %s" % QA in text for text in analyze["contents"])

    systemd.reset_log()
    result, dummy = run_module(capsys, systemd, [(QA, container_text("serve")), (B, unit_text("/bin/b"))], **quadlet)
    assert result["changed"] is False and systemd.mutating() == []

    # a changed file restarts its unit; the restart list takes the unit's name
    result, dummy = run_module(capsys, systemd, [(QA, container_text("serve --x")), (B, unit_text("/bin/b"))],
                               restart=[QA_UNIT], **quadlet)
    assert result["actions"]["restart"] == [QA_UNIT] and result["daemon_reloaded"] is True


def test_the_generators_refusal_changes_nothing(systemd, quadlet, capsys):
    result, dummy = run_module(capsys, systemd, [(QA, container_text("serve") + "BadKey=1\n")], rc=1, **quadlet)
    assert "the Quadlet generator rejected %s; nothing was changed" % QA in result["msg"]
    assert "unsupported key 'BadKey'" in result["msg"]
    assert not os.path.exists(quadlet["quadlet_directory"]) and systemd.mutating() == []


def test_a_host_without_the_generator_is_refused_before_writing(systemd, quadlet, capsys):
    quadlet = dict(quadlet, quadlet_bin=quadlet["quadlet_bin"] + "-absent")
    result, dummy = run_module(capsys, systemd, [(QA, container_text("serve"))], rc=1, **quadlet)
    assert "no Quadlet generator" in result["msg"] and "podman 4.4 or newer" in result["msg"]
    assert systemd.mutating() == []


def test_a_unit_moving_to_quadlet_is_rewritten_once_and_undeploy_prunes_both_kinds(systemd, quadlet, capsys):
    systemd.put(QA_UNIT, unit_text("/usr/bin/podman run x"))
    systemd.running(QA_UNIT)
    result, dummy = run_module(capsys, systemd, [(QA, container_text("serve"))], **quadlet)
    assert (result["written"], result["removed"]) == ([QA], [QA_UNIT])
    # the same unit: not stopped as stale, restarted once on its new file; disabled (its old symlink) never
    assert result["actions"] == {"enable": [], "disable": [], "start": [], "restart": [QA_UNIT], "stop": []}
    assert systemd.listing() == []
    # undeploy: units [] with the card's prefix stops the generated unit and removes its file
    result, dummy = run_module(capsys, systemd, [], state="stopped", prefix="launchcard-demo-", **quadlet)
    assert result["removed"] == [QA] and result["actions"]["stop"] == [QA_UNIT]
    assert result["actions"]["disable"] == [] and os.listdir(quadlet["quadlet_directory"]) == []
