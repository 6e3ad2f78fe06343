# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A hostile peer (issue #42): the source of a peer copy logs in to the receiving host as root with the copy's key,
whose forced command (plugins/plugin_utils/_weights.py, peer_receive) runs only an rsync daemon chrooted to the
repository's folder. Here the real rsync plays both sides on this machine: a remote shell that does what sshd does
with a forced command (runs it in place of the asked one, sshd(8) command=) stands in for ssh.
tests/e2e/test_upgrade_containers_sandbox.py runs the same against real sshd on the sandbox hosts.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _weights as weights

REPO = "org/Tiny-1"
CONF = "/run/launchcard-weights-receive.conf"


def test_the_key_runs_only_the_daemon_chrooted_to_the_repository_folder_with_the_copys_options():
    got = weights.peer_receive("/var/lib/launchcard/models", REPO, CONF, "198.18.11.12")
    assert got["repo_dir"] == "/var/lib/launchcard/models/hub/models--org--Tiny-1"
    assert got["key_options"] == 'command="rsync --server --daemon --config=%s .",restrict' % CONF
    assert got["dest"] == "rsync://198.18.11.12/launchcard-weights/"
    lines = got["config"].splitlines()
    assert lines[:2] == ["[launchcard-weights]", "path = /var/lib/launchcard/models/hub/models--org--Tiny-1"]
    for line in ("use chroot = yes", "write only = yes", "uid = root", "incoming chmod = ug-s,go-w",
                 "refuse options = * !recursive !links !perms !times !partial !delay-updates !bwlimit"):
        assert line in lines
    assert weights.peer_receive("/w", REPO, CONF, "fd00::12")["dest"] == "rsync://[fd00::12]/launchcard-weights/"


@pytest.mark.parametrize("hf_home", ["/w x", '/w"', "/w\\", "/w;id", "/w/../etc", "relative", "/w\n"])
def test_a_weights_dir_the_shell_or_sshd_would_read_is_refused_naming_the_variable(hf_home):
    with pytest.raises(ValueError, match="launchcard_weights_dir"):
        weights.peer_receive(hf_home, REPO, CONF, "h")
    with pytest.raises(ValueError, match="weights_peer_receive_conf"):
        weights.peer_receive("/w", REPO, hf_home, "h")


RSYNC = shutil.which("rsync")
# make host-deps installs rsync and CI runs as root: a machine without either fails here rather than skipping
needs_rsync = pytest.mark.usefixtures("rsync_as_root")


@pytest.fixture
def rsync_as_root():
    assert RSYNC, "rsync is not installed (make host-deps installs it)"
    assert os.geteuid() == 0, "the rsync daemon chroots: run as root"


@pytest.fixture
def receiver(tmp_path):
    """The receiving host: its cache, the daemon's settings, and an ssh stand-in that runs the key's forced command."""
    hf_home = tmp_path / "models"
    got = weights.peer_receive(str(hf_home), REPO, str(tmp_path / "receive.conf"), "h")
    os.makedirs(got["repo_dir"])
    (tmp_path / "receive.conf").write_text(got["config"])
    forced = re.fullmatch(r'command="([^"\\]*)",restrict', got["key_options"]).group(1)
    rsh = tmp_path / "ssh"
    rsh.write_text('#!/bin/sh\nSSH_ORIGINAL_COMMAND="$*"\nexport SSH_ORIGINAL_COMMAND\nexec /bin/sh -c %s\n'
                   % ("'%s'" % forced))
    rsh.chmod(0o755)
    outside = tmp_path / "outside"
    outside.mkdir()
    return {"dir": got["repo_dir"], "dest": got["dest"], "rsh": str(rsh), "outside": outside, "tmp": tmp_path}


def _push(receiver, src, *options, dest=None):
    return subprocess.run([RSYNC, "--rsh=" + receiver["rsh"], *options, src, dest or receiver["dest"]],
                          capture_output=True, text=True, check=False)


def _source(tmp_path):
    """A repository folder as the Hub's client leaves it: a blob, and the snapshot's link to it."""
    src = tmp_path / "seed"
    (src / "blobs").mkdir(parents=True)
    (src / "snapshots" / "r1").mkdir(parents=True)
    (src / "blobs" / "abc").write_bytes(b"weights")
    os.symlink("../../blobs/abc", src / "snapshots" / "r1" / "model.safetensors")
    return src


@needs_rsync
def test_the_roles_copy_arrives_links_kept_and_owned_by_root_without_set_id_or_world_write(receiver):
    src = _source(receiver["tmp"])
    os.chmod(src / "blobs" / "abc", 0o4777)
    os.chown(src / "blobs" / "abc", 1234, 1234)
    # what the weights role's synchronize runs (roles/weights/tasks/wave.yml; its delay_updates default adds -F)
    res = _push(receiver, str(src) + "/", "--delay-updates", "-F", "--recursive", "--links", "--perms", "--times",
                "--partial", "--bwlimit=1000", "--exclude=.launchcard-complete-*", "--exclude=*.incomplete")
    assert res.returncode == 0, res.stderr
    blob = os.path.join(receiver["dir"], "blobs", "abc")
    with open(os.path.join(receiver["dir"], "snapshots", "r1", "model.safetensors"), "rb") as f:
        assert f.read() == b"weights"
    st = os.lstat(blob)
    assert (st.st_uid, st.st_gid) == (0, 0) and stat.S_IMODE(st.st_mode) == 0o755, oct(st.st_mode)


@needs_rsync
@pytest.mark.parametrize("option", ["--delete", "--owner", "--group", "--devices", "--specials", "--xattrs", "--acls",
                                    "--keep-dirlinks", "--inplace", "--remove-source-files", "--archive"])
def test_an_option_beyond_the_copys_is_refused_and_nothing_is_written(receiver, option):
    src = _source(receiver["tmp"])
    res = _push(receiver, str(src) + "/", "--recursive", "--links", option)
    assert res.returncode != 0
    assert os.listdir(receiver["dir"]) == []


@needs_rsync
def test_a_path_out_of_the_module_writes_nothing_outside(receiver):
    src = _source(receiver["tmp"])
    rel = os.path.relpath(str(receiver["outside"]), receiver["dir"])
    for dest in (receiver["dest"] + rel + "/", receiver["dest"] + "../../../../../..%s/" % receiver["outside"],
                 "rsync://h/other/"):
        _push(receiver, str(src) + "/", "--recursive", "--links", dest=dest)
    assert os.listdir(receiver["outside"]) == []


@needs_rsync
def test_a_link_out_then_a_copy_through_it_writes_nothing_outside(receiver):
    tmp = receiver["tmp"]
    (tmp / "one").mkdir()
    os.symlink(str(receiver["outside"]), tmp / "one" / "esc")
    assert _push(receiver, str(tmp / "one") + "/", "--recursive", "--links").returncode == 0
    (tmp / "two" / "esc").mkdir(parents=True)
    (tmp / "two" / "esc" / "pwned").write_text("x")
    _push(receiver, str(tmp / "two") + "/", "--recursive", "--links")
    _push(receiver, str(tmp / "two" / "esc" / "pwned"), dest=receiver["dest"] + "esc/")
    assert os.listdir(receiver["outside"]) == []


@needs_rsync
def test_a_command_the_source_asks_for_is_not_run(receiver):
    target = receiver["outside"] / "pwned"
    subprocess.run([receiver["rsh"], "h", "touch", str(target)], stdin=subprocess.DEVNULL, capture_output=True,
                   check=False, timeout=60)
    assert not target.exists()
