# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The unit options' spec (_unit_spec.OPTIONS): one entry per option, its one check, the docs made from it, and
its fields that describe the rest of the tree (the roles that read a variable, the units an option changes)."""

from __future__ import annotations

import glob
import importlib.util
import os
import re

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_spec as spec
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units, options_with_defaults
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import EX, _inst, _plan

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
WITH_VARIABLE = [o for o in spec.OPTIONS if o.variable]


def _unit_docs():
    loader = importlib.util.spec_from_file_location("unit_docs", os.path.join(ROOT, "tools", "unit_docs.py"))
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


def test_one_entry_per_option_one_prefixed_variable_each():
    keys = [o.key for o in spec.OPTIONS]
    names = [o.variable for o in WITH_VARIABLE]
    assert len(keys) == len(set(keys)) and len(names) == len(set(names))
    assert all(n.startswith("launchcard_") for n in names)
    assert spec.DEFAULTS == {o.key: o.default for o in spec.OPTIONS}
    for opt in spec.OPTIONS:
        assert opt.doc.strip() and set(opt.units) <= set(spec.RUNTIMES) and opt.units, opt.key
        assert opt.where in ("all", "host/group"), opt.key


@pytest.mark.parametrize("opt", [o for o in spec.OPTIONS if o.default is not None], ids=lambda o: o.key)
def test_every_default_passes_its_own_check(opt):
    assert spec.value(opt.key, opt.default) == opt.default


# values of the wrong type for one kind or another: each option's check refuses one of them, whatever its kind
WRONG = ({"a": 1}, "x", ["x"], "maybe", -1)


def _wrong(opt):
    """The first of :data:`WRONG` that ``opt``'s check refuses."""
    for raw in WRONG:
        try:
            spec.value(opt.key, raw)
        except spec.OptionError:
            return raw
    raise AssertionError("%s takes every value of WRONG: a check that refuses nothing" % opt.key)


@pytest.mark.parametrize("opt", WITH_VARIABLE, ids=lambda o: o.variable)
def test_a_wrong_value_fails_in_both_entry_points_naming_the_variable(opt):
    # host_options (the inventory's values) and options_with_defaults (the renderer's) share the one check
    with pytest.raises(spec.OptionError, match="^%s" % re.escape(opt.variable)):
        uo.host_options({opt.variable: _wrong(opt)})
    with pytest.raises(ValueError, match="^%s" % re.escape(opt.variable)):
        options_with_defaults({opt.key: _wrong(opt)})


@pytest.mark.parametrize("key,raw,message", [
    ("runtime", "lxc", "launchcard_runtime must be one of docker, podman, native, found 'lxc'$"),
    # a slip of one of the choices: named
    ("runtime", "podmn", "launchcard_runtime must be one of docker, podman, native, found 'podmn'; did you mean 'podman'[?]$"),
    ("podman_cgroups", "off", "launchcard_podman_cgroups must be one of enabled, disabled, no-conmon, split"),
    ("start_timeout_s", -1, "launchcard_unit_start_timeout_s must be 0 or more, found -1"),
    ("ascend_devices", [0, -2], r"launchcard_ascend_devices\[1\] must be 0 or more"),
    ("amd_render_gid", "-5", "launchcard_amd_render_gid must be 0 or more"),
])
def test_choices_and_minimums(key, raw, message):
    with pytest.raises(spec.OptionError, match=message):
        spec.value(key, raw)


def test_the_generated_docs_are_current():
    """`make docs` (tools/unit_docs.py) wrote every option list as the spec makes it now."""
    docs = _unit_docs()
    assert docs.stale() == {}
    assert docs.main(["--check"]) == 0


def test_the_docs_check_fails_on_a_stale_list():
    docs = _unit_docs()
    # a spec with one more option makes every marked file differ, and names each
    extra = spec.OPTIONS[0]._replace(key="pids_limit", variable="launchcard_container_pids_limit", kind="int",
                                     default=None, doc="Most processes of a container.", choices=None)

    class Bigger:
        OPTIONS = spec.OPTIONS + (extra,)
        ALL_UNITS = spec.ALL_UNITS

    changed = docs.stale(Bigger)
    assert set(changed) == set(docs.TARGETS)
    assert all("launchcard_container_pids_limit" in text or "C(pids_limit)" in text for text in changed.values())


def test_every_variable_is_in_every_list_of_the_docs():
    for path, blocks in _unit_docs().TARGETS.items():
        with open(os.path.join(ROOT, path)) as f:
            text = f.read()
        for opt in spec.OPTIONS if "unit_keys" in blocks else WITH_VARIABLE:
            name = opt.key if "unit_keys" in blocks else opt.variable
            assert ("`%s`" if path.endswith(".md") else "C(%s)") % name in text, (path, name)


def _role_reads():
    """Role -> the spec variables its defaults, tasks and vars name (the units and render roles read them all)."""
    out = {}
    for role_dir in sorted(glob.glob(os.path.join(ROOT, "roles", "*"))):
        role = os.path.basename(role_dir)
        text = ""
        for path in glob.glob(os.path.join(role_dir, "defaults", "*.yml")) + \
                glob.glob(os.path.join(role_dir, "tasks", "*.yml")) + glob.glob(os.path.join(role_dir, "vars", "*.yml")):
            with open(path) as f:
                text += f.read()
        out[role] = {o.variable for o in WITH_VARIABLE if re.search(r"\b%s\b" % o.variable, text)}
    return out


def test_the_roles_field_names_the_roles_that_read_each_variable():
    reads = _role_reads()
    for role, names in reads.items():
        if role in spec.OPTION_ROLES:
            continue
        assert names == {o.variable for o in WITH_VARIABLE if role in o.roles}, role


def test_a_role_that_defaults_a_variable_itself_uses_the_spec_default():
    # preflight, runtime and weights read a few variables with their own `| default(...)`: the value must be the spec's
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")):
        with open(path) as f:
            text = f.read()
        for opt in WITH_VARIABLE:
            for found in re.findall(r"\b%s \| default\(([^)]*)\)" % opt.variable, text):
                if found in ("none", "''"):
                    continue  # "not set": the role asks the spec's default elsewhere (the unit_settings filter)
                assert found.strip("'\"") == str(opt.default), (path, opt.variable, found)


def _sample(opt, base=None):
    """A value of ``opt`` other than its default (and than ``base``'s): the spec's example, else one of its kind."""
    if opt.example is not None:
        return opt.example
    if opt.choices:
        return [c for c in opt.choices if c not in (opt.default, (base or {}).get(opt.key))][0]
    if opt.kind == "bool":
        return not opt.default if opt.default is not None else True
    if opt.kind in ("int", "int_or_none"):
        return (opt.default or 0) + 7
    if opt.kind == "dict":
        return {i["image"]: "registry.example/pinned@sha256:" + "c" * 64 for i in _fleet()}
    return {"path": "/srv/other", "list_str": ["--label", "x=1"], "list_int_or_none": [3, 5]}.get(opt.kind)


@pytest.mark.parametrize("opt", spec.OPTIONS, ids=lambda o: o.key)
def test_every_option_has_a_value_to_render_that_its_check_takes(opt):
    # the tests below render it; a kind without a value of its own here needs the entry's example
    raw = _sample(opt)
    assert raw is not None, "%s: give its OPTIONS entry an example" % opt.key
    assert spec.value(opt.key, raw) == raw and raw != opt.default, opt.key


def _fleet():
    """Instances of every kind: SGLang's PD pair and router, and vLLM."""
    p = _plan(EX, [("c", "10.0.0.3", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    return [i for hp in p["hosts"].values() for i in hp["instances"]] + [_inst(EX, "vllm-aggregated")]


def _fleet_units(opts):
    return [u["content"] for u in host_units({"instances": _fleet()}, opts)]


@pytest.mark.parametrize("opt", [o for o in spec.OPTIONS if set(o.units) != set(spec.ALL_UNITS)], ids=lambda o: o.key)
def test_an_option_changes_no_unit_of_a_runtime_its_units_field_leaves_out(opt):
    for runtime in sorted(set(spec.RUNTIMES) - set(opt.units)):
        for vendor in spec.VENDORS:
            base = {"runtime": runtime, "vendor": vendor, "rdma_devices": True}
            assert _fleet_units(base) == _fleet_units(dict(base, **{opt.key: _sample(opt, base)})), (runtime, vendor)


# options that change a unit only beside another: the secrets file reaches only engines that may download
ONLY_WITH = {"secrets_env_file": {"hf_offline": False}}


@pytest.mark.parametrize("opt", spec.OPTIONS, ids=lambda o: o.key)
def test_every_option_renders_and_changes_a_unit_of_its_runtimes(opt):
    # a value breaks no rule of the renderer (a flag conflict, a Quadlet key) and reaches the units its field names
    changed = set()
    for runtime in opt.units:
        for quadlet in ((False, True) if runtime == "podman" else (False,)):
            for vendor in spec.VENDORS:
                base = dict(ONLY_WITH.get(opt.key, {}), runtime=runtime, podman_quadlet=quadlet, vendor=vendor)
                if _fleet_units(base) != _fleet_units(dict(base, **{opt.key: _sample(opt, base)})):
                    changed.add(runtime)
    assert changed == set(opt.units)
