# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Native installs from hash-pinned locks, one index each (#42, supply chain).

Before: the native runtime pinned only the top package (``vllm==0.23.0``), so every dependency came unpinned
from whatever index answered, and AMD added vLLM's ROCm index with ``--extra-index-url`` (pip then takes a name
from either index: a dependency-confusion path).
"""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate
from ansible_collections.launchcard.inference.plugins.plugin_utils import _native_locks as locks
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils import _vendors as vendors

H1, H2 = "a" * 64, "b" * 64
GOOD = ("# index-url: https://pypi.org/simple\n"
        "vllm==0.23.0 \\\n    --hash=sha256:%s \\\n    --hash=sha256:%s\n"
        "torch==2.11.0 --hash=sha256:%s  # via vllm\n" % (H1, H2, H1))
VLLM = {"instances": [{"engine": "vllm", "role": "aggregated", "recipe": "vllm-aggregated"}]}
ROUTER = {"instances": [{"engine": "sglang", "role": "router", "recipe": "sglang-router"}]}
SGLANG_ROUTER = {"instances": [{"engine": "sglang", "role": "prefill", "recipe": "p"},
                               {"engine": "sglang", "role": "router", "recipe": "sglang-router"}]}


def test_a_lock_is_pins_with_hashes_and_one_source():
    lock = locks.parse(GOOD, "x.txt")
    assert lock["pins"] == ["vllm==0.23.0", "torch==2.11.0"] and lock["source"] == {"index-url": "https://pypi.org/simple"}
    assert locks.pip_args(lock) == "--require-hashes --index-url https://pypi.org/simple"
    wheelhouse = locks.parse(GOOD.replace("# index-url: https://pypi.org/simple", "# find-links: /srv/wheels"), "w")
    assert locks.pip_args(wheelhouse) == "--require-hashes --no-index --find-links /srv/wheels"
    # a site's mirror stands in for the lock's index: still one index, still the hashes
    assert locks.pip_args(lock, "https://mirror.example/simple") == "--require-hashes --index-url https://mirror.example/simple"


@pytest.mark.parametrize("text, said", [
    # a second index, in any of pip's spellings: the dependency-confusion path
    (GOOD + "--extra-index-url https://evil.example/simple\n", "line 6: --extra-index-url"),
    (GOOD + "-i https://evil.example/simple\n", "line 6: -i"),
    (GOOD + "--index-url https://evil.example/simple\n", "line 6: --index-url"),
    (GOOD + "--find-links /tmp/wheels\n", "line 6: --find-links"),
    (GOOD + "-r other.txt\n", "line 6: -r"),
    (GOOD + "--trusted-host evil.example\n", "line 6: --trusted-host"),
    (GOOD + "# index-url: https://evil.example/simple\n", "exactly one source"),
    (GOOD + "# find-links: /tmp\n", "exactly one source"),
    (GOOD.replace("# index-url: https://pypi.org/simple\n", ""), "exactly one source, a '# index-url: URL' or a "
                                                                 "'# find-links: DIR' line; found none"),
    # what hash-checking mode needs: == pins, each with a well-formed hash
    (GOOD + "numpy>=2.0 --hash=sha256:%s\n" % H1, "'numpy>=2.0' is not pinned with =="),
    (GOOD + "numpy\n", "'numpy' is not pinned with =="),
    (GOOD + "numpy==2.3.5\n", "numpy==2.3.5 has no hash"),
    (GOOD + "numpy==2.3.5 --hash=sha256:abc\n", "a malformed hash --hash=sha256:abc"),
    (GOOD + "numpy==2.3.5 --hash=md5:%s\n" % ("a" * 32), "a malformed hash"),
    (GOOD + "https://evil.example/numpy.whl --hash=sha256:%s\n" % H1, "is not pinned with =="),
    (GOOD + "Torch==2.12.0 --hash=sha256:%s\n" % H2, "Torch is pinned twice"),
    ("# index-url: https://pypi.org/simple\n", "no pinned requirement"),
])
def test_a_lock_that_could_mix_indexes_or_leave_a_file_unhashed_is_refused(text, said):
    with pytest.raises(locks.LockError) as exc:
        locks.parse(text, "my-lock.txt")
    assert str(exc.value).startswith("my-lock.txt") and said in str(exc.value), str(exc.value)


def test_a_lock_pins_the_extras_a_set_asks_for_beside_the_plain_pin():
    """pip 23.0.1 (a Debian 12 virtualenv's) in hash-checking mode refuses ``uvicorn[standard]>=0.15.0`` of a
    dependency unless the lock pins uvicorn with that extra, and ``uvicorn>=0.31.1`` unless it pins it plain."""
    requires = {"vllm": ["fastapi[standard]>=0.115", "mcp"], "fastapi": ["uvicorn[standard]>=0.12; extra == 'standard'",
                                                                         "httpx[http2]; extra == 'all'"],
                "mcp": ["uvicorn>=0.31.1", "pyjwt[crypto]; python_version < '3'"], "uvicorn": [], "httpx": [],
                "pyjwt": []}
    extras = locks.demanded_extras(requires, {"vllm": []}, {"python_version": "3.11"})
    assert extras == {"vllm": [], "fastapi": ["standard"], "mcp": [], "uvicorn": ["standard"], "httpx": [], "pyjwt": []}
    text = "# index-url: https://pypi.org/simple\n" + locks.pin_line("uvicorn", "0.54.0", ["standard"], [H1, H2]) + "\n"
    assert text.splitlines()[1:] == ["uvicorn==0.54.0 \\", "    --hash=sha256:%s \\" % H1, "    --hash=sha256:%s" % H2,
                                     "uvicorn[standard]==0.54.0 \\", "    --hash=sha256:%s \\" % H1,
                                     "    --hash=sha256:%s" % H2]
    assert locks.parse(text, "x")["pins"] == ["uvicorn==0.54.0"]


def test_a_mirror_is_one_index_url():
    lock = locks.parse(GOOD, "x")
    for bad in ("https://a.example/simple https://b.example/simple", "--extra-index-url https://b", "ftp://x", 3):
        with pytest.raises(locks.LockError, match="launchcard_runtime_native_index_url must be one index URL"):
            locks.pip_args(lock, bad)


def test_the_lock_names_say_vendor_engine_and_version():
    assert locks.lock_name("nvidia", ["vllm"]) == "nvidia-vllm-0.23.0.txt"
    assert locks.lock_name("nvidia", ["vllm", "vllm"], router=True) == "nvidia-vllm-0.23.0+sglang-router-0.3.2.txt"
    assert locks.lock_name("amd", [], router=True) == "sglang-router-0.3.2.txt"


def test_every_shipped_lock_parses_from_its_engines_own_index_and_is_named_for_what_it_resolves():
    names = sorted(os.listdir(locks.LOCK_DIR))
    assert "nvidia-vllm-0.23.0.txt" in names and "sglang-router-0.3.2.txt" in names, names
    known = {locks.lock_name(v, e, r): (v, e, r) for v in vendors.VENDORS for e in ([], ["vllm"], ["sglang"])
             for r in (False, True) if e or r}
    for name in names:
        assert name in known, name
        lock = locks.load(os.path.join(locks.LOCK_DIR, name))
        vendor, engines, router = known[name]
        req = vendors.native_requirements(vendor, engines, router)
        assert lock["source"] == {"index-url": req["index_url"]}, name
        # the lock holds what the engines' own packages pin, and their dependencies, each with a hash
        assert set(req["packages"]) <= set(lock["pins"]), (name, req["packages"])
        assert all(re.search(r"--hash=sha256:[0-9a-f]{64}", ln) for ln in lock["text"].splitlines()
                   if ln.strip().startswith("--hash=")), name


def test_the_native_runtime_installs_from_the_lock_with_hashes_and_no_second_index():
    install = uo.native_install({}, VLLM)
    assert install["lock"]["name"] == "nvidia-vllm-0.23.0.txt"
    assert install["pip_args"] == "--require-hashes --index-url https://pypi.org/simple"
    assert "vllm==0.23.0" in install["packages"] and any(p.startswith("torch==") for p in install["packages"])
    assert install["lock"]["text"] == open(os.path.join(locks.LOCK_DIR, "nvidia-vllm-0.23.0.txt")).read()
    # the site's mirror, and nothing of launchcard_runtime_native_pip_extra_args (it is for an own package list)
    mirrored = uo.native_install({"launchcard_runtime_native_index_url": "https://mirror.example/simple",
                                  "launchcard_runtime_native_pip_extra_args": "--extra-index-url https://evil"}, VLLM)
    assert mirrored["pip_args"] == "--require-hashes --index-url https://mirror.example/simple"
    # a host without accelerators installs the PyPI builds, as pip gives them
    assert uo.native_install({"launchcard_accelerator_vendor": "none"}, VLLM)["lock"]["name"] == "nvidia-vllm-0.23.0.txt"
    assert uo.native_install({}, ROUTER)["lock"]["name"] == "sglang-router-0.3.2.txt"


@pytest.mark.parametrize("host_vars, plan, said", [
    # AMD: vLLM's ROCm index is not reachable here, no lock ships: refused, never the unpinned --extra-index-url install
    ({"launchcard_accelerator_vendor": "amd"}, VLLM,
     "no hash-pinned lock of vllm 0.23.0 for amd accelerators ships with this collection "
     "(amd-vllm-0.23.0.txt in roles/runtime/files/native-locks): make one with tools/native_lock.py against your "
     "index and set launchcard_runtime_native_lock to its path, set launchcard_runtime_native_packages"),
    ({"launchcard_accelerator_vendor": "ascend"}, VLLM, "no hash-pinned lock of vllm 0.23.0 for ascend"),
    ({"launchcard_accelerator_vendor": "amd"}, SGLANG_ROUTER,
     "no pip install of sglang is published for amd accelerators (upstream builds it from source or ships images): "
     "set launchcard_runtime_native_lock"),
    ({"launchcard_runtime_native_lock": "locks/mine.txt"}, VLLM,
     "launchcard_runtime_native_lock must be an absolute path on the controller, found 'locks/mine.txt'"),
    ({"launchcard_runtime_native_lock": "/nonexistent/lock.txt"}, VLLM,
     "launchcard_runtime_native_lock (/nonexistent/lock.txt): cannot read the lock /nonexistent/lock.txt"),
])
def test_a_host_with_no_lock_is_refused_naming_the_variables(host_vars, plan, said):
    with pytest.raises(uo.OptionError) as exc:
        uo.native_install(dict(host_vars, inventory_hostname="gpu-0"), plan)
    assert said in str(exc.value), str(exc.value)


def test_an_own_lock_installs_from_its_own_source_and_its_text_enters_the_units_digest(tmp_path):
    path = tmp_path / "rocm.txt"
    path.write_text(GOOD.replace("https://pypi.org/simple", "https://mirror.example/rocm-and-pypi"))
    hv = {"launchcard_accelerator_vendor": "amd", "launchcard_runtime_native_lock": str(path)}
    install = uo.native_install(hv, VLLM)
    assert install["pip_args"] == "--require-hashes --index-url https://mirror.example/rocm-and-pypi"
    assert install["lock"]["name"] == str(path) and install["packages"] == ["vllm==0.23.0", "torch==2.11.0"]
    first = uo.native_requirements(hv, VLLM)
    path.write_text(path.read_text().replace(H2, "c" * 64))  # the same pins, another file
    assert uo.native_requirements(hv, VLLM) != first
    path.write_text(GOOD + "--extra-index-url https://evil.example/simple\n")
    with pytest.raises(uo.OptionError, match=r"line 6: --extra-index-url"):
        uo.native_install(hv, VLLM)


def test_an_own_package_list_stays_as_given():
    assert uo.native_install({"launchcard_runtime_native_packages": ["x==1"],
                              "launchcard_runtime_native_pip_extra_args": "--no-index"}, VLLM) == {
        "packages": ["x==1"], "pip_args": "--no-index", "lock": None}


def test_preflight_refuses_a_native_host_whose_vendor_has_no_lock():
    gaps = locks.native_gaps(SGLANG_ROUTER)
    assert gaps == {"amd": ["sglang", "sglang-router"], "ascend": ["sglang", "sglang-router"]}
    assert locks.native_gaps(VLLM) == {"amd": ["vllm"], "ascend": ["vllm"]} and locks.native_gaps({}) == {}

    def row(vendor, needs):
        facts = {"accelerators": {"vendor": vendor, "devices": [{"index": i} for i in range(8)]}}
        return [r for r in evaluate(facts, dict(needs, gpus=4), {"runtime": "native", "checks": {}})
                if r["check"] == "native_install"]
    (bad,) = row("amd", {"native_gaps": locks.native_gaps(VLLM)})
    assert bad["severity"] == "error" and bad["found"] == "none for vllm"
    assert bad["message"] == ("the collection ships no lock of vllm for amd accelerators: make one with "
                              "tools/native_lock.py against your index and set launchcard_runtime_native_lock to it, "
                              "set launchcard_runtime_native_packages, or run it in a container")
    assert row("nvidia", {"native_gaps": locks.native_gaps(VLLM)})[0]["ok"]
    assert row("amd", {"native_gaps": {}}) == []
